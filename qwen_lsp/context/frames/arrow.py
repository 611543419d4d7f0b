"""Headers followed by an arrow line: rustc/cargo `--> path:line:col`, ruff's full format."""

from __future__ import annotations

import re

from .model import PATH, Raw, Severity, Trace, lint_severity, plausible_path
from .severity import severity_word

_ARROW = re.compile(rf"^\s*(?:-->|╭─▶|┌─|,-\[)\s*(?P<path>{PATH}):(?P<line>\d+):(?P<col>\d+)\]?\s*$")
_RUST_HEADER = re.compile(r"^(?P<sev>error|warning|note|help|invalid-syntax)(?:\[(?P<code>[\w-]+)\])?: (?P<msg>.+)$")
_LINT_HEADER = re.compile(r"^(?P<code>[A-Z]{1,4}\d{2,5}) (?P<msg>.+)$")


def parse_arrow(lines: list[str], taken: set[int]) -> list[Trace]:
    traces = []
    for i, ln in enumerate(lines):
        if i in taken or not (m := _ARROW.match(ln)) or not plausible_path(m["path"]):
            continue
        header_at = next(
            (k for k in range(i - 1, max(-1, i - 4), -1) if lines[k].strip() and not lines[k].lstrip().startswith("|")),
            None,
        )
        message = "error"
        severity: Severity = "error"
        if header_at is not None:
            header = lines[header_at].strip()
            if h := _RUST_HEADER.match(header):
                message, severity = header, "error" if h["sev"] == "invalid-syntax" else severity_word(h["sev"])
            elif h := _LINT_HEADER.match(header):
                message, severity = header, lint_severity(h["code"])
            else:
                header_at = None
        if header_at is None:
            continue
        if message.startswith(("error: could not compile", "warning: unused manifest")):
            continue
        taken.update({header_at, i})
        raw = Raw(at=i, path=m["path"], line=int(m["line"]), column=int(m["col"]), message=message, severity=severity)
        traces.append(Trace(start=header_at, frames=[raw], stack=False))
    return traces
