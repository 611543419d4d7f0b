"""Apply an inexact edit as a three-way merge instead of a block replacement.

old_string is the model's copy of some file lines and new_string is that copy
changed. When the copy is not exact (a typo, a line left out, `...` standing for
unchanged lines), writing new_string over the matched region would write the
copy's mistakes into the file. Instead:

- lines that old_string and new_string share are taken from the file as they are;
- lines of the file that old_string does not mention are kept;
- only the lines the model changed are replaced, re-indented to the file.

Whenever the merge is not certain (a changed line has no counterpart in the
file, an insertion could go on either side of a line the model did not mention,
an elision is changed) it raises `Uncertain`: a refused edit costs the model one
more try, a wrong one corrupts the user's file.

Pure functions on lists of lines (without line endings).
"""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from qwen_lsp.engine.elision import ELIDED, deletion_next_to_elision, is_elision, split_elided_in_new
from qwen_lsp.engine.indentation import (
    SCALES,
    TAB_WIDTH,
    fit_frame,
    indent_of,
    indent_shape,
    indent_unit,
    line_matches,
    render,
    squash,
    width,
)

LINE_SIMILARITY = 0.75  # a line with a small typo still pairs with its file line
MIN_ANCHORED = 0.5  # share of old_string's lines that must be in the file verbatim (modulo spacing)


class Uncertain(Exception):
    """The merge would have to guess; the message says why (for the model)."""


class Unanchored(Uncertain):
    """Not one line of old_string is in the file as written: it was not found at all."""


@dataclass(frozen=True)
class Merged:
    start: int  # the file lines [start, stop) are replaced by `lines`
    stop: int
    lines: list[str]




# --- alignment: which file line each old_string line is a copy of ----------------------------


def align_segments(file_lines: list[str], old: list[str]) -> list[int | None]:
    """Pairs for an old_string with elisions: each run between elisions must match the file
    (modulo indentation) in order, and the whole chain must match at exactly one place."""
    segments: list[tuple[int, list[str]]] = []  # (index in old, lines)
    start = 0
    for i, line in enumerate([*old, "..."]):
        if i == len(old) or is_elision(line, bare=True):
            while start < i and not old[start].strip():  # blank lines next to `...` need not be in the file
                start += 1
            stop = i
            while stop > start and not old[stop - 1].strip():
                stop -= 1
            if stop > start:
                segments.append((start, old[start:stop]))
            start = i + 1
    if not segments:
        raise Uncertain("old_string has nothing but elisions.")
    starts = [line_matches(file_lines, seg) for _, seg in segments]
    missing = [i for i, found in enumerate(starts) if not found]
    if missing:
        _, seg = segments[missing[0]]
        raise Uncertain(f"the lines around the `...` in old_string, starting with {seg[0].strip()!r}, are not in the file.")

    chains: list[list[int]] = []
    for first in starts[0]:
        chain = [first]
        for (_, seg_prev), found in zip(segments, starts[1:], strict=False):
            after = chain[-1] + len(seg_prev)
            nxt = [s for s in found if s >= after and _same_shape(file_lines, old, segments, [*chain, s])]
            if not nxt:
                break
            chain.append(nxt[0])  # the nearest: an elision stands for the lines in between
        if len(chain) == len(segments):
            chains.append(chain)
    if not chains:
        raise Uncertain("the parts of old_string between `...` lines are not in that order, or not indented alike, in the file.")
    if len(chains) > 1:
        where = ", ".join(str(c[0] + 1) for c in chains[:8])
        raise Uncertain(f"old_string with its `...` matches {len(chains)} places (lines {where}).")
    pairs: list[int | None] = [None] * len(old)
    for (offset, seg), file_start in zip(segments, chains[0], strict=True):
        for k in range(len(seg)):
            pairs[offset + k] = file_start + k
    return pairs


def _same_shape(file_lines: list[str], old: list[str], segments: list[tuple[int, list[str]]], chain: list[int]) -> bool:
    """The segments found so far are indented relative to each other as in old_string."""
    olds: list[str] = []
    found: list[str] = []
    for (offset, seg), file_start in zip(segments, chain, strict=False):
        olds += old[offset : offset + len(seg)]
        found += file_lines[file_start : file_start + len(seg)]
    return indent_shape(olds) == indent_shape(found)


