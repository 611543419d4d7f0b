"""Text clean-up before recognising: terminal escapes, and cutting long outputs around their failure."""

from __future__ import annotations

import re

_ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    """Remove terminal escapes, resolve carriage-return redraws and backspaces."""
    text = _ANSI_RE.sub("", text).replace("\r\n", "\n")
    if "\r" not in text and "\b" not in text:
        return text
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


# Strong markers: a traceback, a panic, a compiler error. Weak ones ("error" in a log line) only count when
# there is no strong one, so a routine "connection error: timeout" does not pull the window away.
_STRONG_RE = re.compile(
    r"Traceback \(most recent call last\)|Exception Group Traceback|^\S+:\d+(?::\d+)?: (?:fatal )?error|^error(\[\w+\])?:|^[\w.]*Error: |\berror TS\d+|panicked at|"
    r"^panic: |^fatal error: |Exception in thread|^E\s{2,}|^FAILED |^_{3,} .+ _{3,}$|^==\d+==ERROR|WARNING: DATA RACE|"
    r"Fatal error: |Uncaught |^\s+at .+:\d+|^--- FAIL",
    re.MULTILINE,
)
_WEAK_RE = re.compile(r"error|panic|exception|failed|not found|no such file", re.IGNORECASE)
# Rare words first: once one is found, the rest only search the text before it.
_STRONG_WORDS = ("Traceback", "panic", "Exception", "\nE  ", "FAILED", "___", "==ERROR", "DATA RACE", "Uncaught", "--- FAIL", "    at ", "\tat ", "rror")
_WEAK_WORDS = ("error", "panic", "exception", "failed", "not found", "no such file")


def _first_match(text: str, words: tuple[str, ...], pattern: re.Pattern[str], lower: bool, limit: int) -> int | None:
    """Offset of the first line holding a failure marker (substring search finds candidates, the regex confirms)."""
    hay = text.lower() if lower else text
    best: int | None = None
    for word in words:
        pos = hay.find(word, 0, len(hay) if best is None else best)
        tries = 0
        while pos != -1 and (best is None or pos < best) and tries < limit:  # a word on every line is noise
            tries += 1
            start = hay.rfind("\n", 0, pos + (1 if word.startswith("\n") else 0)) + 1
            end = hay.find("\n", pos + 1)
            end = len(hay) if end == -1 else end
            if pattern.search(text[start:end]):
                best = start
                break
            pos = hay.find(word, end, len(hay) if best is None else best)
    return best


def _first_failure(text: str) -> int | None:
    """Offset of the first line that looks like a failure: a strong marker if there is one."""
    strong = _first_match(text, _STRONG_WORDS, _STRONG_RE, lower=False, limit=2000)
    return strong if strong is not None else _first_match(text, _WEAK_WORDS, _WEAK_RE, lower=True, limit=50)


