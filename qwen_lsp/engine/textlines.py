"""Small pure helpers over lines of text, for edit application: line endings, splitting,
blank-line trimming, offsets."""

from __future__ import annotations

import re

def to_lf(s: str) -> str:
    return s.replace("\r\n", "\n")


def detect_eol(text: str) -> str:
    """The file's line ending: CRLF when most of its newlines are CRLF."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf * 2 >= text.count("\n") else "\n"


def split_lines(text: str) -> list[str]:
    """Lines with their endings. Unlike str.splitlines, only "\\n" ends a line
    (form feeds and U+2028 inside code must not split it)."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def lines(s: str) -> list[str]:
    """Lines of an LF string without endings; a final newline does not add an empty line."""
    if not s:
        return []
    return (s[:-1] if s.endswith("\n") else s).split("\n")


def trim_blank(lines: list[str]) -> tuple[list[str], int, int]:
    """Strip leading/trailing blank lines; also return how many were stripped at each end."""
    start, stop = 0, len(lines)
    while start < stop and not lines[start].strip():
        start += 1
    while stop > start and not lines[stop - 1].strip():
        stop -= 1
    return lines[start:stop], start, len(lines) - stop


def trim_blank_up_to(lines: list[str], lead: int, trail: int) -> list[str]:
    _, has_lead, has_trail = trim_blank(lines)
    if has_lead == len(lines):  # all blank
        return []
    return lines[min(lead, has_lead) : len(lines) - min(trail, has_trail)]


def find_all(text: str, sub: str) -> list[int]:
    """Start offsets of every (possibly overlapping) occurrence."""
    found, i = [], text.find(sub)
    while i >= 0:
        found.append(i)
        i = text.find(sub, i + 1)
    return found


def line_at(text: str, offset: int) -> int:
    """1-based line number of the character at `offset`."""
    return text.count("\n", 0, offset) + 1


def nonblank_count(lines: list[str]) -> int:
    return sum(1 for line in lines if line.strip())
