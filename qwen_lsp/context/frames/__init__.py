"""Terminal output (tracebacks, compiler and linter output) -> structured frames.

Each recogniser is a function over the list of lines that claims the lines it
understands and returns "traces": a stack trace (several frames, outermost
first) or a single diagnostic. Recognisers run from the most specific to the
generic `path:line[:col]: message`, so a line is read once by the parser that
knows its format best. Paths are resolved against the workspace at the end.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal
from urllib.parse import unquote

from pydantic import BaseModel

Severity = Literal["error", "warning", "info"]


class Frame(BaseModel):
    path: str  # absolute when it could be made absolute, else as printed ("<frozen ...>", "Main.java")
    line: int  # 1-based
    column: int | None = None  # 1-based
    function: str | None = None
    message: str
    severity: Severity
    library: bool = False  # site-packages, node_modules, stdlib, toolchain sources
    resolved: str | None = None  # workspace-relative POSIX path for a user file inside the workspace
    trace: int = 0  # frames of one stack trace (or one diagnostic) share this number


# --------------------------------------------------------------------------- ANSI / truncation

# CSI (colours, cursor moves), OSC (hyperlinks, titles) and the two-byte escapes.
_ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    """Remove terminal escapes, resolve carriage-return redraws and backspaces."""
    text = _ANSI_RE.sub("", text).replace("\r\n", "\n")
    out = []
    for line in text.split("\n"):
        if "\r" in line:  # progress bars redraw the line; the last redraw is what was visible
            parts = [p for p in line.split("\r") if p]
            line = parts[-1] if parts else ""
        while "\b" in line:  # "x\bx" overstrike, as man pages and some progress output use
            shorter = re.sub(r"[^\b]\b", "", line)
            line = shorter if shorter != line else line.replace("\b", "")
        out.append(line)
    return "\n".join(out)


_FAILURE_RE = re.compile(
    r"Traceback \(most recent call last\)|^\S.*?error(\[\w+\])?:|\berror TS\d+|panicked at|^panic: |"
    r"Exception in thread|^E\s{2,}|^FAILED |^_{3,} .+ _{3,}$|: command not found|No such file or directory|"
    r"^\s+at .+:\d+",
    re.IGNORECASE | re.MULTILINE,
)


_FAILURE_WORDS = ("traceback", "error", "panic", "exception", "failed", "not found", "no such file", "\ne ", "    at ", "\tat ", "___")


def _first_failure(text: str) -> int | None:
    """Offset of the first line that looks like a failure.

    Outputs can be hundreds of thousands of lines: substring search (C speed)
    finds candidates, the regex only confirms their lines."""
    low = text.lower()
    best: int | None = None
    for word in _FAILURE_WORDS:
        pos = low.find(word)
        tries = 0
        while pos != -1 and (best is None or pos < best) and tries < 2000:  # a word on every line is noise
            tries += 1
            start = low.rfind("\n", 0, pos + (1 if word.startswith("\n") else 0)) + 1
            end = low.find("\n", pos + 1)
            end = len(low) if end == -1 else end
            if _FAILURE_RE.search(text[start:end]):
                best = start
                break
            pos = low.find(word, end)
    return best


def truncate_output(text: str, max_lines: int = 200, *, max_line_chars: int = 1000) -> str:
    """Keep the head, the tail and a window around the first failure of a long output.

    The tail is where a failing run usually ends up; the window around the first
    failure keeps the root cause when it scrolled far up (first compiler error,
    first failing test)."""
    lines = [ln if len(ln) <= max_line_chars else ln[:max_line_chars] + " [...]" for ln in text.split("\n")]
    if len(lines) <= max_lines:
        return "\n".join(lines)
    head = max(1, max_lines // 6)
    tail = max(1, max_lines * 2 // 5)
    window = max(0, max_lines - head - tail)
    keep: set[int] = set(range(head)) | set(range(len(lines) - tail, len(lines)))
    middle = "\n".join(lines[head : len(lines) - tail])
    first = _first_failure(middle)
    anchor = head + middle.count("\n", 0, first) if first is not None else None
    if anchor is not None and anchor < len(lines) - tail and window:
        start = max(head, anchor - window // 4)
        keep |= set(range(start, min(len(lines), start + window)))
    out: list[str] = []
    skipped = 0
    for i, ln in enumerate(lines):
        if i in keep:
            if skipped:
                out.append(f"[... {skipped} lines omitted ...]")
                skipped = 0
            out.append(ln)
        else:
            skipped += 1
    if skipped:
        out.append(f"[... {skipped} lines omitted ...]")
    return "\n".join(out)


# --------------------------------------------------------------------------- raw traces


@dataclass
class _Raw:
    at: int  # index of the output line it came from (for the make directory stack)
    path: str
    line: int
    column: int | None = None
    function: str | None = None
    message: str = ""
    severity: Severity = "error"
    library_hint: bool = False
    java_class: str | None = None  # fully qualified class, to find Main.java by package
    snippet: str | None = None  # code line as printed, for a caret column relative to it
    snippet_col: int | None = None  # 0-based caret offset into snippet.strip()


@dataclass
class _Trace:
    start: int
    frames: list[_Raw]
    stack: bool = True  # a call stack: only its deepest frames are errors, callers are info
    sections: list[list[_Raw]] = field(default_factory=list)  # chained exceptions


Parser = Callable[[list[str], set[int]], list[_Trace]]

# A path as tools print it: no spaces, no quotes, no parentheses.
_PATH = r"(?:[A-Za-z]:[\\/])?[^\s:()'\"<>,|*]+"
_KNOWN_NAMES = {"Makefile", "makefile", "GNUmakefile", "Dockerfile", "Rakefile", "Justfile", "justfile", "BUILD", "WORKSPACE"}
_SHELLS = {"bash", "sh", "zsh", "dash", "ksh", "-bash", "fish"}


def _plausible_path(p: str) -> bool:
    if p.isdigit() or "://" in p:
        return False
    name = PurePosixPath(p.replace("\\", "/")).name
    return "/" in p or "\\" in p or name in _KNOWN_NAMES or bool(re.search(r"\.[A-Za-z][\w+-]*$", name))


def _lint_severity(code: str) -> Severity:
    # Syntax errors and undefined names break the program; the rest is style.
    if code.startswith(("E9", "F82", "F63", "F7")) or code in {"F821", "F822", "F823"}:
        return "error"
    return "warning"


def _severity_word(word: str) -> Severity:
    word = word.lower()
    if word in {"error", "fatal error", "fatal", "e"}:
        return "error"
    if word in {"warning", "warn", "w"}:
        return "warning"
    return "info"


# --------------------------------------------------------------------------- Python

_PY_HEADER = re.compile(r"^\s*Traceback \(most recent call last\):\s*$")
_PY_FILE = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?\s*$')
_PY_CHAIN = re.compile(
    r"^\s*(During handling of the above exception, another exception occurred:|"
    r"The above exception was the direct cause of the following exception:)\s*$"
)
_MARKERS = re.compile(r"^\s*[\^~]+[\s\^~]*$")


def _parse_python(lines: list[str], taken: set[int]) -> list[_Trace]:
    traces: list[_Trace] = []
    trace: _Trace | None = None
    section: list[_Raw] = []
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

    i = 0
    while i < len(lines):
        if i in taken:
            i += 1
            continue
        ln = lines[i]
        if _PY_CHAIN.match(ln) and trace is not None:
            chained = True
            taken.add(i)
        elif _PY_HEADER.match(ln):
            if trace is None or not chained:
                trace = _Trace(start=i, frames=[])
                traces.append(trace)
            chained = False
            section = []
            taken.add(i)
        elif m := _PY_FILE.match(ln):
            if trace is None or (not section and not chained and not _PY_HEADER.match(lines[i - 1] if i else "")):
                # A SyntaxError in the main script has no "Traceback" header.
                if trace is None or trace.frames:
                    trace = _Trace(start=i, frames=[])
                    traces.append(trace)
            raw = _Raw(at=i, path=m["path"], line=int(m["line"]), function=m["func"])
            taken.add(i)
            # The code line, then an optional ^^^/~~~ marker line giving the column.
            j = i + 1
            if j < len(lines) and lines[j].startswith("    ") and not _PY_FILE.match(lines[j]):
                code = lines[j]
                taken.add(j)
                j += 1
                if j < len(lines) and _MARKERS.match(lines[j]) and lines[j].strip():
                    marker = lines[j]
                    indent = len(code) - len(code.lstrip())
                    first = len(marker) - len(marker.lstrip())
                    raw.snippet, raw.snippet_col = code, max(0, first - indent)
                    taken.add(j)
                    j += 1
            section.append(raw)
            i = j
            continue
        elif section and ln.strip() and not ln.startswith((" ", "\t")):
            # The exception line ends a traceback: "NameError: name 'x' is not defined".
            taken.add(i)
            close_section(ln.strip())
        elif section and ln.strip().startswith("[Previous line repeated"):
            taken.add(i)
        i += 1
    if section:
        close_section(None)
    return [t for t in traces if t.frames]


# --------------------------------------------------------------------------- pytest

_PYTEST_BANNER = re.compile(r"^={3,} (FAILURES|ERRORS) ={3,}$")
_PYTEST_END = re.compile(r"^={3,} .* ={3,}$|^={5,}$")
_PYTEST_TEST = re.compile(r"^_{3,} (.+?) _{3,}$")
_PYTEST_SEP = re.compile(r"^(?:_ ){3,}_?\s*$")
_PYTEST_CAPTURED = re.compile(r"^-{3,} (Captured|generated) .* -{3,}$")
_PYTEST_LOC = re.compile(rf"^(?P<path>{_PATH}):(?P<line>\d+):(?: (?P<rest>.*))?$")
_PYTEST_DEF = re.compile(r"^\s*(?:async\s+)?def (\w+)\(")
_PY_EXC_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Iteration)\b")


def _parse_pytest(lines: list[str], taken: set[int]) -> list[_Trace]:
    traces: list[_Trace] = []
    in_failures = False
    in_captured = False
    trace: _Trace | None = None
    e_blocks: list[list[str]] = []
    last_def: str | None = None
    exc_name: str | None = None

    def finish() -> None:
        if trace is None or not trace.frames:
            return
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
            trace = _Trace(start=i, frames=[])
            e_blocks, last_def, exc_name, in_captured = [], None, None, False
            taken.add(i)
            continue
        if trace is None:
            continue
        if _PYTEST_CAPTURED.match(ln):
            in_captured = True
            continue
        if in_captured:
            continue
        taken.add(i)
        if _PYTEST_SEP.match(ln):
            last_def = None
            continue
        if ln.startswith("E ") or ln == "E":
            text = ln[1:].strip()
            if f := _PY_FILE.match(ln[1:]):  # a SyntaxError while importing: its location is inside the E block
                trace.frames.append(_Raw(at=i, path=f["path"], line=int(f["line"]), function=f["func"]))
            elif _MARKERS.match(ln[1:]) and ln[1:].strip() and i >= 2 and _PY_FILE.match(lines[i - 2][1:]):
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
        if (m := _PYTEST_LOC.match(ln)) and _plausible_path(m["path"]):
            rest = (m["rest"] or "").strip()
            func = None
            if rest.startswith("in "):  # --tb=short: "path:line: in func"
                func = rest[3:].strip()
            else:  # --tb=long: "path:line: ExceptionName" under the code of that frame
                func = last_def
                if rest:
                    exc_name = rest
            trace.frames.append(_Raw(at=i, path=m["path"], line=int(m["line"]), function=func))
            last_def = None
    finish()
    return traces


# --------------------------------------------------------------------------- arrow style: rustc, cargo, ruff

_ARROW = re.compile(rf"^\s*(?:-->|╭─▶|┌─|,-\[)\s*(?P<path>{_PATH}):(?P<line>\d+):(?P<col>\d+)\]?\s*$")
_RUST_HEADER = re.compile(r"^(?P<sev>error|warning|note|help)(?:\[(?P<code>[\w-]+)\])?: (?P<msg>.+)$")
_LINT_HEADER = re.compile(r"^(?P<code>[A-Z]{1,4}\d{2,5}) (?P<msg>.+)$")


def _parse_arrow(lines: list[str], taken: set[int]) -> list[_Trace]:
    traces = []
    for i, ln in enumerate(lines):
        if i in taken or not (m := _ARROW.match(ln)) or not _plausible_path(m["path"]):
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
                message, severity = header, _severity_word(h["sev"])
            elif h := _LINT_HEADER.match(header):
                message, severity = header, _lint_severity(h["code"])
            else:
                header_at = None
        if header_at is None:
            continue
        if message.startswith(("error: could not compile", "warning: unused manifest")):
            continue
        taken.update({header_at, i})
        raw = _Raw(at=i, path=m["path"], line=int(m["line"]), column=int(m["col"]), message=message, severity=severity)
        traces.append(_Trace(start=header_at, frames=[raw], stack=False))
    return traces


# --------------------------------------------------------------------------- Rust panics

_RUST_PANIC_NEW = re.compile(rf"^thread '(?P<thread>[^']*)' (?:\(\d+\) )?panicked at (?P<path>{_PATH}):(?P<line>\d+):(?P<col>\d+):\s*$")
_RUST_PANIC_OLD = re.compile(
    rf"^thread '(?P<thread>[^']*)' panicked at '(?P<msg>.*)', (?P<path>{_PATH}):(?P<line>\d+):(?P<col>\d+)\s*$"
)
_RUST_BT_FN = re.compile(r"^\s*\d+:\s+(?:0x[0-9a-f]+ - )?(?P<func>.+?)\s*$")
_RUST_BT_AT = re.compile(rf"^\s+at (?P<path>{_PATH}):(?P<line>\d+)(?::(?P<col>\d+))?\s*$")


def _parse_rust_panic(lines: list[str], taken: set[int]) -> list[_Trace]:
    traces = []
    for i, ln in enumerate(lines):
        if i in taken:
            continue
        m = _RUST_PANIC_NEW.match(ln) or _RUST_PANIC_OLD.match(ln)
        if not m:
            continue
        taken.add(i)
        j = i + 1
        if "msg" in m.groupdict() and m["msg"] is not None:
            msg_lines = [m["msg"]]
        else:
            msg_lines = []
            while j < len(lines) and lines[j].strip() and not lines[j].startswith(("note:", "stack backtrace:")):
                if len(msg_lines) < 5:
                    msg_lines.append(lines[j].rstrip())
                taken.add(j)
                j += 1
        message = "panicked: " + "\n".join(msg_lines) if msg_lines else "panicked"
        frames: list[_Raw] = []
        # Optional RUST_BACKTRACE=1 block: "N: function" / "at path:line:col", innermost first.
        k = j
        while k < len(lines) and k < j + 3 and not lines[k].startswith("stack backtrace:"):
            k += 1
        if k < len(lines) and lines[k].startswith("stack backtrace:"):
            taken.add(k)
            func = None
            k += 1
            while k < len(lines):
                if a := _RUST_BT_AT.match(lines[k]):
                    frames.append(
                        _Raw(at=k, path=a["path"], line=int(a["line"]), column=int(a["col"]) if a["col"] else None, function=func)
                    )
                elif fn := _RUST_BT_FN.match(lines[k]):
                    func = re.sub(r"::h[0-9a-f]{16}$", "", fn["func"])
                elif not lines[k].startswith("note: Some details"):
                    break
                taken.add(k)
                k += 1
            frames.reverse()
        panic = _Raw(at=i, path=m["path"], line=int(m["line"]), column=int(m["col"]))
        if all((os.path.normpath(f.path), f.line) != (os.path.normpath(panic.path), panic.line) for f in frames):
            panic.function = m["thread"] if not frames else None
            frames.append(panic)
        for f in frames:
            f.message = message
        traces.append(_Trace(start=i, frames=frames))
    return traces


# --------------------------------------------------------------------------- Go panics

_GO_PANIC = re.compile(r"^(?:panic|fatal error): (?P<msg>.+)$")
_GO_GOROUTINE = re.compile(r"^goroutine \d+ \[.*\]:\s*$")
_GO_AT = re.compile(rf"^\t(?P<path>{_PATH}):(?P<line>\d+)(?: \+0x[0-9a-f]+)?\s*$")


def _parse_go_panic(lines: list[str], taken: set[int]) -> list[_Trace]:
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
        frames: list[_Raw] = []
        if j < len(lines) and _GO_GOROUTINE.match(lines[j]):
            taken.add(j)
            j += 1
            func = None
            while j < len(lines) and lines[j].strip():
                if a := _GO_AT.match(lines[j]):
                    frames.append(_Raw(at=j, path=a["path"], line=int(a["line"]), function=func, message=message))
                else:
                    func = re.sub(r"\(.*\)$", "", lines[j].strip()).removeprefix("created by ").split(" in goroutine")[0]
                taken.add(j)
                j += 1
        frames.reverse()
        if frames:
            traces.append(_Trace(start=start, frames=frames))
        i = j
    return traces


# --------------------------------------------------------------------------- JVM (Java, Kotlin, Scala)

_JVM_HEADER = re.compile(r"^(?:Exception in thread \"[^\"]*\" |Caused by: |\s*Suppressed: )?(?P<exc>[\w$.]+(?:Exception|Error|Throwable)\b.*)$")
_JVM_AT = re.compile(r"^\s+at (?:[\w.$-]+/)?(?P<cls>[\w$.]+)\.(?P<meth>[\w$<>-]+)\((?P<loc>[^)]*)\)")
_JVM_MORE = re.compile(r"^\s+\.\.\. \d+ (more|common frames omitted)\s*$")
_JVM_LIB = re.compile(r"^(java|javax|jdk|sun|com\.sun|kotlin|kotlinx|scala|org\.junit|junit|org\.gradle|org\.apache\.maven)\.")


def _parse_jvm(lines: list[str], taken: set[int]) -> list[_Trace]:
    traces: list[_Trace] = []
    trace: _Trace | None = None
    section: list[_Raw] = []
    message = ""
    last_at = -2

    def close() -> None:
        nonlocal section
        if section and trace is not None:
            section.reverse()  # the JVM prints innermost first
            for f in section:
                f.message = message
            trace.sections.append(section)
            trace.frames.extend(section)
        section = []

    for i, ln in enumerate(lines):
        if i in taken:
            continue
        if a := _JVM_AT.match(ln):
            loc = a["loc"]
            lm = re.match(r"^(?P<file>[^:]+):(?P<line>\d+)$", loc)
            if trace is None:
                trace = _Trace(start=i, frames=[])
                traces.append(trace)
            if lm:
                raw = _Raw(
                    at=i, path=lm["file"], line=int(lm["line"]), function=f"{a['cls']}.{a['meth']}",
                    library_hint=bool(_JVM_LIB.match(a["cls"])) or "/" in ln.split("at ", 1)[1].split("(")[0],
                    java_class=a["cls"],
                )
                section.append(raw)
            taken.add(i)
            last_at = i
        elif _JVM_MORE.match(ln) and last_at == i - 1:
            taken.add(i)
            last_at = i
        elif (h := _JVM_HEADER.match(ln)) and (i + 1 < len(lines) and _JVM_AT.match(lines[i + 1])):
            close()
            if not ln.startswith(("Caused by: ", "\t", " ")) or trace is None:
                trace = _Trace(start=i, frames=[])
                traces.append(trace)
            message = h["exc"].strip()
            taken.add(i)
        elif section and last_at == i - 1:
            close()
    close()
    return [t for t in traces if t.frames]


# --------------------------------------------------------------------------- Node.js

_NODE_AT = re.compile(r"^\s+at (?:(?P<func>.+?) \((?P<loc>.+)\)|(?P<loc2>\S+))\s*$")
_NODE_LOC = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+)$")
_NODE_HEADER = re.compile(rf"^(?P<path>{_PATH}):(?P<line>\d+)$")


def _parse_node(lines: list[str], taken: set[int]) -> list[_Trace]:
    traces = []
    i = 0
    while i < len(lines):
        if i in taken or not _NODE_AT.match(lines[i]):
            i += 1
            continue
        start = i
        frames: list[_Raw] = []
        while i < len(lines) and i not in taken and (a := _NODE_AT.match(lines[i])):
            loc = a["loc"] or a["loc2"]
            if lm := _NODE_LOC.match(loc.removeprefix("async ")):
                path = lm["path"]
                if path.startswith("file://"):
                    path = unquote(path[len("file://") :])
                func = a["func"]
                if func:
                    func = func.removeprefix("async ").removeprefix("new ")
                frames.append(_Raw(at=i, path=path, line=int(lm["line"]), column=int(lm["col"]), function=func))
            taken.add(i)
            i += 1
        if not frames:
            continue
        # The message block sits just above the frames: "TypeError: ..." (possibly multi-line).
        k = start - 1
        while k >= 0 and lines[k].strip() and k not in taken:
            k -= 1
        msg_start = k + 1
        message = lines[msg_start].strip() if msg_start < start else "error"
        taken.update(range(msg_start, start))
        # Uncaught errors are preceded by "path:line", the code and a caret.
        h = k - 1
        while h >= 0 and not lines[h].strip():
            h -= 1
        for back in range(h, max(-1, h - 4), -1):
            if back not in taken and _NODE_HEADER.match(lines[back]):
                taken.update(range(back, h + 1))
                break
        frames.reverse()
        for f in frames:
            f.message = message
        traces.append(_Trace(start=msg_start, frames=frames))
    return traces


# --------------------------------------------------------------------------- tsc, kotlinc K2

_TSC = re.compile(rf"^(?P<path>{_PATH})\((?P<line>\d+),(?P<col>\d+)\): (?P<sev>error|warning|message) (?P<code>TS\d+): (?P<msg>.*)$")
_TSC_PRETTY = re.compile(rf"^(?P<path>{_PATH}):(?P<line>\d+):(?P<col>\d+) - (?P<sev>error|warning|message) (?P<code>TS\d+): (?P<msg>.*)$")
_KOTLIN_K2 = re.compile(r"^(?P<sev>[ewi]): (?:file://)?(?P<path>[^\s:]+(?::\\[^\s:]+)?):(?P<line>\d+):(?P<col>\d+) (?P<msg>.*)$")


def _parse_tsc_kotlin(lines: list[str], taken: set[int]) -> list[_Trace]:
    traces = []
    for i, ln in enumerate(lines):
        if i in taken:
            continue
        if m := (_TSC.match(ln) or _TSC_PRETTY.match(ln)):
            raw = _Raw(
                at=i, path=m["path"], line=int(m["line"]), column=int(m["col"]),
                message=f"{m['sev']} {m['code']}: {m['msg']}", severity=_severity_word(m["sev"]),
            )
        elif m := _KOTLIN_K2.match(ln):
            sev = _severity_word(m["sev"])
            raw = _Raw(
                at=i, path=unquote(m["path"]), line=int(m["line"]), column=int(m["col"]),
                message=f"{'warning' if sev == 'warning' else sev}: {m['msg']}", severity=sev,
            )
        else:
            continue
        taken.add(i)
        traces.append(_Trace(start=i, frames=[raw], stack=False))
    return traces


# --------------------------------------------------------------------------- make and shell

_MAKE_RECIPE = re.compile(rf"^g?make(?:\[\d+\])?: \*\*\* \[(?P<path>{_PATH}):(?P<line>\d+): (?P<target>[^\]]+)\] (?P<what>Error \d+|Segmentation fault.*|Killed.*)")
_MAKE_DIR = re.compile(r"^g?make(?:\[\d+\])?: (?P<what>Entering|Leaving) directory ['`](?P<dir>.+)'\s*$")
_BASH_LINE = re.compile(rf"^(?P<path>{_PATH}): line (?P<line>\d+): (?P<msg>.+)$")
_DASH_LINE = re.compile(rf"^(?P<path>{_PATH}): (?P<line>\d+): (?P<msg>.+)$")


def _parse_make_shell(lines: list[str], taken: set[int]) -> list[_Trace]:
    traces = []
    for i, ln in enumerate(lines):
        if i in taken:
            continue
        if m := _MAKE_RECIPE.match(ln):
            # The recipe's own complaint ("/bin/sh: 1: frobnicate: not found") sits just above.
            k = i - 1
            while k > i - 4 and k >= 0 and (not lines[k].strip() or _MAKE_RECIPE.match(lines[k]) or _MAKE_DIR.match(lines[k])):
                k -= 1
            cause = lines[k].strip() if k >= 0 and k not in taken and lines[k].strip() else ""
            if k >= 0 and k not in taken and cause:
                taken.add(k)
            message = f"{cause} (make target '{m['target']}': {m['what']})" if cause else ln.strip()
            raw = _Raw(at=i, path=m["path"], line=int(m["line"]), message=message)
        elif m := (_BASH_LINE.match(ln) or _DASH_LINE.match(ln)):
            name = PurePosixPath(m["path"]).name
            if name in _SHELLS or not _plausible_path(m["path"]) and name not in _KNOWN_NAMES:
                continue
            raw = _Raw(at=i, path=m["path"], line=int(m["line"]), message=m["msg"].strip())
        else:
            continue
        taken.add(i)
        traces.append(_Trace(start=i, frames=[raw], stack=False))
    return traces


# --------------------------------------------------------------------------- generic "path:line[:col]: message"

_GENERIC = re.compile(rf"^\s*(?P<path>{_PATH}):(?P<line>\d+)(?::(?P<col>\d+))?:(?:\s+(?P<msg>.*))?$")
_SEV_PREFIX = re.compile(r"^(?P<sev>fatal error|error|warning|note|info|hint|remark)(?:\[[\w-]+\])?\s*:\s*", re.IGNORECASE)
_CODE_PREFIX = re.compile(r"^(?P<code>[A-Z]{1,4}\d{2,5})\b")
_GCC_FUNC = re.compile(rf"^(?P<path>{_PATH}): (?:In (?:static |member )?(?:function|constructor|destructor|instantiation of)[^‘'`]*[‘'`](?P<func>[^’']+)[’']|At top level):\s*$")


def _parse_generic(lines: list[str], taken: set[int]) -> list[_Trace]:
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
        if not m or not _plausible_path(m["path"]):
            continue
        msg = (m["msg"] or "").strip()
        severity: Severity = "error"
        if s := _SEV_PREFIX.match(msg):
            severity = _severity_word(s["sev"])
        elif c := _CODE_PREFIX.match(msg):
            severity = _lint_severity(c["code"])
        elif re.match(r"^\w*Warning\b", msg):
            severity = "warning"
        raw = _Raw(
            at=i, path=m["path"], line=int(m["line"]), column=int(m["col"]) if m["col"] else None,
            function=func_for.get(m["path"]), message=msg or "error", severity=severity,
        )
        taken.add(i)
        traces.append(_Trace(start=i, frames=[raw], stack=False))
    return traces


# Most specific first: a generic "path:line:" would otherwise eat pytest's location lines.
_PARSERS: tuple[Parser, ...] = (
    _parse_pytest,
    _parse_python,
    _parse_rust_panic,
    _parse_arrow,
    _parse_go_panic,
    _parse_jvm,
    _parse_node,
    _parse_tsc_kotlin,
    _parse_make_shell,
    _parse_generic,
)


# --------------------------------------------------------------------------- resolution

_LIBRARY_RE = re.compile(
    r"(^|/)(site-packages|dist-packages|node_modules|\.cargo/registry|\.cargo/git|\.rustup|pkg/mod|\.m2/repository)(/|$)"
    r"|^/rustc/|^/usr/(lib|include|local/lib|local/include|share)/|/lib/python\d[\d.]*/|/go[\d.-]*/src/|^/usr/local/go/"
)


class _Resolver:
    """Turns printed paths into absolute ones and workspace-relative ones. Holds per-call caches only."""

    def __init__(self, cwd: Path, workspace: Path) -> None:
        self.workspace = Path(os.path.abspath(workspace))
        self.cwd = Path(os.path.abspath(self.workspace / cwd))
        self.real_ws = Path(os.path.realpath(self.workspace))
        self._by_name: dict[str, list[Path]] | None = None

    def _files_named(self, name: str) -> list[Path]:
        if self._by_name is None:
            self._by_name = {}
            skip = {"node_modules", "target", "build", "dist", "out", "__pycache__", "venv"}
            count = 0
            for root, dirs, files in os.walk(self.workspace):
                dirs[:] = [d for d in dirs if not d.startswith(".") and d not in skip]
                for f in files:
                    if f.endswith((".java", ".kt", ".scala", ".groovy", ".kts")):
                        self._by_name.setdefault(f, []).append(Path(root) / f)
                count += len(files)
                if count > 200_000:  # a pathological workspace: give up on the search, not on the parse
                    break
        return self._by_name.get(name, [])

    def relative(self, p: Path) -> str | None:
        for base, cand in ((self.workspace, p), (self.real_ws, Path(os.path.realpath(p)))):
            try:
                rel = cand.relative_to(base)
            except ValueError:
                continue
            return rel.as_posix() if str(rel) != "." else None
        return None

    def resolve(self, raw: _Raw, cwd: Path) -> tuple[str, bool, str | None]:
        printed = raw.path
        if printed.startswith("file://"):
            printed = unquote(printed[len("file://") :])
        if printed.startswith(("<", "node:", "internal/")) or printed in {"native", "[eval]"}:
            return printed, True, None
        if raw.java_class is not None:
            return self._resolve_jvm(raw, printed)
        p = Path(printed.replace("\\", "/")) if not re.match(r"^[A-Za-z]:[\\/]", printed) else Path(printed)
        if not p.is_absolute():
            candidates = [cwd / p, self.workspace / p]
            p = next((c for c in candidates if c.is_file()), candidates[0])
        p = Path(os.path.normpath(p))
        library = raw.library_hint or bool(_LIBRARY_RE.search(p.as_posix()))
        rel = None if library else self.relative(p)
        return str(p), library, rel

    def _resolve_jvm(self, raw: _Raw, printed: str) -> tuple[str, bool, str | None]:
        if raw.library_hint:
            return printed, True, None
        cls = raw.java_class or ""
        package = cls.rsplit(".", 1)[0] if "." in cls else ""
        suffix = "/".join([*package.split("."), printed]) if package else printed
        found = self._files_named(printed)
        match = [f for f in found if f.as_posix().endswith("/" + suffix)] or (found if len(found) == 1 else [])
        if not match:
            return printed, False, None
        rel = self.relative(match[0])
        return str(match[0]), False, rel


def _column(raw: _Raw, abs_path: str) -> int | None:
    if raw.column is not None or raw.snippet is None or raw.snippet_col is None:
        return raw.column
    col = raw.snippet_col + 1
    try:
        with open(abs_path, encoding="utf-8", errors="replace") as fh:
            for n, text in enumerate(fh, 1):
                if n == raw.line:
                    found = text.find(raw.snippet.strip())
                    return col + (found if found >= 0 else len(text) - len(text.lstrip()))
    except OSError:
        pass
    return col


def _make_dirs(lines: list[str], cwd: Path) -> list[Path]:
    """The working directory in force at each line, following make's Entering/Leaving directory."""
    stack = [cwd]
    out = []
    for ln in lines:
        if m := _MAKE_DIR.match(ln):
            if m["what"] == "Entering":
                stack.append(cwd / m["dir"])
            elif len(stack) > 1:
                stack.pop()
        out.append(stack[-1])
    return out


