"""tsc `path(line,col): error TSnnnn` (plain and --pretty) and kotlinc K2 `e: path:line:col`."""

from __future__ import annotations

import re
from urllib.parse import unquote

from .model import PATH, Raw, Trace
from .severity import severity_word

_TSC = re.compile(rf"^(?P<path>{PATH})\((?P<line>\d+),(?P<col>\d+)\): (?P<sev>error|warning|message) (?P<code>TS\d+): (?P<msg>.*)$")
_TSC_PRETTY = re.compile(rf"^(?P<path>{PATH}):(?P<line>\d+):(?P<col>\d+) - (?P<sev>error|warning|message) (?P<code>TS\d+): (?P<msg>.*)$")
_KOTLIN_K2 = re.compile(r"^(?P<sev>[ewi]): (?:file://)?(?P<path>[^\s:]+(?::\\[^\s:]+)?):(?P<line>\d+):(?P<col>\d+) (?P<msg>.*)$")


def parse_tsc_kotlin(lines: list[str], taken: set[int]) -> list[Trace]:
    traces = []
    for i, ln in enumerate(lines):
        if i in taken or not (" TS" in ln or ln[1:3] == ": "):
            continue
        if m := (_TSC.match(ln) or _TSC_PRETTY.match(ln)):
            raw = Raw(
                at=i, path=m["path"], line=int(m["line"]), column=int(m["col"]),
                message=f"{m['sev']} {m['code']}: {m['msg']}", severity=severity_word(m["sev"]),
            )
        elif m := _KOTLIN_K2.match(ln):
            sev = severity_word(m["sev"])
            raw = Raw(
                at=i, path=unquote(m["path"]), line=int(m["line"]), column=int(m["col"]),
                message=f"{'warning' if sev == 'warning' else sev}: {m['msg']}", severity=sev,
            )
        else:
            continue
        taken.add(i)
        traces.append(Trace(start=i, frames=[raw], stack=False))
    return traces
