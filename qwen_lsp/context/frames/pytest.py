"""pytest's FAILURES/ERRORS sections, --tb=long and --tb=short."""

from __future__ import annotations

import re

from .model import PATH, Raw, Trace, plausible_path
from .python import MARKERS, PY_FILE

_PYTEST_BANNER = re.compile(r"^={3,} (FAILURES|ERRORS) ={3,}$")
_PYTEST_END = re.compile(r"^={3,} .* ={3,}$|^={5,}$")
_PYTEST_TEST = re.compile(r"^_{3,} (.+?) _{3,}$")
_PYTEST_SEP = re.compile(r"^(?:_ ){3,}_?\s*$")
_PYTEST_CAPTURED = re.compile(r"^-{3,} (Captured|generated) .* -{3,}$")
_PYTEST_LOC = re.compile(rf"^(?P<path>{PATH}):(?P<line>\d+):(?: (?P<rest>.*))?$")
_PYTEST_DEF = re.compile(r"^\s*(?:async\s+)?def (\w+)\(")
_PY_EXC_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Iteration)\b")


def parse_pytest(lines: list[str], taken: set[int]) -> list[Trace]:
    traces: list[Trace] = []
    in_failures = False
    in_captured = False
    native = False
    trace: Trace | None = None
    e_blocks: list[list[str]] = []
    last_def: str | None = None
    exc_name: str | None = None

    claimed: list[int] = []  # lines of the current test's report

    def finish() -> None:
        if trace is None or not trace.frames:
            # A report with no location pytest's formats name (a plugin's "path:5 in test_x() -> ..."):
            # its lines go back to the other recognisers.
            taken.difference_update(claimed)
            claimed.clear()
            return
        claimed.clear()
        message = ""
        if e_blocks:
            block = e_blocks[-1]
            exc_lines = [t for t in block if _PY_EXC_LINE.match(t)]
            first = exc_lines[-1] if exc_lines and not block[0].startswith("assert") else block[0]
            message = first
            if exc_name and not first.startswith(exc_name) and not re.match(r"^[\w.]+(Error|Exception|Exit)\b", first):
                message = f"{exc_name}: {first}"
        message = message or exc_name or "test failed"
        for f in trace.frames:
            f.message = message
        traces.append(trace)

    for i, ln in enumerate(lines):
        if _PYTEST_BANNER.match(ln):
            finish()
            trace, in_failures, in_captured = None, True, False
            taken.add(i)
            continue
        if not in_failures:
            continue
        if _PYTEST_END.match(ln) and not _PYTEST_TEST.match(ln):
            finish()
            trace, in_failures = None, False
            continue
        if m := _PYTEST_TEST.match(ln):
            finish()
            trace = Trace(start=i, frames=[])
            e_blocks, last_def, exc_name, in_captured, native = [], None, None, False, False
            taken.add(i)
            claimed.append(i)
            continue
        if trace is None:
            continue
        if _PYTEST_CAPTURED.match(ln):
            in_captured = True
            continue
        if in_captured:
            continue
        if ln.startswith(("Traceback (most recent call last)", "  + Exception Group Traceback")):
            native = True  # --tb=native: a plain Python traceback, left to the Python recogniser
        if native:
            continue
        taken.add(i)
        claimed.append(i)
        if _PYTEST_SEP.match(ln):
            last_def = None
            continue
        if ln.startswith("E ") or ln == "E":
            text = ln[1:].strip()
            if f := PY_FILE.match(ln[1:]):  # a SyntaxError while importing: its location is inside the E block
                trace.frames.append(Raw(at=i, path=f["path"], line=int(f["line"]), function=f["func"]))
            elif MARKERS.match(ln[1:]) and ln[1:].strip() and i >= 2 and PY_FILE.match(lines[i - 2][1:]):
                raw, code, marker = trace.frames[-1], lines[i - 1][1:], ln[1:]
                indent = len(code) - len(code.lstrip())
                raw.snippet, raw.snippet_col = code, max(0, len(marker) - len(marker.lstrip()) - indent)
            if i > 0 and (lines[i - 1].startswith("E ") or lines[i - 1] == "E") and e_blocks:
                e_blocks[-1].append(text)
            elif text:
                e_blocks.append([text])
            continue
        if (d := _PYTEST_DEF.match(ln)) and not ln.startswith(">"):
            last_def = last_def or d[1]
            continue
        if (m := _PYTEST_LOC.match(ln)) and plausible_path(m["path"]):
            rest = (m["rest"] or "").strip()
            func = None
            if rest.startswith("in "):  # --tb=short: "path:line: in func"
                func = rest[3:].strip()
            else:  # --tb=long: "path:line: ExceptionName" under the code of that frame
                func = last_def
                if rest:
                    exc_name = rest
            trace.frames.append(Raw(at=i, path=m["path"], line=int(m["line"]), function=func))
            last_def = None
    finish()
    return traces
