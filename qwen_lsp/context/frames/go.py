"""Go: panics and goroutine dumps (frames indented with a tab, or with spaces once pasted or read back
from a terminal), the race detector's reports, and `go test` failures printed relative to the package."""

from __future__ import annotations

import re

from .model import PATH, Raw, Trace

_GO_PANIC = re.compile(r"^(?:panic|fatal error): (?P<msg>.+)$")
_GO_GOROUTINE = re.compile(r"^goroutine \d+ \[.*\]:\s*$")
_GO_AT = re.compile(rf"^\s+(?P<path>{PATH}\.(?:go|s|c)):(?P<line>\d+)(?: \+0x[0-9a-f]+)?\s*$")
_RACE_START = "WARNING: DATA RACE"
_RACE_END = re.compile(r"^={10,}\s*$")
_RACE_SECTION = re.compile(r"^(?:(?P<first>Read|Write) at |Previous (?:read|write) at |Goroutine \d+ .*created at:)")
_TEST_FAIL = re.compile(r"^\s*--- FAIL: (?P<test>\S+)")
_TEST_LOC = re.compile(r"^\s+(?P<file>[\w.-]+\.go):(?P<line>\d+): (?P<msg>.*)$")
_TEST_PKG = re.compile(r"^(?:FAIL|ok)\s+(?P<pkg>\S+)\s+(?:[\d.]+s|\(cached\)|\[)")


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


def parse_go_race(lines: list[str], taken: set[int]) -> list[Trace]:
    """`WARNING: DATA RACE`: the first access is the failure; the previous access and the goroutines'
    creation sites are related stacks."""
    traces = []
    i = 0
    while i < len(lines):
        if i in taken or lines[i].strip() != _RACE_START:
            i += 1
            continue
        start = i
        sections: list[list[Raw]] = []
        func = None
        related = False
        message = "data race"
        j = i + 1
        while j < len(lines) and not _RACE_END.match(lines[j]):
            ln = lines[j]
            if h := _RACE_SECTION.match(ln):
                related = not h["first"]
                if not related:
                    message = f"data race: {ln.strip().rstrip(':')}"
                sections.append([])
            elif (a := _GO_AT.match(ln)) and sections:
                sections[-1].append(Raw(at=j, path=a["path"], line=int(a["line"]), function=func, related=related))
            elif ln.strip():
                func = re.sub(r"\(.*\)$", "", ln.strip())
            j += 1
        taken.update(range(start, j + 1))
        trace = Trace(start=start, frames=[])
        for section in sections:
            section.reverse()  # printed innermost first
            for f in section:
                f.message = message
            if section:
                trace.sections.append(section)
                trace.frames.extend(section)
        # The failing access last, so it is the trace's deepest section.
        trace.sections.sort(key=lambda sec: not sec[0].related)
        trace.frames = [f for sec in trace.sections for f in sec]
        if trace.frames:
            traces.append(trace)
        i = j + 1
    return traces


def parse_go_test(lines: list[str], taken: set[int]) -> list[Trace]:
    """`--- FAIL: TestX` with `file_test.go:7: message` lines: the path is relative to the package,
    named by the `FAIL  import/path  0.01s` line that closes the package's output."""
    traces: list[Trace] = []
    pending: list[Raw] = []
    ends: dict[int, int] = {}
    in_fail = False
    for i, ln in enumerate(lines):
        if i in taken:
            continue
        if _TEST_FAIL.match(ln):
            in_fail = True
            taken.add(i)
        elif in_fail and (m := _TEST_LOC.match(ln)):
            pending.append(Raw(at=i, path=m["file"], line=int(m["line"]), message=m["msg"].strip()))
            taken.add(i)
            indent, j = len(ln) - len(ln.lstrip()), i + 1
            while j < len(lines) and (len(lines[j]) - len(lines[j].lstrip()) > indent or not lines[j].strip()) and not _TEST_PKG.match(lines[j]):
                j += 1  # t.Errorf's continuation lines: they may quote a child process's traceback
            ends[i] = j - 1
        elif m := _TEST_PKG.match(ln):
            for raw in pending:
                raw.dir_hint = m["pkg"]
                traces.append(Trace(start=raw.at, frames=[raw], stack=False, end=ends.get(raw.at)))
            pending, in_fail = [], False
    for raw in pending:
        traces.append(Trace(start=raw.at, frames=[raw], stack=False, end=ends.get(raw.at)))
    return traces
