"""Which line of HEAD's version of a file each line of the editor's buffer is.

The history of the failing lines (`git log -L`, `git blame`) depends on HEAD and on which of
HEAD's lines they are, not on where an edit elsewhere in the buffer moved them. Asked in HEAD's
line numbers, one answer serves every buffer state with those lines unchanged (the language
server caches it); lines the buffer changed or added have no HEAD line: they are uncommitted.

Pure functions on lists of lines.
"""

from __future__ import annotations

import difflib

MAX_CHANGED = 4000  # lines between the common head and tail; beyond that nothing is mapped


def to_head(buffer: list[str], head: list[str], wanted: list[int]) -> dict[int, int]:
    """1-based buffer line -> 1-based HEAD line, for the `wanted` lines the buffer has unchanged.

    The common first and last lines are matched directly; only the part in between (what the
    edits touched, usually a few lines) is diffed."""
    start = 0
    limit = min(len(buffer), len(head))
    while start < limit and buffer[start] == head[start]:
        start += 1
    end = 0
    while end < limit - start and buffer[-1 - end] == head[-1 - end]:
        end += 1
    buf_mid, head_mid = buffer[start : len(buffer) - end], head[start : len(head) - end]
    shift = len(head) - len(buffer)
    middle: dict[int, int] = {}
    if buf_mid and head_mid and max(len(buf_mid), len(head_mid)) <= MAX_CHANGED:
        matcher = difflib.SequenceMatcher(None, head_mid, buf_mid, autojunk=False)
        for a, b, size in matcher.get_matching_blocks():
            for k in range(size):
                middle[start + b + k] = start + a + k
    out: dict[int, int] = {}
    for line in wanted:
        i = line - 1
        if 0 <= i < start:
            out[line] = line
        elif len(buffer) - end <= i < len(buffer):
            out[line] = line + shift
        elif i in middle:
            out[line] = middle[i] + 1
    return out
