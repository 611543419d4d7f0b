"""The general locator: run after the recognisers, for what they are silent or unsure about.

It proposes every mention of a file with a line number beside or near it, in the shapes tools print
(the location grammar below: `f.ext:4:`, `at FILE line N.`, `File "x.ml", line N`, `path(line, col)`,
`A.java:[7,17]`, `main.js (3:9)`, `f.js: message (4:3)`, `main.scss 5:12`, `file=a.c,line=4`,
`run.ksh[5]:`, `init.fish (line 3):`, `calc.bc 4:`, `line 6 of "gram.y"`; the file first and `in/at/on
line N` later on the line; a file alone over `2:10`, `L: 7 | P: 21 |` or `ERROR: 0:5:` rows; an
extension-less script at a shell line's start; as the last resort a file the command names), and keeps a
candidate only if `lookup` says its path is a real workspace file that has that line: the file system is
the arbiter, so nothing points at a file that does not exist.

Ranking: the stack of a thread that received a signal; a call marked `<--`; then the first candidate
whose own line (or the line next to it) the severity vocabulary calls an error; then the last block with
an error word in or just above it. Callers (`called on line N of file f`) are context. Inside a stack
the trace's own order decides (`_innermost`). An error header naming a file (`TypeError: views/a.ejs:4`)
is as sure as a recogniser's frame. See docs/terminal-output.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .model import Raw, Trace, plausible_path
from .severity import has_error_word, line_severity

# (absolute path, number of lines) of a workspace file, or None.
Lookup = Callable[[str], "tuple[str, int] | None"]
# The text of a line of a printed path (for the failing construct a message names), or None.
SourceLine = Callable[[str, int], "str | None"]

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
    # ksh "./run.ksh[5]: x: not found"; fish "conf/init.fish (line 3):"; bc "calc.bc 4: syntax error";
    # tabnanny "pkg/legacy.py 4 '\ty = 2\n'"
    r"|\[(?P<l19>\d+)\](?=:)"
    r"| \(line (?P<l20>\d+)\)"
    r"| (?P<l21>\d+)(?=: | ')"
    r")",
    rf"\bline (?P<l11>\d+)(?:, column (?P<c11>\d+))? (?:of|in) (?:file )?[\"']?(?P<p11>{_P})",  # byacc 'line 6 of "gram.y"'
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
_HINT = re.compile(r"line|:\d|\(\d|#\d|\[\d")  # every shape has one of these (or the ones _hinted adds): others are skipped fast
_HINT_NUMBER = re.compile(r"\d: |\d '")  # "calc.bc 4: ...", "legacy.py 4 '...'": a digit first is slow to search, so gated


def _hinted(ln: str) -> bool:
    return _HINT.search(ln) is not None or "Line" in ln or ((": " in ln or " '" in ln) and _HINT_NUMBER.search(ln) is not None)
# A file named alone on a line (stylelint, yamllint, htmlhint, sqlfluff "== [q.sql] FAIL"), then rows of positions.
_HEADER = re.compile(rf"^\s*(?:== )?\[?(?P<p>{_P})\]?:?(?: (?:FAIL(?:ED)?|PASS(?:ED)?|ERRORS?))?\s*$")
# glslang "ERROR: 0:5: ..." (string 0, line 5), csslint "1: error at line 2, col 6".
_ROW = re.compile(
    r"^\s*(?:(?:ERROR|WARNING|error|warning):?\s+)?"
    r"(?:L:\s*(?P<l1>\d+)\s*\|\s*P:\s*(?P<c1>\d+)\s*\||(?P<l2>\d+):(?P<c2>\d+)(?=\s)|L(?P<l3>\d+)\s*\|"
    r"|\d+:(?P<l4>\d+): |\d+: \w+ at line (?P<l5>\d+), col (?P<c5>\d+))"
)
# The thread that received the signal (gdb, faulthandler): its stack is the one to fix, wherever it is printed.
_SIGNALLED = re.compile(r"received signal|Current thread|caught signal|signal SIG[A-Z]+|Segmentation fault|Fatal Python error")
_MAX_LINES = 20_000  # the tail of a huge log: a failure block is near the end
Candidate = tuple[int, Raw]
_SURE = re.compile(rf"^\s*(?:[\w.]*(?:Error|Exception)|[\w ]*\berror):\s*\(?{_B}(?:{_P})(?:[:)\s]|$)")
_MARKED = re.compile(r"<--|<==|◀")
_FRAME_NO = re.compile(r"^\s*(?:#(?P<n>\d+)\b|(?:\d+:\d+)?\s+(?P<m>\d+) \()")
_QUOTED_NAME = re.compile(r"[`'‘\"]([A-Za-z_][\w.-]*)['’\"]")
_CALLER = re.compile(r"\bcalled (?:on|from|at)\b|^\s*(?:from|required from|included from)\b", re.IGNORECASE)
# A line number with no file beside it: "line 4", "near line 4", "on line 3:", "at line 6, column 10", "line 4 column 3",
# "lineNumber: 2", a position closing the line "(4:1)" or "- 2:5".
_BARE = re.compile(
    r"\b[Ll]ine(?:Number)?:? (?P<l1>\d+)\b(?:,? col(?:umn)?:? (?P<c1>\d+))?"
    r"|[(\[](?P<l2>\d+):(?P<c2>\d+)[)\]]\s*$| - (?P<l3>\d+):(?P<c3>\d+)\s*$"
)
_PATH_TOKEN = re.compile(rf"{_B}(?:{_P})")
_NAME = re.compile(r"^(?:\.{1,2}/)?[\w.@+-]+(?:/[\w.@+-]+)*$")  # a file name as a shell prints it, no extension needed
# At the start of a line, a shell's own locations, whatever the script is called: ksh/mksh "deploy[7]:", fish
# "deploy (line 4):", bash "deploy: line 7:", dash "deploy: 7:".
_START = re.compile(r"^(?:E: )?(?P<p>[\w./@+-]+?)(?:\[(?P<l1>\d+)\]:| \(line (?P<l2>\d+)\):|: line (?P<l3>\d+):|: (?P<l4>\d+): )")
# Command-line tokens that can be files: arguments, redirections ("< q.sql"), sqlite's ".read f".
_CMD_TOKEN = re.compile(r"""[^\s'"<>|;&()=]+""")


def file_name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def command_paths(command: str | None) -> list[str]:
    """Path-like words of the command, in order (the caller keeps those that are real workspace files)."""
    if not command:
        return []
    # Every word but a program's name may be a file (`perlcritic deploy`); the caller checks it exists.
    words = [
        t for part in re.split(r"\|\|?|&&?|;", command) for n, t in enumerate(_CMD_TOKEN.findall(part))
        if not t.startswith("-") and not t.isdigit() and (n > 0 or plausible_path(t)) and _NAME.match(t)
    ]
    return list(dict.fromkeys(words))[:50]


def find_locations(
    lines: list[str],
    taken: set[int],
    lookup: Lookup,
    command: str | None = None,
    open_lines: set[int] | frozenset[int] = frozenset(),
    known: set[tuple[str, int]] | frozenset[tuple[str, int]] = frozenset(),
    source: SourceLine | None = None,
    settled: bool = False,
) -> list[Trace]:
    """Candidates on lines no recogniser took, and on the error lines among `open_lines` (taken lines of
    recognised traces none of whose frames is a workspace file): a template engine's "Template render error:
    (views/page.njk) [Line 3, Column 10]" above the engine's own stack, tomllib's message under a stdlib-only
    traceback. A location a recogniser already has (`known`: file name and line) is not proposed again.

    A line number with no file on its line goes to a file the command names only as the last resort: when
    nothing else in the output is located and no recogniser found a workspace frame (`settled`)."""
    checked: dict[str, tuple[str, int] | None] = {}

    def real(path: str, line: int, loose: bool = False) -> bool:
        """`loose`: a name without an extension or a directory (`script`) is looked up too."""
        if line < 1 or not (plausible_path(path) or loose and _NAME.match(path)):
            return False
        if path not in checked:
            checked[path] = lookup(path)
        found = checked[path]
        # No such file in the workspace, or too short: not a location. One past the end is the end of the
        # file as an editor shows it (a parser's "unexpected end of input" on the empty last line).
        return found is not None and line <= found[1] + 1

    def add(i: int, path: str, line: int, col: str | int | None, ln: str) -> None:
        line = min(line, checked[path][1] or 1)  # type: ignore[index]  (real() filled it)
        if (file_name(path), line) in known:  # a recogniser has it already
            return
        candidates.append((i, Raw(at=i, path=path, line=line, column=int(col) or None if col else None, message=ln.strip()[:300])))

    candidates: list[Candidate] = []
    fallback: list[Candidate] = []  # bare line numbers given to a file of the command
    header: str | None = None
    cmd_files: list[str] | None = None  # files the command names, looked up on the first bare location
    for i in range(max(0, len(lines) - _MAX_LINES), len(lines)):
        ln = lines[i]
        if len(ln) > 2000:
            continue
        if i in taken:
            if i not in open_lines or not _hinted(ln) or line_severity(ln) != "error":
                continue
        elif header is not None:
            if r := _ROW.match(ln):
                line = int(r["l1"] or r["l2"] or r["l3"] or r["l4"] or r["l5"])
                col = r["c1"] or r["c2"] or r["c5"]
                if real(header, line):
                    add(i, header, line, col, ln)
                continue
            if ln[:1] not in ("", " ", "\t"):
                header = None
        if i not in taken and ln.strip().count(" ") <= 2 and (h := _HEADER.match(ln)) and real(h["p"], 1):
            header = h["p"]
            continue
        if not _hinted(ln):
            continue
        before = len(candidates)
        if (st := _START.match(ln)) and not plausible_path(st["p"]):  # an extension-less script: "deploy[7]: x: not found"
            line = int(st["l1"] or st["l2"] or st["l3"] or st["l4"])
            if real(st["p"], line, loose=True):
                add(i, st["p"], line, None, ln)
        for m in _SHAPES.finditer(ln):
            k = next(n for n in _KEYS if m.group(f"l{n}") is not None)
            path, line = m["pp"] or m.group(f"p{k}"), int(m.group(f"l{k}"))
            if real(path, line):
                add(i, path, line, m.groupdict().get(f"c{k}"), ln)
        if ln.rstrip().endswith(")") and (a := _AFTER_MESSAGE.search(ln)):
            line = int(a["l"])
            p = next((p["p"] for p in _PATH_COLON.finditer(ln, 0, a.start()) if real(p["p"], line)), None)
            if p is not None and not any(at == i and raw.path == p for at, raw in candidates[-3:]):
                add(i, p, line, a["c"], ln)
        if len(candidates) > before or not ("ine" in ln or " - " in ln or ln.rstrip()[-1:] in (")", "]")) or not (b := _BARE.search(ln)):
            continue
        # A line number set apart from its file: the first real file named earlier on the line
        # ("Error: g.dot: syntax error in line 5", "lib/B.pm: ... at line 4, column 22."), else a file
        # the command names ("Parse error near line 4:" of `sqlite3 < q.sql`, jq's "at <top-level>, line 4:").
        line, col = int(b["l1"] or b["l2"] or b["l3"]), b["c1"] or b["c2"] or b["c3"]
        path = next((t for t in _PATH_TOKEN.findall(ln, 0, b.start()) if real(t, line)), None)
        if path is not None:
            add(i, path, line, col, ln)
            continue
        if settled or candidates:
            continue
        if cmd_files is None:
            cmd_files = [t for t in command_paths(command) if real(t, 1, loose=True)]
        if path := next((t for t in cmd_files if real(t, line, loose=True)), None):
            fallback.append((i, Raw(at=i, path=path, line=min(line, checked[path][1] or 1), column=int(col) or None if col else None, message=ln.strip()[:300])))  # type: ignore[index]
    candidates = candidates or fallback
    if not candidates:
        return []
    # Blocks: candidates no more than 3 lines apart.
    blocks: list[list[Candidate]] = []
    for cand in candidates:
        if blocks and cand[0] - blocks[-1][-1][0] <= 3:
            blocks[-1].append(cand)
        else:
            blocks.append([cand])
    chosen = _choose(lines, blocks, source)
    traces = []
    for block in blocks:
        for i, raw in block:
            # An error header naming the file ("TypeError: views/user.ejs:4", "Error: app.styl:5:44") is as sure as a
            # recogniser's frame: it outranks the template engine's or compiler's own stack printed below it.
            sure = _SURE.match(lines[i]) is not None
            raw.severity = "error" if raw is chosen or sure else "warning" if line_severity(lines[i]) == "warning" else "info"
            taken.add(i)
            traces.append(Trace(start=i, frames=[raw], stack=False, guessed=not sure))
    return traces


def _choose(lines: list[str], blocks: list[list[Candidate]], source: SourceLine | None = None) -> Raw:
    for block in blocks:  # a signalled thread's stack: its first frame is the innermost
        lo = max(0, block[0][0] - 4)
        if any(_SIGNALLED.search(lines[n]) for n in range(lo, block[-1][0] + 1)):
            return block[0][1]
    for block in blocks:  # a history printed oldest first, the failing call marked ("<--")
        for i, raw in block:
            if _MARKED.search(lines[i]):
                return raw
    # Callers ("called on line 3 of file main.fish", "called from x.tcl:4") are context, never the place to fix.
    callers = [[c for c in block if _CALLER.search(lines[c[0]])] for block in blocks]
    if any(len(c) < len(b) for c, b in zip(callers, blocks, strict=True)):
        blocks = [[c for c in b if c not in cs] for b, cs in zip(blocks, callers, strict=True)]
        blocks = [b for b in blocks if b]
    at = {i for block in blocks for i, _ in block}
    for block in blocks:  # the first failure: a candidate its own line, or a location-free line next to it, calls an error
        for i, raw in block:
            own = line_severity(lines[i])
            if own == "error":
                return raw
            if own is None and any(0 <= n < len(lines) and n not in at and line_severity(lines[n]) == "error" for n in (i - 1, i + 1)):
                return _innermost(lines, block, source) if raw is block[0][1] else raw  # the message above a stack

    def failing(block: list[Candidate]) -> bool:  # an error word in the block or just above it
        lo = max(0, block[0][0] - 2)
        return any(has_error_word(lines[n]) for n in range(lo, block[-1][0] + 1))

    return _innermost(lines, next((b for b in reversed(blocks) if failing(b)), blocks[-1]), source)


def _innermost(lines: list[str], block: list[Candidate], source: SourceLine | None) -> Raw:
    """The frame to fix in a run of locations that reads as a stack, by the trace's own order.

    Stated order first ("most recent call first/last" just above); then frame numbers (#0, or guile's
    "2 (f)", "0 (g)": the lowest is the innermost); then, when the message near the stack quotes a name
    (`'x'`, `` `x' ``, "x"), the frame whose source line holds it; else the first frame (printed innermost first)."""
    if len(block) == 1 or any(line_severity(lines[i]) for i, _ in block):
        return block[0][1]  # not a bare stack: rows of diagnostics keep their first
    above = " ".join(lines[max(0, block[0][0] - 4) : block[0][0]])
    if "most recent call last" in above:
        return block[-1][1]
    if "most recent call first" in above:
        return block[0][1]
    numbers = [_FRAME_NO.match(lines[i]) for i, _ in block]
    if all(numbers):
        return min(zip(numbers, block, strict=True), key=lambda nc: int(nc[0]["n"] or nc[0]["m"]))[1][1]  # type: ignore[index]
    if source is not None:
        near = lines[max(0, block[0][0] - 3) : block[0][0]] + lines[block[-1][0] + 1 : block[-1][0] + 4]
        names = {q for ln in near if has_error_word(ln) for q in _QUOTED_NAME.findall(ln) if len(q) > 1}
        for _i, raw in block:
            code = source(raw.path, raw.line) if names else None
            if code and any(re.search(rf"(?<!\w){re.escape(n)}(?!\w)", code) for n in names):
                return raw
    return block[0][1]
