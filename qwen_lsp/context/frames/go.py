"""Go panics and goroutine dumps."""

from __future__ import annotations

import re

from .model import PATH, Raw, Trace

_GO_PANIC = re.compile(r"^(?:panic|fatal error): (?P<msg>.+)$")
_GO_GOROUTINE = re.compile(r"^goroutine \d+ \[.*\]:\s*$")
_GO_AT = re.compile(rf"^\t(?P<path>{PATH}):(?P<line>\d+)(?: \+0x[0-9a-f]+)?\s*$")


def parse_go_panic(lines: list[str], taken: set[int]) -> list[Trace]:
    traces = []
    i = 0
    while i < len(lines):
        m = _GO_PANIC.match(lines[i]) if i not in taken else None
        if not m:
            i += 1
            continue
        start, message = i, lines[i].strip()
        taken.add(i)
        j = i + 1
        while j < len(lines) and not _GO_GOROUTINE.match(lines[j]) and j < i + 6:
            if lines[j].startswith("[signal "):
                taken.add(j)
            j += 1
        frames: list[Raw] = []
        if j < len(lines) and _GO_GOROUTINE.match(lines[j]):
            taken.add(j)
            j += 1
            func = None
            while j < len(lines) and lines[j].strip():
                if a := _GO_AT.match(lines[j]):
                    frames.append(Raw(at=j, path=a["path"], line=int(a["line"]), function=func, message=message))
                else:
                    func = re.sub(r"\(.*\)$", "", lines[j].strip()).removeprefix("created by ").split(" in goroutine")[0]
                taken.add(j)
                j += 1
        frames.reverse()
        if frames:
            traces.append(Trace(start=start, frames=frames))
        i = j
    return traces