def align_fuzzy(
    file_lines: list[str], old: list[str], lo: int, hi: int
) -> tuple[list[int | None], list[int | None], float]:
    """Pairs for an old_string that differs from file[lo:hi] (a window around the best region).

    The monotone pairing with the highest total score (dynamic programming): a line equal
    modulo spacing scores 1 (a blank one little, so blanks do not anchor), a nearly equal
    one (a typo) its similarity, anything else cannot pair. Taking the best total rather
    than the longest run of equal lines keeps `return err` / `}` from pairing with an
    earlier copy of themselves.

    Returns the latest and the earliest of the best pairings (when they merge differently,
    old_string fits the file in more than one way and the caller refuses), and their score.
    """
    old_norm = [squash(line) for line in old]
    file_norm = [squash(line) for line in file_lines[lo:hi]]
    present = set(file_norm)
    _enough_verbatim(sum(1 for line in old_norm if line and line in present), sum(1 for line in old_norm if line))
    gains = _gains(old_norm, file_norm)
    n, m = len(old_norm), len(file_norm)
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        row, prev, gain = best[i], best[i - 1], gains[i - 1]
        for j in range(1, m + 1):
            score = prev[j] if prev[j] > row[j - 1] else row[j - 1]
            g = gain.get(j - 1)
            if g is not None and prev[j - 1] + g > score:
                score = prev[j - 1] + g
            row[j] = score
    return _trace(best, gains, lo, late=True), _trace(best, gains, lo, late=False), best[n][m]


def _gains(old_norm: list[str], file_norm: list[str]) -> list[dict[int, float]]:
    """For each old line, the file lines it may pair with and the score of that pair.

    A line equal modulo spacing scores 1 (a blank one 0.1, so blanks do not anchor). Only
    an old line with no equal line in the window may pair with a nearly equal one (a typo),
    scoring its similarity, a little below an equal line.
    """
    where: dict[str, list[int]] = {}
    for j, line in enumerate(file_norm):
        where.setdefault(line, []).append(j)
    gains: list[dict[int, float]] = []
    for line in old_norm:
        if line in where:
            gains.append(dict.fromkeys(where[line], 1.0 if line else 0.1))
        elif line:
            near = {j: _near(line, other) for j, other in enumerate(file_norm) if other}
            gains.append({j: g for j, g in near.items() if g > 0})
        else:
            gains.append({})
    return gains


def _trace(best: list[list[float]], gains: list[dict[int, float]], lo: int, *, late: bool) -> list[int | None]:
    """Walk back through the score table; on ties pair as late (or as early) as possible."""
    pairs: list[int | None] = [None] * len(gains)
    i, j = len(gains), len(best[0]) - 1
    while i and j:
        if not late and best[i][j] == best[i][j - 1]:
            j -= 1
            continue
        gain = gains[i - 1].get(j - 1)
        if gain is not None and best[i][j] == best[i - 1][j - 1] + gain:
            pairs[i - 1] = lo + j - 1
            i, j = i - 1, j - 1
        elif best[i][j] == best[i - 1][j]:
            i -= 1
        else:
            j -= 1
    return pairs


@lru_cache(maxsize=8192)
def _near(a: str, b: str) -> float:
    if 2 * min(len(a), len(b)) < LINE_SIMILARITY * (len(a) + len(b)):
        return 0.0  # lengths alone rule it out (what real_quick_ratio computes, without a matcher)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.real_quick_ratio() < LINE_SIMILARITY or matcher.quick_ratio() < LINE_SIMILARITY:
        return 0.0
    ratio = matcher.ratio()
    return 0.9 * ratio if ratio >= LINE_SIMILARITY else 0.0  # below an equal line


