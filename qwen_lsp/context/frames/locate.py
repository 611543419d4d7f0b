"""The generic location finder: the last recogniser, for output formats nobody wrote one for.

It proposes every path-like token with a line number nearby, in the shapes tools
print (`f.ext:4:`, `at FILE line N.`, `File "x.ml", line N`, `path(line, col)`,
`At line 8 of file main.f90`, `(from f.R#3)`, `{file,"x.erl"},{line,5}`, ...),
and keeps a candidate only if `lookup` says its path is a real workspace file
that has that line: the file system is the arbiter, so nothing points at a file
that does not exist. Severity words rank; the first candidate of the last
failure block is the error, the others are context.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .model import Raw, Trace, plausible_path

# (absolute path, number of lines) of a workspace file, or None.
Lookup = Callable[[str], "tuple[str, int] | None"]

_P = r"[\w.@~+/\\-]*[\w@~+-]\.[A-Za-z][\w+-]*|[\w.@~+/\\-]*/[\w.@~+-]+"  # has an extension or a directory
_SHAPES = re.compile(
    "|".join(
        (
            r'File "(?P<p1>[^"]+)", line (?P<l1>\d+)',  # OCaml, Python-like
            r'in file "(?P<p2>[^"]+)"(?: \(inlined\))?, line (?P<l2>\d+)',  # OCaml "Called from ... in file"
            rf"\bat (?P<p3>{_P}) line (?P<l3>\d+)",  # Perl
            rf"\bAt line (?P<l4>\d+) of file (?P<p4>{_P})",  # gfortran
            rf"\(from (?P<p5>{_P})#(?P<l5>\d+)\)",  # R
            r'\{file,"(?P<p6>[^"]+)"\},\{line,(?P<l6>\d+)\}',  # Erlang terms
            rf'\((?P<p7>{_P}), line (?P<l7>\d+)\)',  # escript "(calc.erl, line 5)"
            r'\(file "(?P<p8>[^"]+)" line (?P<l8>\d+)\)',  # Tcl
            rf"(?P<p9>{_P})\((?P<l9>\d+)(?:, ?(?P<c9>\d+))?\)",  # Nim, Free Pascal, MSBuild, PHP stacks
            rf"(?P<p10>{_P}):(?P<l10>\d+)(?::(?P<c10>\d+))?",  # anywhere on the line
            rf"\bline (?P<l11>\d+)(?:, column (?P<c11>\d+))? (?:of|in) (?:file )?(?P<p11>{_P})",
        )
    )
)
_HINT = re.compile(r"line|:\d|\(\d|#\d")  # every shape has one of these: lines without are skipped fast
_ERROR_WORDS = re.compile(r"\b(?:error|fatal|panic|died|failed|failure|exception|abort(?:ed)?|undefined|cannot|can't|unbound|not found|terminat\w*)\b|\*\* \(", re.IGNORECASE)
_WARNING_WORDS = re.compile(r"\bwarn(?:ing)?\b", re.IGNORECASE)
_MAX_LINES = 20_000  # the tail of a huge log: a failure block is near the end


def find_locations(lines: list[str], taken: set[int], lookup: Lookup) -> list[Trace]:
    candidates: list[tuple[int, Raw]] = []
    checked: dict[str, tuple[str, int] | None] = {}
    first = max(0, len(lines) - _MAX_LINES)
    for i in range(first, len(lines)):
        ln = lines[i]
        if i in taken or len(ln) > 2000 or not _HINT.search(ln):
            continue
        for m in _SHAPES.finditer(ln):
            k = next(n for n in range(1, 12) if m.group(f"p{n}") is not None)
            path, line = m.group(f"p{k}"), int(m.group(f"l{k}"))
            col = m.groupdict().get(f"c{k}")
            if not plausible_path(path) or line < 1:
                continue
            if path not in checked:
                checked[path] = lookup(path)
            found = checked[path]
            if found is None or line > found[1]:
                continue  # no such file in the workspace, or too short: not a location
            candidates.append((i, Raw(at=i, path=path, line=line, column=int(col) if col else None, message=ln.strip()[:300])))
    if not candidates:
        return []
    # Blocks: candidates no more than 3 lines apart. A failure block has a severity word in or just above it.
    blocks: list[list[tuple[int, Raw]]] = []
    for cand in candidates:
        if blocks and cand[0] - blocks[-1][-1][0] <= 3:
            blocks[-1].append(cand)
        else:
            blocks.append([cand])

    def failing(block: list[tuple[int, Raw]]) -> bool:
        lo = max(0, block[0][0] - 2)
        return any(_ERROR_WORDS.search(lines[n]) for n in range(lo, block[-1][0] + 1))

    chosen = next((b for b in reversed(blocks) if failing(b)), blocks[-1])
    traces = []
    for block in blocks:
        for n, (i, raw) in enumerate(block):
            if block is chosen and n == 0:
                raw.severity = "error"
            elif _WARNING_WORDS.search(lines[i]):
                raw.severity = "warning"
            else:
                raw.severity = "info"
            taken.add(i)
            traces.append(Trace(start=i, frames=[raw], stack=False, guessed=True))
    return traces