# --------------------------------------------------------------------------- public API


def parse_output(text: str, *, cwd: Path, workspace: Path) -> list[Frame]:
    """Frames of every traceback and diagnostic in `text`, in output order.

    Within a stack trace frames go outermost first (as Python prints them), so
    the last frame of a trace is the deepest. The deepest user frame of each
    trace (and its innermost frame) carry severity "error"; callers are "info"."""
    lines = strip_ansi(text).split("\n")
    taken: set[int] = set()
    traces: list[_Trace] = []
    for parser in _PARSERS:
        try:
            traces.extend(parser(lines, taken))
        except Exception:  # a recogniser bug must not cost the user the other frames
            continue
    traces.sort(key=lambda t: t.start)
    resolver = _Resolver(cwd, workspace)
    dirs = _make_dirs(lines, resolver.cwd)
    out: list[Frame] = []
    for n, trace in enumerate(traces):
        frames: list[Frame] = []
        for raw in trace.frames:
            path, library, rel = resolver.resolve(raw, dirs[raw.at] if raw.at < len(dirs) else resolver.cwd)
            frames.append(
                Frame(
                    path=path, line=raw.line, column=_column(raw, path), function=raw.function,
                    message=raw.message, severity=raw.severity, library=library, resolved=rel, trace=n,
                )
            )
        if trace.stack:
            _stack_severities(frames, [len(s) for s in trace.sections] or [len(frames)])
        out.extend(frames)
    return out


def _stack_severities(frames: list[Frame], section_sizes: Iterable[int]) -> None:
    """In each section of a stack trace: innermost and deepest user frame are errors, callers info."""
    pos = 0
    for size in section_sizes:
        section = frames[pos : pos + size]
        pos += size
        if not section:
            continue
        for f in section:
            f.severity = "info"
        section[-1].severity = "error"
        user = [f for f in section if f.resolved and not f.library]
        if user:
            user[-1].severity = "error"


def primary_frame(frames: list[Frame]) -> Frame | None:
    """The location to fix: the last user frame in the workspace of the first failing trace.

    Errors win over warnings; a trace in library code only has no primary frame."""
    user = [f for f in frames if f.resolved and not f.library]
    if not user:
        return None
    pool = [f for f in user if f.severity == "error"] or [f for f in user if f.severity == "warning"] or user
    first = pool[0].trace
    in_trace = [f for f in user if f.trace == first]
    errors = [f for f in in_trace if f.severity == "error"]
    return (errors or in_trace)[-1]
