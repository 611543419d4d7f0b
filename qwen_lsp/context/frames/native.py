"""C/C++ runtime reports: AddressSanitizer and friends, valgrind (memcheck), glibc's failed `assert`.

Each report's first stack is the failure; the stacks after it (where the block was
allocated or freed, the shadow stack frame) are related, never the primary."""

from __future__ import annotations

import re

from .model import PATH, Raw, Trace

_SAN_HEAD = re.compile(r"^(?:==\d+==)?(?:ERROR|WARNING): (?P<tool>\w+Sanitizer): (?P<msg>.*)$")
# ThreadSanitizer prints no address: "#0 worker src/counter.c:9 (bin+0x11e9)".
_SAN_FRAME = re.compile(rf"^\s*#\d+ (?:0x[0-9a-fA-F]+ )?(?:in )?(?P<func>.+?) (?P<path>{PATH}):(?P<line>\d+)(?::(?P<col>\d+))?(?: \([^)]*\))?\s*$")
_SAN_ANY_FRAME = re.compile(r"^\s*#\d+ (?:0x[0-9a-fA-F]+ |\S+ \S+:\d+ \()")
_SAN_END = re.compile(r"^(?:SUMMARY: \w+Sanitizer|==\d+==ABORTING|Shadow bytes around)")

_VG = re.compile(r"^==\d+== ?(?P<rest>.*)$")
_VG_FRAME = re.compile(r"^\s+(?:at|by) 0x[0-9A-Fa-f]+: (?P<func>.+?) \((?:(?P<path>[^():]+):(?P<line>\d+)|in [^()]*)\)\s*$")

_ASSERT = re.compile(rf"^(?P<prog>[^\s:]+): (?P<path>{PATH}):(?P<line>\d+): (?P<func>.+?): Assertion [`'](?P<cond>.*)' failed\.\s*$")


def _trace(start: int, sections: list[list[Raw]], message: str) -> Trace | None:
    trace = Trace(start=start, frames=[])
    first = True
    for section in sections:
        if not section:
            continue
        section.reverse()  # printed innermost first
        for f in section:
            f.message = message
            f.related = not first
        first = False
        trace.sections.append(section)
    # The failing stack last: the deepest section is where the trace's error is.
    trace.sections.sort(key=lambda sec: not sec[0].related)
    trace.frames = [f for sec in trace.sections for f in sec]
    return trace if trace.frames else None


def parse_sanitizer(lines: list[str], taken: set[int]) -> list[Trace]:
    traces = []
    i = 0
    while i < len(lines):
        m = _SAN_HEAD.match(lines[i]) if i not in taken else None
        if not m:
            i += 1
            continue
        start, message = i, f"{m['tool']}: {m['msg'].split(' on address ')[0]}"
        sections: list[list[Raw]] = []
        in_stack = False
        j = i + 1
        while j < len(lines) and not _SAN_END.match(lines[j]) and not _SAN_HEAD.match(lines[j]):
            ln = lines[j]
            if _SAN_ANY_FRAME.match(ln):
                if not in_stack:
                    sections.append([])
                    in_stack = True
                if f := _SAN_FRAME.match(ln):
                    sections[-1].append(Raw(at=j, path=f["path"], line=int(f["line"]), column=int(f["col"]) if f["col"] else None, function=f["func"]))
            elif ln.strip():
                in_stack = False
            j += 1
        while j < len(lines) and lines[j].startswith("SUMMARY: "):
            j += 1
        taken.update(range(start, j))
        if trace := _trace(start, sections, message):
            traces.append(trace)
        i = j
    return traces


def parse_valgrind(lines: list[str], taken: set[int]) -> list[Trace]:
    traces = []
    sections: list[list[Raw]] = []
    message = ""
    start = -1
    in_stack = False

    def flush() -> None:
        nonlocal sections, message
        if sections and (trace := _trace(start, sections, f"valgrind: {message}")):
            traces.append(trace)
        sections, message = [], ""

    for i, ln in enumerate(lines):
        if i in taken or not (v := _VG.match(ln)):
            continue
        rest = v["rest"]
        if not rest.strip():  # a bare "==123==" line ends one error record
            flush()
            in_stack = False
            continue
        if f := _VG_FRAME.match(rest):
            if not in_stack:
                sections.append([])
                in_stack = True
            if f["path"]:
                sections[-1].append(Raw(at=i, path=f["path"], line=int(f["line"]), function=f["func"]))
            taken.add(i)
            continue
        in_stack = False
        if not sections and not message:
            message, start = rest.strip(), i
            taken.add(i)
    flush()
    return [t for t in traces if any(not f.related for f in t.frames)]


def parse_assert(lines: list[str], taken: set[int]) -> list[Trace]:
    traces = []
    for i, ln in enumerate(lines):
        if i not in taken and (m := _ASSERT.match(ln)):
            taken.add(i)
            raw = Raw(at=i, path=m["path"], line=int(m["line"]), function=m["func"], message=f"Assertion `{m['cond']}' failed")
            traces.append(Trace(start=i, frames=[raw], stack=False))
    return traces
