"""Node.js stack traces: `    at f (path:line:col)`, the `path:line` header above uncaught errors and
SyntaxErrors (file:// URLs for ES modules), and the YAML stack of `node --test`'s TAP reporter."""

from __future__ import annotations

import re
from urllib.parse import unquote

from .model import PATH, Raw, Severity, Trace
from .severity import line_severity

_NODE_AT = re.compile(r"^\s+at (?:(?P<func>.+?) \((?P<loc>.+)\)|(?P<loc2>\S+))\s*$")
_NODE_LOC = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+)$")
_NODE_HEADER = re.compile(rf"^(?P<path>(?:file://)?{PATH}):(?P<line>\d+)$")
_ERROR_LINE = re.compile(r"^[\w.]*(?:Error|Exception)\b")
_TAP_STACK = re.compile(r"^(?P<indent>\s+)stack: \|-?\s*$")
_TAP_FRAME = re.compile(r"^\s+(?:(?P<func>[^()]+?) \()?(?P<loc>[^()\s]+:\d+:\d+)\)?\s*$")
_TAP_FIELD = re.compile(r"^\s+(?P<key>error|name|location): (?P<value>.*)$")


def parse_node(lines: list[str], taken: set[int]) -> list[Trace]:
    traces = []
    i = 0
    while i < len(lines):
        if i in taken or not _NODE_AT.match(lines[i]):
            i += 1
            continue
        start = i
        frames: list[Raw] = []
        while i < len(lines) and i not in taken and (a := _NODE_AT.match(lines[i])):
            loc = a["loc"] or a["loc2"]
            if lm := _NODE_LOC.match(loc.removeprefix("async ")):
                path = lm["path"]
                if path.startswith("file://"):
                    path = unquote(path[len("file://") :])
                func = a["func"]
                if func:
                    func = func.removeprefix("async ").removeprefix("new ")
                frames.append(Raw(at=i, path=path, line=int(lm["line"]), column=int(lm["col"]), function=func))
            taken.add(i)
            i += 1
        if not frames:
            continue
        # The message block sits just above the frames: "TypeError: ..." (possibly multi-line).
        k = start - 1
        while k >= 0 and lines[k].strip() and k not in taken:
            k -= 1
        msg_start = k + 1
        taken.update(range(msg_start, start))
        # Uncaught errors are preceded by "path:line", the code and a caret: after a blank line,
        # or (ES module link errors) in the same block as the message.
        header = None
        back = next((b for b in range(msg_start, start) if _NODE_HEADER.match(lines[b])), -1)
        if back >= 0:
            header = _NODE_HEADER.match(lines[back])
            block = [ln.strip() for ln in lines[back + 1 : start]]
            message = next((ln for ln in block if _ERROR_LINE.match(ln)), block[-1] if block else "error")
        else:
            message = lines[msg_start].strip() if msg_start < start else "error"
            h = k - 1
            while h >= 0 and not lines[h].strip():
                h -= 1
            for back in range(h, max(-1, h - 4), -1):
                if back not in taken and (header := _NODE_HEADER.match(lines[back])):
                    taken.update(range(back, h + 1))
                    break
        frames.reverse()
        if not header and all(_library(f.path) for f in frames):
            # A bundler's or linter's own stack (rollup, babel): its message names the user's file in a
            # format of its own; the lines above the stack are left to the other recognisers.
            taken.difference_update(range(msg_start, start))
        if header:
            # Where it was thrown; for a SyntaxError the only user location (the frames are the loader's).
            path = header["path"]
            path = unquote(path[len("file://") :]) if path.startswith("file://") else path
            if not frames or (frames[-1].path, frames[-1].line) != (path, int(header["line"])):
                frames.append(Raw(at=back, path=path, line=int(header["line"])))
        for f in frames:
            f.message = message
        # "(node:123) DeprecationWarning: ..." with --trace-warnings: a warning's stack, not a failure
        severity: Severity = "warning" if line_severity(message) == "warning" else "error"
        traces.append(Trace(start=msg_start, frames=frames, severity=severity))
    return traces


def _library(path: str) -> bool:
    return path.startswith("node:") or "/node_modules/" in path


def parse_node_tap(lines: list[str], taken: set[int]) -> list[Trace]:
    """`node --test` (TAP): a failing test's YAML block holds `stack: |-` and frames without `at`."""
    traces = []
    for i, ln in enumerate(lines):
        if i in taken or not (m := _TAP_STACK.match(ln)):
            continue
        fields: dict[str, str] = {}
        k = i - 1
        while k >= 0 and not lines[k].lstrip().startswith("---") and k > i - 40:
            if f := _TAP_FIELD.match(lines[k]):
                fields.setdefault(f["key"], f["value"].strip().strip("'\""))
            k -= 1
        frames: list[Raw] = []
        j = i + 1
        while j < len(lines) and (a := _TAP_FRAME.match(lines[j])) and len(lines[j]) - len(lines[j].lstrip()) > len(m["indent"]):
            if lm := _NODE_LOC.match(a["loc"]):
                path = lm["path"]
                path = unquote(path[len("file://") :]) if path.startswith("file://") else path
                func = (a["func"] or "").removeprefix("async ") or None
                frames.append(Raw(at=j, path=path, line=int(lm["line"]), column=int(lm["col"]), function=func))
            j += 1
        if not frames:
            continue
        taken.update(range(k, j))  # the YAML block: its `location:` is the test's declaration, not a frame
        error = fields.get("error", "").removeprefix("|-").strip()
        name = fields.get("name", "")
        message = f"{name}: {error}" if name and error else (error or name or "test failed")
        frames.reverse()
        for raw in frames:
            raw.message = message
        traces.append(Trace(start=i, frames=frames))
    return traces
