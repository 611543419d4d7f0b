"""The classic `path:line[:col]: message` of compilers and linters."""

from __future__ import annotations

import re

from .model import PATH, Raw, Severity, Trace, lint_severity, plausible_path
from .severity import WRAPPER, line_severity, severity_word

_GENERIC = re.compile(rf"^\s*(?P<path>{PATH}):(?P<line>\d+)(?::(?P<col>\d+))?:(?:\s+(?P<msg>.*))?$")
_SEV_PREFIX = re.compile(r"^(?P<sev>fatal error|error|warning|note|info|hint|remark|style|portability|performance|information)(?:\[[\w-]+\])?\s*:\s*", re.IGNORECASE)
# "path:3: in function 'f'" is a line of a stack traceback (Lua), not a diagnostic: the generic
# location finder reads those, as a block, with the error line above them.
_STACK_LINE = re.compile(r"^in (?:function|local|method|upvalue|field|main chunk|for iterator|\?)\b")
_TAGGED = re.compile(r"\[(?P<sev>Error|Warning)/[^\]]*\]$")
_CODE_PREFIX = re.compile(r"^(?P<code>[A-Z]{1,4}\d{2,5})\b")
_GCC_FUNC = re.compile(rf"^(?P<path>{PATH}): (?:In (?:static |member )?(?:function|constructor|destructor|instantiation of)[^‘'`]*[‘'`](?P<func>[^’']+)[’']|At top level):\s*$")


def parse_generic(lines: list[str], taken: set[int]) -> list[Trace]:
    traces = []
    func_for: dict[str, str | None] = {}
    for i, ln in enumerate(lines):
        if i in taken:
            continue
        if g := _GCC_FUNC.match(ln):
            func_for[g["path"]] = g["func"]
            taken.add(i)
            continue
        m = _GENERIC.match(ln)
        if not m or not plausible_path(m["path"]) or _STACK_LINE.match(m["msg"] or ""):
            continue
        msg = (m["msg"] or "").strip()
        severity: Severity = "error"
        if s := _SEV_PREFIX.match(msg):
            severity = severity_word(s["sev"])
        elif c := _CODE_PREFIX.match(msg):
            severity = lint_severity(c["code"])
        elif re.match(r"^\w*Warning\b", msg):
            severity = "warning"
        elif t := _TAGGED.search(msg):  # ESLint's unix format: "message [Error/rule]"
            severity = severity_word(t["sev"])
        elif msg:
            severity = _leading(msg) or "error"
        else:  # "    src/a.js:1:17:" under its "▲ [WARNING] ..." or "... is here:" header (esbuild)
            severity = _leading(_above(lines, i)) or "error"
        if severity == "error" and WRAPPER.search(msg):
            severity = "warning"  # "BUILD FAILED / build.xml:4: Compile failed": the compiler's own error comes first
        raw = Raw(
            at=i, path=m["path"], line=int(m["line"]), column=int(m["col"]) if m["col"] else None,
            function=func_for.get(m["path"]), message=msg or "error", severity=severity,
        )
        taken.add(i)
        traces.append(Trace(start=i, frames=[raw], stack=False))
    return traces


def _leading(text: str) -> Severity | None:
    """The vocabulary's verdict when it comes early in the message ("namespace warning : ..."), else None."""
    sev = line_severity(text[:40])
    return sev if sev != "error" else None  # an error is the default already; only a milder word changes it


def _above(lines: list[str], i: int) -> str:
    """The nearest non-blank line above, within three lines."""
    for k in range(i - 1, max(-1, i - 4), -1):
        if lines[k].strip():
            return lines[k]
    return ""
