"""CMake: `CMake Error at CMakeLists.txt:4 (add_executable):`, its indented message and call stack."""

from __future__ import annotations

import re

from .model import Raw, Severity, Trace

_HEAD = re.compile(r"^CMake (?P<kind>Error|Warning|Deprecation Warning|Warning \(dev\)|Deprecation Error) at (?P<path>.+?):(?P<line>\d+) \((?P<cmd>[\w]+)\):\s*$")
_CALL = re.compile(r"^\s+(?P<path>\S+):(?P<line>\d+) \((?P<cmd>\w+)\)\s*$")


def parse_cmake(lines: list[str], taken: set[int]) -> list[Trace]:
    traces = []
    for i, ln in enumerate(lines):
        if i in taken or not (m := _HEAD.match(ln)):
            continue
        taken.add(i)
        severity: Severity = "error" if "Error" in m["kind"] else "warning"
        body: list[str] = []
        callers: list[Raw] = []
        j = i + 1
        while j < len(lines) and (lines[j].startswith((" ", "\t", "Call Stack")) or not lines[j].strip()):
            if j + 1 < len(lines) and not lines[j].strip() and lines[j + 1].strip() and not lines[j + 1].startswith((" ", "\t", "Call Stack")):
                break
            if c := _CALL.match(lines[j]):
                callers.append(Raw(at=j, path=c["path"], line=int(c["line"]), function=c["cmd"]))
            elif lines[j].strip() and len(body) < 3:
                body.append(lines[j].strip())
            taken.add(j)
            j += 1
        message = f"CMake {m['kind']}: {' '.join(body)}".strip() if body else f"CMake {m['kind']} ({m['cmd']})"
        here = Raw(at=i, path=m["path"], line=int(m["line"]), function=m["cmd"], message=message, severity=severity)
        frames = [*reversed(callers), here]  # the call stack is printed most recent first
        for f in frames:
            f.message = message
        traces.append(Trace(start=i, frames=frames, stack=bool(callers)))
    return traces
