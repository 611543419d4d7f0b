"""PHP errors: `PHP Fatal error:  Uncaught X: msg in path:N`, `Parse error: ... in path on line N`,
warnings and notices, and the `#0 path(N): func()` stack of an uncaught exception."""

from __future__ import annotations

import re

from .model import Raw, Severity, Trace

_HEAD = re.compile(
    r"^(?:PHP )?(?P<kind>Fatal error|Parse error|Recoverable fatal error|Warning|Notice|Deprecated|Strict Standards):\s+"
    r"(?P<msg>.*?) in (?P<path>\S+?)(?::(?P<line>\d+)| on line (?P<line2>\d+))\s*$"
)
_STACK = re.compile(r"^#\d+ (?P<path>[^\s()]+)\((?P<line>\d+)\): (?P<func>.+)$")
_CALLED_IN = re.compile(r"called in (?P<path>\S+) on line (?P<line>\d+)")


def parse_php(lines: list[str], taken: set[int]) -> list[Trace]:
    traces = []
    i = 0
    while i < len(lines):
        m = _HEAD.match(lines[i]) if i not in taken else None
        if not m:
            i += 1
            continue
        taken.add(i)
        kind = m["kind"]
        severity: Severity = "warning" if kind in ("Warning", "Notice", "Deprecated", "Strict Standards") else "error"
        message = f"PHP {kind}: {m['msg']}"
        thrown = Raw(at=i, path=m["path"], line=int(m["line"] or m["line2"]), message=message, severity=severity)
        frames: list[Raw] = []
        j = i + 1
        if j < len(lines) and lines[j].strip() == "Stack trace:":
            taken.add(j)
            j += 1
            while j < len(lines) and (lines[j].startswith("#") or lines[j].startswith("  thrown in ")):
                if s := _STACK.match(lines[j]):
                    frames.append(Raw(at=j, path=s["path"], line=int(s["line"]), function=s["func"], message=message))
                taken.add(j)
                j += 1
        frames.reverse()  # printed innermost caller first
        frames.append(thrown)
        if c := _CALLED_IN.search(m["msg"]):
            # A TypeError on an argument: the caller passed it, the call site is the place to fix.
            frames.append(Raw(at=i, path=c["path"], line=int(c["line"]), message=message))
        traces.append(Trace(start=i, frames=frames, stack=severity == "error"))
        i = j
    return traces
