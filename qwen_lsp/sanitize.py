"""Untrusted text (model answers, program output, repository files) made safe to display.

A terminal obeys escape sequences and carriage returns, and an editor obeys
bidirectional overrides: either can hide a line from the diff a user reviews
before saying yes. Everything displayed that came from the model or the
workspace goes through `visible`, which keeps newline and tab and shows every
other control or invisible formatting character as a visible stand-in:

    ESC -> ␛ (and the other C0 controls -> their control pictures, \\r -> ␍, DEL -> ␡)
    C1 controls, bidi overrides, zero-width and line/paragraph separators -> \\u202e
    a byte that is not UTF-8 (decoded with surrogateescape) -> \\xe9

Pure functions, no I/O. Text to be *written* is never passed through here.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Any

# Control characters other than \n and \t, every "format" character (bidi controls,
# zero-width joiners, BOM, soft hyphen...), line/paragraph separators and lone surrogates.
_HIDDEN_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Cs"}
_KEPT = {"\n", "\t"}
_TRAILING_BLANKS = re.compile(r"[ \t]+$")


def _plain(text: str) -> bool:
    """Nothing to replace (the common case, checked in C): isprintable() is False for every
    hidden category, and also for a few harmless ones (no-break space), which take the slow path."""
    return text.replace("\n", "").replace("\t", "").isprintable()


def stand_in(char: str) -> str | None:
    """The visible replacement of `char`, or None when it displays as itself."""
    if char in _KEPT or unicodedata.category(char) not in _HIDDEN_CATEGORIES:
        return None
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # the Unicode control pictures: ␀ … ␛ … ␟ (␍ for \r)
    if code == 0x7F:
        return "\u2421"  # ␡
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"  # a raw byte kept by surrogateescape
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def parts(text: str) -> Iterator[tuple[str, bool]]:
    """`text` as runs of (displayed text, replaced?), so a caller can highlight the replacements."""
    for line in text.splitlines(keepends=True) if not _plain(text) else [text]:
        if _plain(line):  # most lines of a mostly clean text
            if line:
                yield line, False
            continue
        run: list[str] = []
        for char in line:
            shown = stand_in(char)
            if shown is None:
                run.append(char)
                continue
            if run:
                yield "".join(run), False
                run = []
            yield shown, True
        if run:
            yield "".join(run), False


def visible(text: str) -> str:
    """`text` with every hidden character shown as its stand-in (newline and tab kept)."""
    return "".join(shown for shown, _ in parts(text))


def one_line(text: str, limit: int | None = None) -> str:
    """`visible(text)` for a title or a label: newlines shown as ⏎, at most `limit` characters."""
    shown = visible(text).replace("\n", "\u23ce")
    if limit is not None and len(shown) > limit:
        shown = shown[: limit - 1].rstrip() + "…"
    return shown


def diff_line_parts(line: str) -> Iterator[tuple[str, bool]]:
    """One line of a unified diff (without its "\\n") for display: hidden characters replaced,
    and on an added or removed line trailing blanks shown (· for a space, → for a tab), so a
    change to whitespace alone is never an invisible change."""
    body, blanks = line, ""
    if line.startswith(("+", "-")) and not line.startswith(("+++ ", "--- ")):
        match = _TRAILING_BLANKS.search(line, 1)
        if match is not None:
            body, blanks = line[: match.start()], match.group()
    yield from parts(body)
    if blanks:
        yield blanks.replace(" ", "\u00b7").replace("\t", "\u2192"), True


def diff_lines(diff: str) -> Iterator[tuple[str, list[tuple[str, bool]]]]:
    """(line, its display parts) of a unified diff split only at "\\n": a "\\r" inside a
    line is content, and is shown (str.splitlines would silently break the line there)."""
    for line in diff.removesuffix("\n").split("\n") if diff else []:
        yield line, list(diff_line_parts(line))


def valid_unicode(value: Any) -> Any:
    """`value` (text, or lists and dicts of it: a request's messages) with every lone surrogate gone,
    so that it encodes as UTF-8: a byte of a file that is not UTF-8, kept by surrogateescape (git's
    output, a latin-1 source), becomes U+FFFD as a UTF-8 decoder would show it. Untouched (the same
    object) when already valid, which keeps a prompt's prefix byte-stable."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            try:
                raw = value.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:  # a surrogate no decoder made (e.g. "\\ud800" in JSON)
                raw = value.encode("utf-8", "surrogatepass")
            return raw.decode("utf-8", "replace")
        return value
    if isinstance(value, list):
        cleaned = [valid_unicode(v) for v in value]
        return value if all(a is b for a, b in zip(cleaned, value)) else cleaned
    if isinstance(value, dict):
        pairs = {k: valid_unicode(v) for k, v in value.items()}
        return value if all(pairs[k] is v for k, v in value.items()) else pairs
    return value


def json_safe(json_text: str) -> str:
    """JSON text with every hidden character inside its strings written as a \\u escape:
    the same data, safe to print to a terminal (JSON encoders leave C1 and bidi characters raw)."""
    if _plain(json_text):
        return json_text
    return "".join(_json_escape(c) if c not in _KEPT and stand_in(c) is not None else c for c in json_text)


def _json_escape(char: str) -> str:
    units = char.encode("utf-16-be", "surrogatepass")  # a pair of \u escapes above U+FFFF
    return "".join(f"\\u{int.from_bytes(units[i:i + 2], 'big'):04x}" for i in range(0, len(units), 2))


def model_words(text: str, limit: int | None = 300) -> str:
    """What the model wrote (a fix's summary, its reason for no change), for a message, tooltip or
    report line: on one line with every hidden character shown, and labelled as the model's, so no
    front end presents the model's claims ("fixed, all tests pass") as qwen-lsp's own verdict."""
    text = text.strip()
    return f"the model says: “{one_line(text, limit)}”" if text else "the model gave no reason"
