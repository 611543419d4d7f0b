"""make recipe failures and shell `script: line N: ...` errors."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from .model import KNOWN_NAMES, PATH, SHELLS, Raw, Trace, plausible_path

_MAKE_RECIPE = re.compile(rf"^g?make(?:\[\d+\])?: \*\*\* \[(?P<path>{PATH}):(?P<line>\d+): (?P<target>[^\]]+)\] (?P<what>Error \d+|Segmentation fault.*|Killed.*)")
MAKE_DIR = re.compile(r"^g?make(?:\[\d+\])?: (?P<what>Entering|Leaving) directory ['`](?P<dir>.+)'\s*$")
_BASH_LINE = re.compile(rf"^(?P<path>{PATH}): line (?P<line>\d+): (?P<msg>.+)$")
_DASH_LINE = re.compile(rf"^(?P<path>{PATH}): (?P<line>\d+): (?P<msg>.+)$")


def parse_make_shell(lines: list[str], taken: set[int]) -> list[Trace]:
    traces = []
    for i, ln in enumerate(lines):
        if i in taken or ": " not in ln:
            continue
        if m := _MAKE_RECIPE.match(ln):
            # The recipe's own complaint ("/bin/sh: 1: frobnicate: not found") sits just above.
            k = i - 1
            while k > i - 4 and k >= 0 and (not lines[k].strip() or _MAKE_RECIPE.match(lines[k]) or MAKE_DIR.match(lines[k])):
                k -= 1
            cause = lines[k].strip() if k >= 0 and k not in taken and lines[k].strip() else ""
            if k >= 0 and k not in taken and cause:
                taken.add(k)
            message = f"{cause} (make target '{m['target']}': {m['what']})" if cause else ln.strip()
            raw = Raw(at=i, path=m["path"], line=int(m["line"]), message=message)
        elif m := (_BASH_LINE.match(ln) or _DASH_LINE.match(ln)):
            name = PurePosixPath(m["path"]).name
            if name in SHELLS or not plausible_path(m["path"]) and name not in KNOWN_NAMES:
                continue
            raw = Raw(at=i, path=m["path"], line=int(m["line"]), message=m["msg"].strip())
        else:
            continue
        taken.add(i)
        traces.append(Trace(start=i, frames=[raw], stack=False))
    return traces
