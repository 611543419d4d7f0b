"""Finding where a fuzzy old_string best fits a file: candidate windows by a cheap trigram score,
then a line-aligned similarity on the shortlist only (linear in the file, not quadratic)."""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from qwen_lsp.engine.indentation import squash

FUZZY_MARGIN = 0.02  # a second region this close to the best makes it ambiguous
SHORTLIST_SIZE = 50
SHORTLIST_MARGIN = 0.15


@dataclass(frozen=True)
class Region:
    """File lines [start, stop) (0-based) and how similar they are to old_string."""

    start: int
    stop: int
    score: float = 1.0

    def overlaps(self, other: Region) -> bool:
        return self.start < other.stop and other.start < self.stop

    def describe(self) -> str:
        if self.stop - self.start == 1:
            return f"line {self.start + 1}"
        return f"lines {self.start + 1}-{self.stop}"


def fuzzy_rank(file_lines: list[str], old_core: list[str], margin: float = FUZZY_MARGIN) -> list[Region]:
    """Windows of len(old_core) ± 1 lines that are about as similar as the best one, best first.

    Scoring every window with difflib is quadratic per window and far too slow on
    big files, so a cheap trigram score picks the candidates first (shortlist)
    and only those get the real similarity (similarity).
    """
    file_norm = [squash(line) for line in file_lines]
    old_norm = [squash(line) for line in old_core]
    scored = [
        Region(start, stop, similarity(file_norm[start:stop], old_norm))
        for start, stop in shortlist(file_norm, old_norm)
    ]
    if not scored:
        return []
    # Ties go to the window with exactly as many lines as old_string, then the earliest.
    m = len(old_core)
    scored.sort(key=lambda r: (-r.score, abs(r.stop - r.start - m), r.start))
    return [r for r in scored if r.score >= scored[0].score - margin]


def shortlist(file_norm: list[str], old_norm: list[str]) -> set[tuple[int, int]]:
    """Candidate windows (start, stop): those of len(old_norm) lines whose trigram
    Dice score is close to the best one, plus each of them one line shorter/longer.

    Dice = 2·|common trigrams| / (|window trigrams| + |old trigrams|). The common
    count is updated incrementally as the window slides (only trigrams that occur
    in old_string can change it), so this is linear in the file size.
    """
    target = dict(sum((trigrams(line) for line in old_norm), Counter[str]()))
    target_size = sum(target.values())
    line_grams = [trigrams(line) for line in file_norm]
    sizes = [sum(grams.values()) for grams in line_grams]
    shared = [[(g, k) for g, k in grams.items() if g in target] for grams in line_grams]

    n = len(file_norm)
    size = min(len(old_norm), n)  # a file shorter than old_string is one window
    window: dict[str, int] = {}
    common = total = 0
    found: list[tuple[float, int]] = []
    for i in range(n):
        for sign, line in ((1, i), (-1, i - size)):
            if line < 0:
                continue
            total += sign * sizes[line]
            for gram, k in shared[line]:
                cap, before = target[gram], window.get(gram, 0)
                after = window[gram] = before + sign * k
                common += (after if after < cap else cap) - (before if before < cap else cap)
        if i >= size - 1:
            found.append((2 * common / (total + target_size) if total + target_size else 1.0, i - size + 1))
    if not found:
        return set()
    found.sort(key=lambda f: -f[0])
    floor = found[0][0] - SHORTLIST_MARGIN
    return {
        (start, min(start + size + extra, n))
        for dice, start in found[:SHORTLIST_SIZE]
        if dice >= floor
        for extra in (-1, 0, 1)
        if size + extra >= 1
    }


def similarity(a: list[str], b: list[str]) -> float:
    """difflib-style ratio (2·matches / total chars) of two line lists.

    Lines are aligned first (equal lines match whole); only lines that differ
    are compared character by character. Much cheaper than one ratio over the
    joined text, and nearly the same number.
    """
    total = sum(len(line) + 1 for line in a) + sum(len(line) + 1 for line in b)
    matched = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            matched += sum(len(line) + 1 for line in a[i1:i2])
        elif tag == "replace" and i2 - i1 == j2 - j1:  # pair the lines up in order
            matched += sum(char_matches(x, y) + 1 for x, y in zip(a[i1:i2], b[j1:j2], strict=True))
        elif tag == "replace" and max(i2 - i1, j2 - j1) <= 4:  # a line left out or added: compare as text
            matched += char_matches("\n".join(a[i1:i2]), "\n".join(b[j1:j2])) + min(i2 - i1, j2 - j1)
        elif tag == "replace":  # pair the lines up in order; leftovers match nothing
            matched += sum(char_matches(x, y) + 1 for x, y in zip(a[i1:i2], b[j1:j2], strict=False))
    return 2 * matched / total if total else 1.0


@lru_cache(maxsize=4096)  # overlapping windows compare the same line pairs again
def char_matches(a: str, b: str) -> int:
    blocks = difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
    return sum(block.size for block in blocks)


def trigrams(line: str) -> Counter[str]:
    padded = f" {line} "  # so that short lines still yield trigrams
    return Counter(padded[i : i + 3] for i in range(len(padded) - 2))


def disjoint(regions: list[Region]) -> list[Region]:
    """Drop regions overlapping a better one (the input is sorted best first)."""
    kept: list[Region] = []
    for r in regions:
        if not any(r.overlaps(k) for k in kept):
            kept.append(r)
    return kept
