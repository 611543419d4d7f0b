"""Linters that group findings under a file name or a location header: ESLint's default "stylish" and
its "compact" format, ruff's `--output-format=grouped`, ShellCheck's default (tty) format."""

from __future__ import annotations

import re

from .model import PATH, Raw, Severity, Trace, lint_severity, plausible_path
from .severity import severity_word

_FILE_HEADER = re.compile(rf"^(?P<path>{PATH}):?\s*$")
_STYLISH_ROW = re.compile(r"^\s+(?P<line>\d+):(?P<col>\d+)\s+(?P<sev>error|warning)\s+(?P<msg>.+?)(?:\s{2,}(?P<rule>[\w/@.-]+))?\s*$")
_RUFF_ROW = re.compile(r"^\s+(?P<line>\d+):(?P<col>\d+)\s+(?P<code>[A-Z]+\d+)\s+(?:\[\*\] )?(?P<msg>.+?)\s*$")
_COMPACT = re.compile(r"^(?P<path>.+?): line (?P<line>\d+), col (?P<col>\d+), (?P<sev>Error|Warning|Info) - (?P<msg>.*)$")
_SC_HEADER = re.compile(r"^In (?P<path>.+) line (?P<line>\d+):\s*$")
_SC_CARET = re.compile(r"^(?P<pad>\s*)\^[-^]*\s+(?P<code>SC\d+)(?: \((?P<sev>error|warning|info|style)\))?: (?P<msg>.*)$")


def parse_grouped(lines: list[str], taken: set[int]) -> list[Trace]:
    """A file name alone on a line, then indented `line:col  ...` rows (ESLint stylish, ruff grouped)."""
    traces = []
    path: str | None = None
    for i, ln in enumerate(lines):
        if i in taken or (path is None and (" " in ln.rstrip() or not ln)):
            continue
        if (h := _FILE_HEADER.match(ln)) and plausible_path(h["path"]) and i + 1 < len(lines) and (
            _STYLISH_ROW.match(lines[i + 1]) or _RUFF_ROW.match(lines[i + 1])
        ):
            path = h["path"]
            taken.add(i)
            continue
        if path is None:
            continue
        severity: Severity
        if r := _STYLISH_ROW.match(ln):
            severity = severity_word(r["sev"])
            message = f"{r['msg']} ({r['rule']})" if r["rule"] else r["msg"]
        elif r := _RUFF_ROW.match(ln):
            severity = lint_severity(r["code"])
            message = f"{r['code']} {r['msg']}"
        else:
            if ln.strip():
                path = None
            continue
        taken.add(i)
        raw = Raw(at=i, path=path, line=int(r["line"]), column=int(r["col"]), message=message, severity=severity)
        traces.append(Trace(start=i, frames=[raw], stack=False))
    return traces


def parse_compact(lines: list[str], taken: set[int]) -> list[Trace]:
    traces = []
    for i, ln in enumerate(lines):
        if i not in taken and ": line " in ln and (m := _COMPACT.match(ln)) and plausible_path(m["path"]):
            taken.add(i)
            raw = Raw(at=i, path=m["path"], line=int(m["line"]), column=int(m["col"]), message=m["msg"], severity=severity_word(m["sev"]))
            traces.append(Trace(start=i, frames=[raw], stack=False))
    return traces


def parse_shellcheck(lines: list[str], taken: set[int]) -> list[Trace]:
    """`In script.sh line 5:`, the code line, then one caret line per finding under it."""
    traces = []
    for i, ln in enumerate(lines):
        if i in taken or not ln.startswith("In ") or not (h := _SC_HEADER.match(ln)):
            continue
        taken.add(i)
        taken.add(i + 1)  # the code line
        j = i + 2
        while j < len(lines) and (c := _SC_CARET.match(lines[j])):
            severity: Severity = severity_word(c["sev"] or "warning")  # ShellCheck's "style" is a warning, "info" info
            raw = Raw(at=j, path=h["path"], line=int(h["line"]), column=len(c["pad"]) + 1, message=f"{c['code']}: {c['msg']}", severity=severity)
            traces.append(Trace(start=j, frames=[raw], stack=False))
            taken.add(j)
            j += 1
    return traces
