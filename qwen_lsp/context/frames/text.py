"""Text clean-up before recognising: terminal escapes, and cutting long outputs around their failure."""

from __future__ import annotations

import re

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
