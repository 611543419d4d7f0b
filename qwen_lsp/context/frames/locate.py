"""The generic location finder: the last recogniser, for output formats nobody wrote one for.

It proposes every path-like token with a line number nearby, in the shapes tools
print (the location grammar below: `f.ext:4:`, `at FILE line N.`, `File "x.ml", line N`,
`path(line, col)`, `A.java:[7,17]`, `main.js (3:9)`, `f.js: message (4:3)`, `main.scss 5:12`,
`file=a.c,line=4`, `(in test file t.bats, line 5)`, a file header over `2:10` or `L: 7 | P: 21 |`
rows, ...), and keeps a candidate only if `lookup` says its path is a real workspace file that has
that line: the file system is the arbiter, so nothing points at a file that does not exist.

Ranking: the stack of a thread that received a signal first; then the first candidate whose own
line (or the line next to it) the severity vocabulary calls an error; then the first candidate of
the last block with an error word in or just above it. The others are context.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .model import Raw, Trace, plausible_path
from .severity import has_error_word, line_severity

# (absolute path, number of lines) of a workspace file, or None.
Lookup = Callable[[str], "tuple[str, int] | None"]

_P = r"[\w.@~+/\\-]*[\w@~+-]\.[A-Za-z][\w+-]*|[\w.@~+/\\-]*/[\w.@~+-]+"  # has an extension or a directory
# A path starts where a run of path characters starts: trying every later start inside a long token costs
# quadratic time on lines full of them (JSON logs), and finds nothing the run's start does not.
_B = r"(?<![\w.@~+/\\-])"
# Each shape names its groups p<k> (or the shared pp), l<k> and optionally c<k>. At one position the first shape that matches wins.
_SHAPE_LIST = (
    r'File "(?P<p1>[^"]+)", line (?P<l1>\d+)',  # OCaml, Python-like
    r'in file "(?P<p2>[^"]+)"(?: \(inlined\))?, line (?P<l2>\d+)',  # OCaml "Called from ... in file"
    rf"\bat (?P<p3>{_P}) line (?P<l3>\d+)",  # Perl
    rf"\bAt line (?P<l4>\d+) of file (?P<p4>{_P})",  # gfortran
    rf"\(from (?P<p5>{_P})#(?P<l5>\d+)\)",  # R
    r'\{file,"(?P<p6>[^"]+)"\},\{line,(?P<l6>\d+)\}',  # Erlang terms
    rf'\((?P<p7>{_P}), line (?P<l7>\d+)\)',  # escript "(calc.erl, line 5)"
    r'\(file "(?P<p8>[^"]+)" line (?P<l8>\d+)\)',  # Tcl
    # A path, then what follows it (the path is matched once per token, atomically: none of these suffixes
    # starts with a path character). Nim/Free Pascal/MSBuild/PHP "f.nim(4, 2)"; Maven's javac "A.java:[7,17]",
    # tslint "a.ts[2, 3]"; "path:(4,1)-(5,18)"; rollup "src/main.js (3:9)"; "path:line[:col]" anywhere on the
    # line; Sass "scss/main.scss 5:12  root stylesheet"; prose "(in test file t/a.bats, line 5)",
    # "b.js: line 3, col 10", "in site.less on line 4, column 11".
    rf"{_B}(?P<pp>(?>{_P}))(?:"
    r"\((?P<l9>\d+)(?:, ?(?P<c9>\d+))?\)"
    r"|:?\[(?P<l12>\d+), ?(?P<c12>\d+)\]"
    r"|:\((?P<l13>\d+),(?P<c13>\d+)\)(?:-\(\d+,\d+\))?"
    r"| \((?P<l14>\d+):(?P<c14>\d+)\)"
    r"|:(?P<l10>\d+)(?::(?P<c10>\d+))?"
    r"| (?P<l16>\d+):(?P<c16>\d+)(?:-\d+)?\b"
    r"|[,:]? (?:on |at )?line (?P<l17>\d+)(?:,? col(?:umn)? (?P<c17>\d+))?"
    r")",
    rf"\bline (?P<l11>\d+)(?:, column (?P<c11>\d+))? (?:of|in) (?:file )?(?P<p11>{_P})",
    # key=value fields: "::error file=a.c,line=4,col=5::", "filename='app.py' lineno=10", JSON '"filename": "x", "lineno": 5'
    r"""\b(?:file|filename|path|pathname|source)["']?\s*[=:]\s*["']?(?P<p18>[^\s"',;}]+)["']?[^\n]{0,160}?"""
    r"""\b(?:line|lineno|line_number)["']?\s*[=:]\s*(?P<l18>\d+)(?:,?\s*["']?col(?:umn)?["']?\s*[=:]\s*(?P<c18>\d+))?""",
)
_SHAPES = re.compile("|".join(_SHAPE_LIST))
# Babel, Prettier: "src/app.js: Unexpected token (3:12)", the position after the message. Found from the end
# of the line, then the first "path: " before it (one pass each, no backtracking over the message).
_AFTER_MESSAGE = re.compile(r"\((?P<l>\d+):(?P<c>\d+)\)\s*$")
_PATH_COLON = re.compile(rf"{_B}(?P<p>{_P}): ")
_KEYS = [int(k) for k in re.findall(r"\(\?P<l(\d+)>", "|".join(_SHAPE_LIST))]
_HINT = re.compile(r"line|:\d|\(\d|#\d|\[\d")  # every shape has one of these: lines without are skipped fast
# A file named alone on a line (stylelint, yamllint, htmlhint, sqlfluff "== [q.sql] FAIL"), then rows of positions.
_HEADER = re.compile(rf"^\s*(?:== )?\[?(?P<p>{_P})\]?:?(?: (?:FAIL(?:ED)?|PASS(?:ED)?|ERRORS?))?\s*$")
_ROW = re.compile(
    r"^\s*(?:(?:ERROR|WARNING|error|warning):?\s+)?"
    r"(?:L:\s*(?P<l1>\d+)\s*\|\s*P:\s*(?P<c1>\d+)\s*\||(?P<l2>\d+):(?P<c2>\d+)(?=\s)|L(?P<l3>\d+)\s*\|)"
)
# The thread that received the signal (gdb, faulthandler): its stack is the one to fix, wherever it is printed.
_SIGNALLED = re.compile(r"received signal|Current thread|caught signal|signal SIG[A-Z]+|Segmentation fault|Fatal Python error")
_MAX_LINES = 20_000  # the tail of a huge log: a failure block is near the end
Candidate = tuple[int, Raw]


