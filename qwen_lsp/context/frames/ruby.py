"""Ruby backtraces (`path:N:in 'meth': message (Class)`, `from path:N:in ...`), RSpec's `# ./path:N:in`
lines and minitest's `Test#name [path:N]:` failure headers."""

from __future__ import annotations

import re

from .model import PATH, Raw, Trace

_FRAME = re.compile(rf"^(?P<pre>\s*(?:from |# )?)(?P<path>{PATH}):(?P<line>\d+):in [`'](?P<func>[^']*)'(?::\s+(?P<msg>.*))?\s*$")
_MINITEST = re.compile(rf"^(?P<test>[\w:]+#\S+) \[(?P<path>{PATH}):(?P<line>\d+)\]:\s*$")
_RSPEC_FAILURE = re.compile(r"^\s*Failure/Error: ")
_EXC = re.compile(r"^\s*(?P<exc>[A-Z][\w:]*(?:Error|Exception|Interrupt)\b.*)$")


def parse_ruby(lines: list[str], taken: set[int]) -> list[Trace]:
    traces: list[Trace] = []
    frames: list[Raw] = []
    last = -10
    start = 0

    def flush() -> None:
        nonlocal frames
        if frames:
            frames.reverse()  # Ruby prints the innermost frame first
            message = _message(lines, start, frames)
            for f in frames:
                f.message = message
            traces.append(Trace(start=start, frames=frames))
        frames = []

    for i, ln in enumerate(lines):
        if i in taken or (":in " not in ln and "]:" not in ln):
            continue
        if m := _MINITEST.match(ln):
            flush()
            message = next((lines[k].strip() for k in range(i + 1, min(len(lines), i + 4)) if lines[k].strip()), "test failed")
            raw = Raw(at=i, path=m["path"], line=int(m["line"]), function=m["test"], message=f"{m['test']}: {message}")
            traces.append(Trace(start=i, frames=[raw], stack=False))
            taken.add(i)
            continue
        m = _FRAME.match(ln)
        if not m:
            continue
        if i - last > 5:  # error_highlight prints the code and a caret between the first frame and the rest
            flush()
            start = i
        raw = Raw(at=i, path=m["path"], line=int(m["line"]), function=m["func"] or None)
        if m["msg"]:
            raw.message = m["msg"].strip()
        frames.append(raw)
        taken.add(i)
        last = i
    flush()
    for trace in traces:
        if len(trace.frames) >= 2 and "wrong number of arguments" in trace.frames[-1].message:
            trace.frames.pop()  # raised at the callee's `def` line; the call is what to fix
    return traces


def _message(lines: list[str], start: int, frames: list[Raw]) -> str:
    first = frames[-1].message  # the innermost frame's line carries "message (Class)" in plain Ruby
    if first:
        if m := re.match(r"^(?P<msg>.*) \((?P<cls>[\w:]+)\)$", first):
            return f"{m['cls']}: {m['msg']}"
        return first
    # RSpec / minitest: the exception or the expectation sits a few lines above the backtrace.
    for k in range(start - 1, max(-1, start - 12), -1):
        if e := _EXC.match(lines[k]):
            following = lines[k + 1].strip() if k + 1 < start else ""
            return f"{e['exc'].rstrip(':')}: {following}" if e["exc"].endswith(":") and following else e["exc"]
        if _RSPEC_FAILURE.match(lines[k]):
            rest = [lines[j].strip() for j in range(k + 1, start) if lines[j].strip()]
            return " ".join(rest[:3]) or lines[k].strip()
    return "error"
