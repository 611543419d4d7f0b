"""Lines compared and rebuilt modulo indentation, for applying edits: a block the model
wrote at another depth, with tabs for spaces or another indent step, still finds its
file lines, and new lines take the file's indentation.

Pure functions on lines (without line endings)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

TAB_WIDTH = 4  # only used to compare mixed tab/space indentation widths
# How a copy's indent step may relate to the file's: the same, twice (2 spaces for 4), half.
SCALES = (1.0, 2.0, 0.5)


def line_matches(file_lines: list[str], block: list[str]) -> list[int]:
    """0-based starts of every run of file lines equal to `block` modulo indentation.

    Lines compare equal when their stripped text is equal and the block's
    indentation has the same shape (see indent_shape), so a block given at
    column 0 matches one at column 8, and tabs match spaces.
    """
    want = [line.strip() for line in block]
    shape = indent_shape(block)
    have = [line.strip() for line in file_lines]
    m = len(want)
    return [
        s
        for s in range(len(have) - m + 1)
        if have[s : s + m] == want and indent_shape(file_lines[s : s + m]) == shape
    ]


def indent_shape(lines: list[str]) -> list[int | None]:
    """Each line's indentation as a rank among the block's distinct indent widths.

    Ranks instead of widths make the comparison independent of the base
    indentation, of tabs vs spaces, and of the indent step (2 vs 4 spaces),
    while still telling nested lines apart from sibling lines.
    """
    widths = [width(indent_of(line)) if line.strip() else None for line in lines]
    rank = {w: r for r, w in enumerate(sorted({w for w in widths if w is not None}))}
    return [None if w is None else rank[w] for w in widths]


def squash(line: str) -> str:
    """Whitespace-normalized line: no indentation, single spaces."""
    return " ".join(line.split())


def indent_of(line: str) -> str:
    """Leading whitespace of a (non-blank) line."""
    return line[: len(line) - len(line.lstrip())]


def width(indent: str) -> int:
    return len(indent.expandtabs(TAB_WIDTH))


def render(columns: int, unit: str) -> str:
    """An indentation of `columns` columns in the file's style."""
    columns = max(columns, 0)
    if unit == "\t":
        return "\t" * (columns // TAB_WIDTH) + " " * (columns % TAB_WIDTH)
    return " " * columns


def indent_unit(lines: list[str]) -> str | None:
    """The indent step used by `lines`: "\\t", or N spaces (most common increase), or None."""
    indents = [indent_of(line) for line in lines if line.strip()]
    tabs = sum(i.startswith("\t") for i in indents)
    if tabs and tabs >= sum(i.startswith(" ") for i in indents):
        return "\t"
    steps = Counter(b - a for a, b in pairwise(width(i) for i in indents) if b > a)
    if not steps:
        return None
    return " " * min(steps, key=lambda k: (-steps[k], k))


@dataclass(frozen=True)
class Frame:
    """The map from a copy's indent widths to the file's: file = scale * copy + shift."""

    scale: float
    shift: float

    def to_file(self, copy_width: int) -> float:
        return self.scale * copy_width + self.shift


def fit_frame(points: list[tuple[int, int]], scales: tuple[float, ...] = (1.0,)) -> tuple[Frame, set[int]] | None:
    """The frame (of the given scales; ties go to the first) that most (copy width, file width)
    points follow, and the indices of the points it does not explain (lines copied with their
    indentation wrong: a column off, a tab for spaces); None when no frame explains more than
    half of them.

    A copy's indentation says where new lines go only where it agrees with the file, so a
    line whose own indentation is off must not serve as the measure of the others.
    """
    best: tuple[int, Frame] | None = None
    for scale in scales:
        shifts = Counter(f - scale * c for c, f in points)
        if shifts:
            shift, n = shifts.most_common(1)[0]
            if best is None or n > best[0]:
                best = (n, Frame(scale, shift))
    if best is None or 2 * best[0] <= len(points):
        return None
    frame = best[1]
    return frame, {i for i, (c, f) in enumerate(points) if frame.to_file(c) != f}