def find_locations(lines: list[str], taken: set[int], lookup: Lookup) -> list[Trace]:
    checked: dict[str, tuple[str, int] | None] = {}

    def real(path: str, line: int) -> bool:
        if not plausible_path(path) or line < 1:
            return False
        if path not in checked:
            checked[path] = lookup(path)
        found = checked[path]
        return found is not None and line <= found[1]  # no such file in the workspace, or too short: not a location

    candidates: list[Candidate] = []
    header: str | None = None
    for i in range(max(0, len(lines) - _MAX_LINES), len(lines)):
        ln = lines[i]
        if i in taken or len(ln) > 2000:
            continue
        if header is not None:
            if r := _ROW.match(ln):
                line = int(r["l1"] or r["l2"] or r["l3"])
                col = r["c1"] or r["c2"]
                if real(header, line):
                    candidates.append((i, Raw(at=i, path=header, line=line, column=int(col) or None if col else None, message=ln.strip()[:300])))
                continue
            if ln[:1] not in ("", " ", "\t"):
                header = None
        if ln.strip().count(" ") <= 2 and (h := _HEADER.match(ln)) and real(h["p"], 1):
            header = h["p"]
            continue
        if not _HINT.search(ln):
            continue
        for m in _SHAPES.finditer(ln):
            k = next(n for n in _KEYS if m.group(f"l{n}") is not None)
            path, line = m["pp"] or m.group(f"p{k}"), int(m.group(f"l{k}"))
            col = m.groupdict().get(f"c{k}")
            if real(path, line):
                candidates.append((i, Raw(at=i, path=path, line=line, column=int(col) or None if col else None, message=ln.strip()[:300])))
        if ln.rstrip().endswith(")") and (a := _AFTER_MESSAGE.search(ln)):
            line = int(a["l"])
            p = next((p["p"] for p in _PATH_COLON.finditer(ln, 0, a.start()) if real(p["p"], line)), None)
            if p is not None and not any(at == i and raw.path == p for at, raw in candidates[-3:]):
                candidates.append((i, Raw(at=i, path=p, line=line, column=int(a["c"]) or None, message=ln.strip()[:300])))
    if not candidates:
        return []
    # Blocks: candidates no more than 3 lines apart.
    blocks: list[list[Candidate]] = []
    for cand in candidates:
        if blocks and cand[0] - blocks[-1][-1][0] <= 3:
            blocks[-1].append(cand)
        else:
            blocks.append([cand])
    chosen = _choose(lines, blocks)
    traces = []
    for block in blocks:
        for i, raw in block:
            raw.severity = "error" if raw is chosen else "warning" if line_severity(lines[i]) == "warning" else "info"
            taken.add(i)
            traces.append(Trace(start=i, frames=[raw], stack=False, guessed=True))
    return traces


def _choose(lines: list[str], blocks: list[list[Candidate]]) -> Raw:
    for block in blocks:  # a signalled thread's stack: its first frame is the innermost
        lo = max(0, block[0][0] - 4)
        if any(_SIGNALLED.search(lines[n]) for n in range(lo, block[-1][0] + 1)):
            return block[0][1]
    at = {i for block in blocks for i, _ in block}
    for block in blocks:  # the first failure: a candidate its own line, or a location-free line next to it, calls an error
        for i, raw in block:
            own = line_severity(lines[i])
            if own == "error" or own is None and any(
                0 <= n < len(lines) and n not in at and line_severity(lines[n]) == "error" for n in (i - 1, i + 1)
            ):
                return raw

    def failing(block: list[Candidate]) -> bool:  # an error word in the block or just above it
        lo = max(0, block[0][0] - 2)
        return any(has_error_word(lines[n]) for n in range(lo, block[-1][0] + 1))

    return next((b for b in reversed(blocks) if failing(b)), blocks[-1])[0][1]
