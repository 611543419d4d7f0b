"""Elisions: `...` lines (or `# ... existing code ...` comments) with which the model
stands for file lines it did not copy. Finding them, trimming them from the ends of an
edit, and telling the merge where a change next to one is ambiguous.

Pure functions on lines (without line endings)."""

from __future__ import annotations

import difflib
import re

from qwen_lsp.engine.indentation import squash

# `...` on its own line, or as a comment ("# ...", "// ... existing code ...", "/* ... */").
# A bare `...` is real code in Python (Ellipsis), so it counts as an elision only where
# old_string uses elisions too.
_COMMENT_ELISION = re.compile(r"^\s*(#|//|/\*|--|<!--|;)\s*(\.\.\.|…)")
_BARE_ELISION = re.compile(r"^\s*(\.\.\.|…)\s*$")
ELIDED = "\x00elided"  # what an elision line compares as


def is_elision(line: str, *, bare: bool) -> bool:
    return bool(_COMMENT_ELISION.match(line) or (bare and _BARE_ELISION.match(line)))


def has_elision(lines: list[str], *, bare: bool) -> bool:
    return any(is_elision(line, bare=bare) for line in lines)


def strip_outer_elisions(old: list[str], new: list[str]) -> tuple[list[str], list[str]]:
    """Drop elisions at the ends of old_string ("and more follows" says nothing to merge),
    and the matching ones at the ends of new_string. An elision only new_string has stays:
    the merge refuses it rather than guess what it stands for."""

    def trim(lines: list[str], front: bool) -> tuple[list[str], bool]:
        cut = False
        while lines and (not (end := lines[0 if front else -1]).strip() or is_elision(end, bare=True)):
            cut = cut or is_elision(end, bare=True)
            lines = lines[1:] if front else lines[:-1]
        return lines, cut

    old_front, cut_front = trim(old, True)
    old_both, cut_back = trim(old_front, False)
    if cut_front:
        new = trim(new, True)[0]
    if cut_back:
        new = trim(new, False)[0]
    return old_both, new


def deletion_next_to_elision(opcodes: list[tuple[str, int, int, int, int]], old: list[str], new: list[str]) -> bool:
    """A `...` in new_string next to a deletion (only blank lines between): how many of the
    old lines around it does the `...` keep? (difflib may pair a blank line across it.)
    The same when unchanged lines stand between them that the deletion ends with too (`...`,
    `}`, then a deleted block ending in `}`): that `}` may be either one, so the deleted lines
    may as well be lines the `...` keeps."""

    def deletes(op: tuple[str, int, int, int, int]) -> bool:
        tag, i1, i2, j1, j2 = op
        return tag != "equal" and any(s.strip() for s in old[i1:i2]) and not any(s.strip() for s in new[j1:j2])

    def blank(op: tuple[str, int, int, int, int]) -> bool:
        return op[0] == "equal" and not any(s.strip() for s in old[op[1] : op[2]])

    def slides(equal: tuple[str, int, int, int, int], deleted: tuple[str, int, int, int, int], step: int) -> bool:
        # the equal lines repeat at the deletion's far end: difflib could have paired them there
        size, (_, d1, d2, _, _) = equal[2] - equal[1], deleted
        far = old[d2 - size : d2] if step == 1 else old[d1 : d1 + size]
        return d2 - d1 >= size and [s.rstrip() for s in far] == [s.rstrip() for s in old[equal[1] : equal[2]]]

    for k, (tag, _, _, j1, j2) in enumerate(opcodes):
        if tag == "equal" or not any(is_elision(line, bare=True) for line in new[j1:j2]):
            continue
        for step in (-1, 1):
            n = k + step
            while 0 <= n < len(opcodes) and blank(opcodes[n]):
                n += step
            if 0 <= n < len(opcodes) and deletes(opcodes[n]):
                return True
            if 0 <= n < len(opcodes) and opcodes[n][0] == "equal" and 0 <= n + step < len(opcodes):
                if deletes(opcodes[n + step]) and slides(opcodes[n], opcodes[n + step], step):
                    return True
    return False


def split_elided_in_new(
    opcodes: list[tuple[str, int, int, int, int]], old: list[str], new: list[str], elided: list[bool]
) -> list[tuple[str, int, int, int, int]]:
    """Split "changed lines, then `# ... existing code ...`" (or the reverse) in new_string,
    replacing more old lines, into the change and the old lines the elision keeps.

    The changed lines replace as many old lines at the same end, one for one, and each
    must still resemble the line it replaces; otherwise the hunk is left for the caller
    to refuse.
    """
    out: list[tuple[str, int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in opcodes:
        marks = [j for j in range(j1, j2) if is_elision(new[j], bare=True)]
        changed = j2 - j1 - 1
        if tag != "replace" or len(marks) != 1 or any(elided[i1:i2]) or changed < 1 or changed >= i2 - i1:
            out.append((tag, i1, i2, j1, j2))
            continue
        if marks[0] == j2 - 1:  # changed lines first, then the elision
            pairs = list(zip(range(i1, i1 + changed), range(j1, j2 - 1), strict=True))
            split = [("replace", i1, i1 + changed, j1, j2 - 1), ("replace", i1 + changed, i2, j2 - 1, j2)]
        elif marks[0] == j1:  # the elision, then changed lines
            pairs = list(zip(range(i2 - changed, i2), range(j1 + 1, j2), strict=True))
            split = [("replace", i1, i2 - changed, j1, j1 + 1), ("replace", i2 - changed, i2, j1 + 1, j2)]
        else:
            out.append((tag, i1, i2, j1, j2))
            continue
        if all(_resembles(old[i], new[j]) for i, j in pairs):
            out.extend(split)
        else:
            out.append((tag, i1, i2, j1, j2))
    return out


def _resembles(a: str, b: str) -> bool:
    return difflib.SequenceMatcher(None, squash(a), squash(b), autojunk=False).ratio() >= 0.5
