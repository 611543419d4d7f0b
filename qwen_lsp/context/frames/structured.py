"""Structured log lines -> the text a terminal would have shown, before any recogniser reads them.

A JSON logger (structlog, python-json-logger, loguru's serialize, pino, a hand-made formatter) puts a
whole traceback in one string with its newlines escaped as `\\n`, or its frames as JSON objects
(`{"filename": ..., "lineno": ...}`). Decoded here: a JSON line becomes its level and message, then
every multi-line string it holds, line by line, and every list of frames as a Python-style traceback
(outermost first, as JSON loggers list them). A line cut short (so no longer valid JSON) that holds
an escaped traceback is unescaped as text. Lines that are not structured pass through unchanged.
"""

from __future__ import annotations

import json
import re
from typing import Any

_PATH_KEYS = ("filename", "abs_path", "file", "path", "pathname")
_LINE_KEYS = ("lineno", "line", "line_number", "lineNumber")
_LEVEL_KEYS = ("level", "levelname", "severity", "lvl")
_MESSAGE_KEYS = ("msg", "message", "event")
_ESCAPED_STACK = re.compile(r'\\n(?:\s+at |\s+File \\"|Traceback)|Traceback \(most recent call last\):\\n')
# Only a line holding an escaped newline or a frame's fields is worth decoding; the rest stay as printed.
_WORTH = re.compile(r'\\n|"(?:filename|lineno|line|abs_path|pathname)"\s*:')
_MAX_BLOCK = 2000  # lines of one pretty-printed JSON document
_MAX_CHARS = 200_000


def decode_structured(lines: list[str]) -> list[str]:
    out: list[str] = []
    i, n = 0, len(lines)
    while i < n:
        ln = lines[i]
        brace = ln.find("{")
        if 0 <= brace < 200 and len(ln) < _MAX_CHARS:
            if (
                ln[brace:].strip() == "{" and not ln[:brace].strip() and i + 1 < n and lines[i + 1].lstrip().startswith('"')
            ):  # pretty-printed (a key on the next line, not a C block): up to the closing brace
                end = _closing(lines, i, ln[:brace] + "}")
                if end is not None and (obj := _loads("\n".join(lines[i : end + 1]))) is not None:
                    out.extend(_render(obj, ""))
                    i = end + 1
                    continue
            elif ln.rstrip().endswith("}") and _WORTH.search(ln) and (obj := _loads(ln[brace:])) is not None:
                out.extend(_render(obj, ln[:brace]))
                i += 1
                continue
        if "\\n" in ln and _ESCAPED_STACK.search(ln):  # a JSON line cut short, a logfmt field
            out.extend(_unescape(ln).split("\n"))
        else:
            out.append(ln)
        i += 1
    return out


def _closing(lines: list[str], start: int, closer: str) -> int | None:
    for k in range(start + 1, min(len(lines), start + _MAX_BLOCK)):
        if lines[k].rstrip() in (closer, closer + ","):
            return k
    return None


def _loads(text: str) -> Any:
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _unescape(text: str) -> str:
    return text.replace("\\n", "\n").replace('\\"', '"').replace("\\t", "\t").replace("\\\\", "\\")


def _render(obj: dict[str, Any], prefix: str) -> list[str]:
    texts: list[str] = []
    stacks: list[list[str]] = []
    _walk(obj, texts, stacks, 0)
    level = next((obj[k] for k in _LEVEL_KEYS if isinstance(obj.get(k), str | int)), None)
    if isinstance(level, int):  # pino/bunyan numbers
        level = "error" if level >= 50 else "warning" if level >= 40 else "info"
    message = next((str(obj[k]) for k in _MESSAGE_KEYS if isinstance(obj.get(k), str)), "")
    head = f"{prefix}{level}: {message}" if level else prefix + (message or json.dumps(obj)[:300])
    out = [head.rstrip()]
    for t in texts:
        out.extend(t.rstrip("\n").split("\n"))
    for stack in stacks:
        out.extend(stack)
    return out


def _frame(d: dict[str, Any]) -> tuple[str, int, str | None] | None:
    path = next((d[k] for k in _PATH_KEYS if isinstance(d.get(k), str)), None)
    line = next((d[k] for k in _LINE_KEYS if isinstance(d.get(k), int) and not isinstance(d.get(k), bool)), None)
    if path is None or line is None:
        return None
    name = next((d[k] for k in ("name", "function", "func", "method") if isinstance(d.get(k), str)), None)
    return path, line, name


def _walk(node: Any, texts: list[str], stacks: list[list[str]], depth: int) -> None:
    if depth > 8:
        return
    if isinstance(node, str):
        if "\n" in node:
            texts.append(node)
    elif isinstance(node, list):
        for item in node:
            _walk(item, texts, stacks, depth + 1)
    elif isinstance(node, dict):
        for key, value in node.items():
            frames = [f for v in value if isinstance(v, dict) and (f := _frame(v))] if isinstance(value, list) else []
            if frames and len(frames) == len(value):  # a list of frames: a stack, outermost first
                stack = ["Traceback (most recent call last):"]
                stack += [f'  File "{p}", line {n}' + (f", in {fn}" if fn else "") for p, n, fn in frames]
                exc = node.get("exc_type") or node.get("type")
                stack.append(f"{exc}: {node.get('exc_value') or node.get('value') or ''}".rstrip() if exc else f"{key}: (frames)")
                stacks.append(stack)
            elif key not in ("locals",):
                _walk(value, texts, stacks, depth + 1)
