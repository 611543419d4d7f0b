"""Python tracebacks: `Traceback (most recent call last):`, `File "x.py", line N, in f`, chained causes,
and exception groups (asyncio.TaskGroup, `except*`), whose members are drawn inside `|` and `+-` boxes."""

from __future__ import annotations

import re

from .model import Raw, Trace

_PY_HEADER = re.compile(r"^\s*(?:Exception Group )?Traceback \(most recent call last\):\s*$")
# loguru marks the frame that caught the exception with "> File ..."
PY_FILE = re.compile(r'^\s*(?:> )?File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?\s*$')
_PY_CHAIN = re.compile(
    r"^\s*(During handling of the above exception, another exception occurred:|"
    r"The above exception was the direct cause of the following exception:)\s*$"
)
MARKERS = re.compile(r"^\s*[\^~]+[\s\^~]*$")
_EXC_LINE = re.compile(r"^[A-Za-z_][\w.]*(?::|$)")  # "KeyError: 'b'", "app.ConfigError: bad", "KeyboardInterrupt"
_GROUP_BAR = re.compile(r"^\s*[|+] ?")
_GROUP_SEP = re.compile(r"^\s*\+[-+]{3,}(?: (?:\d+|\.\.\.) -+|-*)\s*$")


def _ungroup(lines: list[str]) -> tuple[list[str], set[int]]:
    """Exception group boxes removed (`  | File ...` -> `File ...`), and the lines that separate group members."""
    view, seps = [], set()
    for i, ln in enumerate(lines):
        if _GROUP_SEP.match(ln):
            seps.add(i)
            view.append("")
        else:
            view.append(_GROUP_BAR.sub("", ln, count=1) if ln.lstrip().startswith(("|", "+ ")) else ln)
    return view, seps


def parse_python(lines: list[str], taken: set[int]) -> list[Trace]:
    seps: set[int] = set()
    if any("Exception Group Traceback" in ln for ln in lines):
        lines, seps = _ungroup(lines)
    traces: list[Trace] = []
    trace: Trace | None = None
    section: list[Raw] = []
    chained = False

    def close_section(message: str | None) -> None:
        nonlocal section
        if section:
            for f in section:
                f.message = message or "error"
            assert trace is not None
            trace.sections.append(section)
            trace.frames.extend(section)
        section = []

    base_indent = 0  # a traceback quoted inside another report (doctest, go test) is indented
    i = 0
    while i < len(lines):
        if i in taken:
            i += 1
            continue
        ln = lines[i]
        if i in seps and trace is not None:  # the next group member belongs to the same failure
            close_section(None)
            chained = True
            taken.add(i)
        elif _PY_CHAIN.match(ln) and trace is not None:
            chained = True
            taken.add(i)
        elif _PY_HEADER.match(ln):
            base_indent = len(ln) - len(ln.lstrip())
            if trace is None or not chained:
                trace = Trace(start=i, frames=[])
                traces.append(trace)
            chained = False
            section = []
            taken.add(i)
        elif m := PY_FILE.match(ln):
            if trace is None or (not section and not chained and not _PY_HEADER.match(lines[i - 1] if i else "")):
                # A SyntaxError in the main script has no "Traceback" header.
                if trace is None or trace.frames:
                    trace = Trace(start=i, frames=[])
                    traces.append(trace)
            raw = Raw(at=i, path=m["path"], line=int(m["line"]), function=m["func"])
            taken.add(i)
            # The code line, then an optional ^^^/~~~ marker line giving the column.
            j = i + 1
            if j < len(lines) and lines[j].startswith("    ") and not PY_FILE.match(lines[j]):
                code = lines[j]
                taken.add(j)
                j += 1
                if j < len(lines) and MARKERS.match(lines[j]) and lines[j].strip():
                    marker = lines[j]
                    indent = len(code) - len(code.lstrip())
                    first = len(marker) - len(marker.lstrip())
                    raw.snippet, raw.snippet_col = code, max(0, first - indent)
                    taken.add(j)
                    j += 1
            section.append(raw)
            i = j
            continue
        elif section and ln.strip() and len(ln) - len(ln.lstrip()) <= base_indent and _EXC_LINE.match(ln.lstrip()):
            # The exception line ends a traceback: "NameError: name 'x' is not defined".
            taken.add(i)
            close_section(ln.strip())
            base_indent = 0
        elif section and ln.strip().startswith("[Previous line repeated"):
            taken.add(i)
        i += 1
    if section:
        close_section(None)
    return [t for t in traces if t.frames]


_DOCTEST_FILE = re.compile(r'^File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<name>\S+)\s*$')
_DOCTEST_LABELS = ("Failed example:", "Exception raised:", "Expected:", "Got:", "Expected nothing", "Got nothing")


def parse_doctest(lines: list[str], taken: set[int]) -> list[Trace]:
    """doctest's `File "m.py", line N, in m.f` / `Failed example:` report. Its indented body may quote
    the example's own traceback, which the Python recogniser reads (the report's `end` covers it)."""
    traces = []
    for i, ln in enumerate(lines):
        if i in taken or not ln.startswith('File "') or i + 1 >= len(lines) or lines[i + 1].strip() != "Failed example:":
            continue
        if not (m := _DOCTEST_FILE.match(ln)):
            continue
        j = i + 1
        while j < len(lines) and (lines[j].startswith((" ", "\t")) or lines[j].strip() in _DOCTEST_LABELS or not lines[j].strip()):
            if lines[j].strip() in _DOCTEST_LABELS:
                taken.add(j)
            j += 1
        taken.add(i)
        example = lines[i + 2].strip() if i + 2 < len(lines) else ""
        raw = Raw(at=i, path=m["path"], line=int(m["line"]), function=m["name"], message=f"doctest failed: {example}")
        traces.append(Trace(start=i, frames=[raw], stack=False, end=j - 1))
    return traces