def check_anchored(old: list[str], pairs: list[int | None], file_lines: list[str]) -> None:
    """Enough of old_string is in the file verbatim that the pairing is not a coincidence."""
    lines = [i for i, line in enumerate(old) if line.strip()]
    lost = [old[i].strip() for i in lines if pairs[i] is None]
    verbatim = sum(1 for i in lines if pairs[i] is not None and squash(file_lines[pairs[i]]) == squash(old[i]))
    _enough_verbatim(verbatim, len(lines))
    if lost:
        raise Uncertain(f"the line {lost[0]!r} of old_string is not in that part of the file.")
    paired = [p for p in pairs if p is not None]
    span = set(range(paired[0], paired[-1] + 1)) - set(paired)
    unmentioned = sum(1 for k in span if file_lines[k].strip())
    if unmentioned > max(2, len(lines) // 3):
        raise Uncertain(f"old_string leaves out {unmentioned} lines of the file region it matches.")


def _enough_verbatim(verbatim: int, lines: int) -> None:
    if verbatim == 0:
        raise Unanchored("none of the lines of old_string are in the file as written.")
    if verbatim < 2 or verbatim < MIN_ANCHORED * lines:
        raise Uncertain(f"only {verbatim} of the {lines} lines of old_string are in the file as written.")


# --- the merge -----------------------------------------------------------------------------


def merge(file_lines: list[str], old: list[str], new: list[str], pairs: list[int | None], *, bare: bool) -> Merged:
    """Build the replacement of the file region that `old` was paired with (see module doc)."""
    elided = [is_elision(line, bare=bare) for line in old]
    old_key = [ELIDED if e else line.rstrip() for line, e in zip(old, elided, strict=True)]
    new_key = [ELIDED if is_elision(line, bare=bare) else line.rstrip() for line in new]
    paired = [p for p in pairs if p is not None]
    if not paired:
        raise Uncertain("none of the lines of old_string are in the file.")
    indent = _Indenter(file_lines, old, new, pairs)
    start = cursor = paired[0]
    out: list[str] = []

    def emit_to(k: int) -> None:  # file lines up to k (exclusive) that old_string did not mention
        nonlocal cursor
        out.extend(file_lines[cursor:k])
        cursor = max(cursor, k)

    opcodes = difflib.SequenceMatcher(None, old_key, new_key, autojunk=False).get_opcodes()
    if deletion_next_to_elision(opcodes, old, new):
        raise Uncertain("new_string deletes lines right next to a `...`, so it is unclear which lines the `...` keeps.")
    for tag, i1, i2, j1, j2 in split_elided_in_new(opcodes, old, new, elided):
        elided_in_new = tag == "replace" and j2 - j1 == 1 and is_elision(new[j1], bare=True) and not any(elided[i1:i2])
        if tag == "equal" or (elided_in_new and all(pairs[i] is not None for i in range(i1, i2) if old[i].strip())):
            # Unchanged, or written as `...` in new_string only: the file's lines, as they are.
            for i in range(i1, i2):
                if pairs[i] is not None:
                    emit_to(pairs[i])
                    emit_to(pairs[i] + 1)
            continue
        if any(elided[i1:i2]) or ELIDED in new_key[j1:j2]:
            raise Uncertain("new_string changes or moves a `...` elision, so it is unclear which lines it stands for.")
        changed = [i for i in range(i1, i2) if old[i].strip()]
        if any(pairs[i] is None for i in changed):
            missing = next(old[i].strip() for i in changed if pairs[i] is None)
            raise Uncertain(f"old_string changes the line {missing!r}, which is not in the file.")
        targets = [pairs[i] for i in range(i1, i2) if pairs[i] is not None]
        one_for_one = tag == "replace" and i2 - i1 == j2 - j1
        # Changed lines that old_string copied wrongly (a typo): which part is the change?
        copied = {i: file_lines[k] for i in changed if (k := pairs[i]) is not None and squash(old[i]) != squash(file_lines[k])}
        written = {squash(line) for line in new[j1:j2]}
        if not one_for_one and any(squash(line) not in written for line in copied.values()):
            i, line = next((i, line) for i, line in copied.items() if squash(line) not in written)
            raise Uncertain(
                f"old_string's copy of {line.strip()!r} differs from the file and new_string rewrites it together "
                "with other lines, so the change cannot be told from the copying mistake."
            )
        if targets:
            first, last = targets[0], targets[-1]
            inside = [k for k in range(first, last + 1) if k not in targets and file_lines[k].strip()]
            if inside:
                raise Uncertain(
                    f"old_string leaves out line {inside[0] + 1} ({file_lines[inside[0]].strip()!r}) "
                    "in the middle of the lines it changes."
                )
            emit_to(first)
            cursor = last + 1
        else:
            emit_to(_insertion_point(file_lines, pairs, elided, i1, cursor))
        for j in range(j1, j2):  # a line replacing one old line moves with that line's file indent
            partner = i1 + (j - j1) if one_for_one else None
            line = new[j]
            if partner is not None and partner in copied:
                line = _merge_line(old[partner], line, copied[partner])
            out.append(indent.line(line, partner))
    return Merged(start, cursor, out)


def _merge_line(old: str, new: str, have: str) -> str:
    """new_string's change of `old` applied to the file's `have` (old with a copying mistake).

    A character-level three-way merge of the lines' text: the model's edits (old -> new)
    and the copying mistakes (old -> have) must touch different parts of the line, or be
    the same; then both are applied. Otherwise raises Uncertain.
    """
    o, n, h = old.strip(), new.strip(), have.strip()
    if n == h:
        return new  # new_string writes the line as the file has it (it corrected the copy)
    theirs = _char_edits(o, n)
    mine = _char_edits(o, h)
    for a1, a2, _ in theirs:
        for b1, b2, _ in mine:
            # overlapping ranges, or two insertions at one place, conflict
            if (a1 < b2 and b1 < a2) or a1 == b1 or (a1 == a2 and b1 < a1 < b2) or (b1 == b2 and a1 < b1 < a2):
                raise Uncertain(
                    f"old_string's copy of {have.strip()!r} differs from the file right where new_string changes it."
                )
    merged, at = [], 0
    for i1, i2, text in sorted(theirs + mine, key=lambda e: (e[0], e[1])):
        merged.append(o[at:i1] + text)
        at = i2
    merged.append(o[at:])
    return indent_of(new) + "".join(merged) + new[len(new.rstrip()) :]


def _char_edits(a: str, b: str) -> list[tuple[int, int, str]]:
    """The edits that turn `a` into `b`: (start, stop, replacement) on `a`."""
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [(i1, i2, b[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def _insertion_point(file_lines: list[str], pairs: list[int | None], elided: list[bool], at: int, cursor: int) -> int:
    """Where lines new_string adds before old line `at` go: between the file lines of the
    old lines around them. Unmentioned file lines in between make that a guess."""
    before = next((i for i in range(at - 1, -1, -1) if pairs[i] is not None or elided[i]), None)
    after = next((i for i in range(at, len(pairs)) if pairs[i] is not None or elided[i]), None)
    if after is None or elided[after]:
        return cursor  # right after the previous line
    target = pairs[after]
    assert target is not None
    if before is None or elided[before]:
        return target  # right before the next line
    if any(line.strip() for line in file_lines[cursor:target]):
        raise Uncertain(
            f"new_string adds lines next to line {cursor + 1} ({file_lines[cursor].strip()!r}), which old_string "
            "leaves out, so it is unclear on which side of it they go."
        )
    return cursor


class _Indenter:
    """Moves new lines from old_string's indentation to the file's.

    A new line indented like some paired old line gets that file line's indentation
    verbatim; other lines are placed relative to the nearest such width, in indent
    levels (the model's step becomes the file's step: a tab or N spaces).

    When some copied line is indented unlike the rest of the copy (a column off, a tab for
    spaces), widths are read through the frame the other lines follow (indentation.fit_frame)
    and a line that does not land on the file's indentation is refused: a line written a
    column off, or at column 0 inside a function, breaks the file.
    """

    def __init__(self, file_lines: list[str], old: list[str], new: list[str], pairs: list[int | None]) -> None:
        votes: dict[int, Counter[str]] = {}
        for line, k in zip(old, pairs, strict=True):
            if k is not None and line.strip() and file_lines[k].strip():
                votes.setdefault(width(indent_of(line)), Counter())[indent_of(file_lines[k])] += 1
        self.known = {w: c.most_common(1)[0][0] for w, c in votes.items()}
        # old_string widths whose lines are indented differently in the file (a flattened copy)
        self.conflicts = {w for w, c in votes.items() if len(c) > 1}
        self.old, self.pairs, self.file_lines = old, pairs, file_lines
        pairs_ws = self._pairs(old, pairs, file_lines)
        self.verbatim = all(indent_of(line) == ind for line, ind in pairs_ws)
        block = [file_lines[k] for k in pairs if k is not None]
        self.step = width(indent_unit(old) or indent_unit(new) or " " * TAB_WIDTH)
        self.unit = indent_unit(block) or indent_unit(file_lines) or " " * self.step
        # The copy may use another step than the file (2 spaces for 4), but a step of one column
        # is a line a column off, not a step.
        ratio = width(self.unit) / self.step
        scales = (1.0, ratio) if ratio in SCALES and self.step > 1 else (1.0,)
        fit = fit_frame([(width(indent_of(line)), width(ind)) for line, ind in pairs_ws], scales)
        self.frame = fit[0] if fit is not None else None
        self.noisy = fit is None or bool(fit[1])
        # the file's indentation strings of the lines the frame explains, by width
        self.file_indents = {
            width(ind): ind for i, (_, ind) in enumerate(pairs_ws) if fit is not None and i not in fit[1]
        }

    @staticmethod
    def _pairs(old: list[str], pairs: list[int | None], file_lines: list[str]) -> list[tuple[str, str]]:
        return [(o, indent_of(file_lines[k])) for o, k in zip(old, pairs, strict=True) if k is not None and o.strip()]

    def line(self, line: str, partner: int | None = None) -> str:
        """`line` re-indented; `partner` is the old line it replaces one for one, if any."""
        if not line.strip():
            return ""
        if self.verbatim or not self.known:
            return line
        w = width(indent_of(line))
        k = self.pairs[partner] if partner is not None else None
        if partner is not None and k is not None and self.old[partner].strip() and self.file_lines[k].strip():
            anchor, at = width(indent_of(self.old[partner])), indent_of(self.file_lines[k])
            if w == anchor:  # indented as its old line: the file's indentation of that line, whatever the copy's
                return at + line.lstrip()
            if self.noisy:
                return self._in_frame(line, at)
        elif self.noisy:
            return self._in_frame(line, None)
        else:
            below = [known for known in self.known if known <= w]
            anchor = max(below) if below else min(self.known)
            if anchor in self.conflicts:
                raise Uncertain(
                    "old_string's indentation does not follow the file's (lines indented alike in old_string "
                    "are indented differently in the file), so the new lines' indentation is unclear."
                )
            at = self.known[anchor]
        if w == anchor:
            return at + line.lstrip()
        levels, extra = divmod(w - anchor, self.step)
        if levels >= 0:
            return at + self.unit * levels + " " * extra + line.lstrip()
        return render(width(at) + levels * width(self.unit) + extra, self.unit) + line.lstrip()

    def _in_frame(self, line: str, was: str | None) -> str:
        """A line of a copy whose indentation is off in places: through the frame most copied
        lines follow, onto one of the file's indentation levels, or refused. `was` is the file's
        indentation of the line it replaces (kept as it is when the line lands there)."""
        w = width(indent_of(line))
        target = self.frame.to_file(w) if self.frame is not None and w not in self.conflicts else -1.0
        if was is not None and target == width(was):
            return was + line.lstrip()
        levels = sorted(self.file_indents)
        below = [w for w in levels if w <= target]
        if target < 0 or target != int(target) or not below or (target - below[-1]) % width(self.unit):
            raise Uncertain(
                f"old_string's lines are not indented consistently (some lines are indented unlike the file), "
                f"so the indentation of {line.strip()!r} in the file is unclear."
            )
        if int(target) in self.file_indents:
            return self.file_indents[int(target)] + line.lstrip()
        return self.file_indents[below[-1]] + self.unit * int((target - below[-1]) // width(self.unit)) + line.lstrip()