def truncate_output(text: str, max_lines: int = 200, *, max_line_chars: int = 1000) -> str:
    """Keep the head, the tail and a window around the first failure of a long output.

    The tail is where a failing run usually ends up; the window around the first
    failure keeps the root cause when it scrolled far up (first compiler error,
    first failing test, a traceback in the middle of a long log)."""
    lines = text.split("\n")
    n = len(lines)
    if n <= max_lines:
        return "\n".join(_capped(lines, max_line_chars))
    head = max(1, max_lines // 6)
    tail = max(1, max_lines * 2 // 5)
    window = max(0, max_lines - head - tail)
    keep = [(0, head), (n - tail, n)]
    # The middle is searched as a slice of the text (no join of ~n lines); only kept lines are capped.
    lo_off = sum(map(len, lines[:head])) + head
    hi_off = len(text) - sum(map(len, lines[n - tail :])) - tail
    middle = text[lo_off:hi_off]
    first = _first_failure(middle)
    if first is not None and window:
        anchor = head + middle.count("\n", 0, first)
        start = max(head, anchor - window // 4)
        keep.append((start, min(n, start + window)))
    merged: list[list[int]] = []
    for lo, hi in sorted(keep):
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    out: list[str] = []
    pos = 0
    for lo, hi in merged:
        if lo > pos:
            out.append(f"[... {lo - pos} lines omitted ...]")
        out.extend(_capped(lines[lo:hi], max_line_chars))
        pos = hi
    if pos < n:
        out.append(f"[... {n - pos} lines omitted ...]")
    return "\n".join(out)


def _capped(lines: list[str], max_line_chars: int) -> list[str]:
    if max(map(len, lines), default=0) <= max_line_chars:
        return lines
    return [ln if len(ln) <= max_line_chars else ln[:max_line_chars] + " [...]" for ln in lines]


# --------------------------------------------------------------------------- per-line prefixes

# Fields a log shipper, a container runtime or a logging formatter puts in front of every line.
_TS = r"\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?"
_LEVEL = r"\[?(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRITICAL|FATAL)\]?"
_FIELD = r"\[[\w.:/@-]+\]"
_PREFIX_RE = re.compile(rf"^(?:[\w.-]+ +\| | +{_FIELD} |(?:(?:{_TS}|{_LEVEL}|{_FIELD}) )*(?:{_TS}|{_FIELD}) (?:(?:{_LEVEL}|{_FIELD}) )*)")
_LOC_IN_PREFIX = re.compile(r"\.[A-Za-z]\w*:\d+\b")
_PREFIX_START = frozenset(" 0123456789[abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.-")


def strip_prefixes(lines: list[str]) -> list[str]:
    """Drop per-line prefixes (`web-1  | `, an ISO timestamp, `[worker-3] INFO`, Ant's `    [javac] `) when they repeat down the output.

    A prefix must be on at least two lines and a fifth of the non-empty ones, so
    a single `[1/3] Building` line of a plain output is left alone. The text
    after the prefix keeps its indentation: a traceback stays a traceback."""
    cut: list[int] = []
    non_empty = 0
    for ln in lines:
        if not ln:
            cut.append(0)
            continue
        non_empty += 1
        m = _PREFIX_RE.match(ln) if ln[0] in _PREFIX_START else None
        # "[ERROR:run.py:7] job failed" (a logging format with the caller's file and line): the prefix is the location
        cut.append(m.end() if m and not _LOC_IN_PREFIX.search(ln, 0, m.end()) else 0)
    hits = sum(1 for c in cut if c)
    if hits < 2 or hits * 5 < non_empty:
        return strip_changing_prefixes(lines)
    return [ln[c:] if c else ln for ln, c in zip(lines, cut, strict=True)]


# Tokens a prefix of changing values is made of: numbers and times (`#7`, `0.224`, `[0.361820]`, `0.137s`,
# `14:53:27.425190`, `[4/5]`), and fixed words (`Dec`, `host`, `myapp[4242]:`, `[step`).
_NUM_TOKEN = re.compile(r"^[\[(#]?\d[\d:.,/TZ+-]*(?:s|ms)?[\])]?:?$")
_WORD_TOKEN = re.compile(r"^\[?[A-Za-z][\w.-]*(?:\[\d+\])?[:\]]?$")
_DIGITS = re.compile(r"\d+")
_SAMPLE = 500  # lines that decide the prefix shape; the cut applies to every line of that shape
_LOCATION_WORD = re.compile(r"^(?:line|col|column|row|ln)[:,]?$", re.IGNORECASE)


def _prefix_shape(line: str) -> list[str]:
    """Shapes of the leading prefix-like tokens, digits folded (`#7 0.224` -> ["#0", "0.0"])."""
    shape: list[str] = []
    for tok in line.lstrip(" ").split(" ", 7)[:7]:
        if _NUM_TOKEN.match(tok):
            shape.append(_DIGITS.sub("0", tok))
        elif _WORD_TOKEN.match(tok):
            shape.append(tok)
        else:
            break
    return shape


def strip_changing_prefixes(lines: list[str]) -> list[str]:
    """Drop a per-line prefix whose value changes on every line (a `ts` timestamp, a build step
    counter, elapsed seconds, a syslog header): the same token shapes, digits aside, on most lines.

    The shape must hold a number that differs between lines and be at least two tokens long
    (or one time-like token), so `#0` frame numbers or a column of words are left alone."""
    sample = [ln for ln in lines[:_SAMPLE * 4] if ln.strip()][:_SAMPLE]
    if len(sample) < 3:
        return lines
    counts: dict[tuple[str, ...], int] = {}
    for ln in sample:
        shape = _prefix_shape(ln)
        for k in range(1, len(shape) + 1):
            key = tuple(shape[:k])
            counts[key] = counts.get(key, 0) + 1
    need = max(3, len(sample) * 3 // 5)
    best = max((key for key, n in counts.items() if n >= need), key=len, default=None)
    if best is None or not any(t[:1].isdigit() or t[1:2].isdigit() for t in best):
        return lines
    if any(_LOCATION_WORD.match(t) for t in best):  # "line 6 column 1 - Error: ..." (tidy): a location, not a prefix
        return lines
    if len(best) == 1 and not re.search(r"\d\.\d|\d:\d+:\d", best[0]):  # one token: a time, not a `2:10` row
        return lines
    k = len(best)
    values = {" ".join(ln.lstrip(" ").split(" ", k)[:k]) for ln in sample[:50]}
    if len(values) < 2:  # the same value on every line is a label, not a changing prefix: strip_prefixes' business
        return lines
    parts = [re.escape(t).replace("0", r"\d+") if _NUM_TOKEN.match(t) else re.escape(t) for t in best]
    prefix = re.compile("^ *" + " ".join(parts) + "(?: |$)")
    return [prefix.sub("", ln, count=1) for ln in lines]


# --------------------------------------------------------------------------- lines wrapped by a terminal

_WRAPPED_LOC = re.compile(r'File "[^"]+", line \d+|[\w./\\@-]+\.\w+:\d+')


def unwrap_terminal(lines: list[str]) -> list[str]:
    """Join lines a terminal wrapped in the middle of a location (text read back from a terminal buffer).

    Only a line that leaves a quote or a parenthesis open and whose next line
    starts in column 0 is a candidate, and only a join that puts a location
    across the seam is kept: `File "/long/pa` + `th.py", line 3` becomes one line."""
    if max(map(len, lines), default=0) < 40:
        return lines
    out: list[str] = []
    i = 0
    n = len(lines)
    while i < n:
        ln = lines[i]
        while (
            i + 1 < n
            and len(ln) >= 40
            and (
                lines[i + 1][:1] not in ("", " ", "\t") and (ln.count('"') % 2 == 1 or ln.rfind("(") > ln.rfind(")"))
                or ln.endswith('",') and lines[i + 1].startswith(" line ")  # wrapped right after a quoted path
            )
        ):
            joined = ln + lines[i + 1]
            m = next((m for m in _WRAPPED_LOC.finditer(joined, max(0, len(ln) - 300)) if m.start() < len(ln) < m.end()), None)
            if m is None:
                break
            ln = joined
            i += 1
        out.append(ln)
        i += 1
    return out
