"""Node.js stack traces: `    at f (path:line:col)`."""

from __future__ import annotations

import re
from urllib.parse import unquote

from .model import PATH, Raw, Trace

_NODE_AT = re.compile(r"^\s+at (?:(?P<func>.+?) \((?P<loc>.+)\)|(?P<loc2>\S+))\s*$")
_NODE_LOC = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+)$")
_NODE_HEADER = re.compile(rf"^(?P<path>{PATH}):(?P<line>\d+)$")


def parse_node(lines: list[str], taken: set[int]) -> list[Trace]:
    traces = []
    i = 0
    while i < len(lines):
        if i in taken or not _NODE_AT.match(lines[i]):
            i += 1
            continue
        start = i
        frames: list[Raw] = []
        while i < len(lines) and i not in taken and (a := _NODE_AT.match(lines[i])):
            loc = a["loc"] or a["loc2"]
            if lm := _NODE_LOC.match(loc.removeprefix("async ")):
                path = lm["path"]
                if path.startswith("file://"):
                    path = unquote(path[len("file://") :])
                func = a["func"]
                if func:
                    func = func.removeprefix("async ").removeprefix("new ")
                frames.append(Raw(at=i, path=path, line=int(lm["line"]), column=int(lm["col"]), function=func))
            taken.add(i)
            i += 1
        if not frames:
            continue
        # The message block sits just above the frames: "TypeError: ..." (possibly multi-line).
        k = start - 1
        while k >= 0 and lines[k].strip() and k not in taken:
            k -= 1
        msg_start = k + 1
        message = lines[msg_start].strip() if msg_start < start else "error"
        taken.update(range(msg_start, start))
        # Uncaught errors are preceded by "path:line", the code and a caret.
        h = k - 1
        while h >= 0 and not lines[h].strip():
            h -= 1
        for back in range(h, max(-1, h - 4), -1):
            if back not in taken and _NODE_HEADER.match(lines[back]):
                taken.update(range(back, h + 1))
                break
        frames.reverse()
        for f in frames:
            f.message = message
        traces.append(Trace(start=msg_start, frames=frames))
    return traces
