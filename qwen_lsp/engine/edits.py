"""Apply the model's `edit_file(path, old_string, new_string)` tool call.

Models copy code imperfectly: they shift or drop indentation, swap tabs for
spaces, keep trailing spaces, pad with blank lines, make a typo, leave a line
out, or write `...` for lines they did not change. `apply_edit` tries
progressively looser matching (exact -> whitespace -> elision -> fuzzy) but never
guesses between two candidates. Anything inexact is applied as a merge (see
merge.py), so the copy's mistakes never reach the file. When it cannot apply the
edit it raises `EditError` with a short message written for the model (it
becomes the tool result), so the model can correct old_string and retry.

Pure functions on strings; no I/O.
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import Literal

from pydantic import BaseModel

from qwen_lsp.engine.similarity import FUZZY_MARGIN
from qwen_lsp.engine.similarity import Region as _Region
from qwen_lsp.engine.similarity import disjoint as _disjoint
from qwen_lsp.engine.similarity import fuzzy_rank as _fuzzy_rank
from qwen_lsp.engine.similarity import similarity as _similarity
from qwen_lsp.engine.textlines import detect_eol as _detect_eol
from qwen_lsp.engine.textlines import find_all as _find_all
from qwen_lsp.engine.textlines import line_at as _line_at
from qwen_lsp.engine.textlines import lines as _lines
from qwen_lsp.engine.textlines import nonblank_count as _nonblank_count
from qwen_lsp.engine.textlines import split_lines as _split_lines
from qwen_lsp.engine.textlines import to_lf as _to_lf
from qwen_lsp.engine.textlines import trim_blank as _trim_blank
from qwen_lsp.engine.textlines import trim_blank_up_to as _trim_blank_up_to
from qwen_lsp.engine.elision import has_elision, is_elision, strip_outer_elisions
from qwen_lsp.engine.indentation import indent_of, line_matches, squash
from qwen_lsp.engine.merge import (
    Unanchored,
    Uncertain,
    align_fuzzy,
    align_segments,
    check_anchored,
    merge,
)

# Default minimum similarity of the best region for a fuzzy match. Lower than a plain
# replace could afford: the merge only changes the lines the model changed, and refuses
# when it cannot pair them with file lines (merge.check_anchored, merge.Uncertain).
FUZZY_THRESHOLD = 0.7
# A one-line old_string that is merely "similar" is too easy to confuse with a
# different line (`x < 1` vs `x <= 1`); for those we show the candidate instead.
MIN_FUZZY_LINES = 2
# new_string found away from where old_string would be counts as "already applied"
# only if it has this many non-blank lines (see _find_new).
MIN_APPLIED_LINES = 3
# The trigram prefilter keeps at most this many windows, within this margin of its best.
MAX_SNIPPET_LINES = 12  # keeps error messages around 20 lines
MAX_SNIPPET_CHARS = 160
MAX_LISTED = 8  # match locations listed in an "ambiguous" error
# Other regions this close to the best one are paired too; one that fits makes the edit ambiguous.
RIVAL_MARGIN = 0.25
MAX_RIVALS = 8
RIVAL_LINES = 0.5  # a rival whose pairing scores this close (in lines) to the chosen one is as good

Strategy = Literal["exact", "whitespace", "elision", "fuzzy"]

# "12 | code", "12: code", "12\tcode": line numbers copied from a file listing
_LINE_NUMBER = re.compile(r"^\s*\d+(\s*[|:→]|\t)")


class EditError(Exception):
    """Raised with a message written FOR THE MODEL (it goes back as the tool result so it can retry)."""


class EditOutcome(BaseModel):
    text: str  # the whole new file text
    strategy: Strategy
    start_line: int  # 1-based first line of the replaced region in the ORIGINAL text
    end_line: int  # 1-based last line of the replaced region in the ORIGINAL text
    similarity: float = 1.0


@dataclass(frozen=True)
class _Edit:
    """One edit_file call, with the derived views every strategy needs."""

    text: str
    old: str  # LF line endings from here on
    new: str
    path: str
    eol: str  # the file's line ending; new lines are written with it
    file_lines: list[str]  # with their line endings
    old_core: list[str]  # old_string's lines without the blank lines around them
    new_core: list[str]  # new_string's lines, trimmed to match (see apply_edit)


def apply_edit(
    text: str,
    old: str,
    new: str,
    *,
    path: str = "file",
    fuzzy_threshold: float = FUZZY_THRESHOLD,
) -> EditOutcome:
    """Replace the one region of `text` that matches `old` with `new`.

    Raises EditError (message for the model) when `old` is empty, equals `new`,
    matches several places, or matches nothing well enough.
    """
    if old == "":
        raise EditError(
            f"old_string is empty. To create a new file use create_file. To insert into {path}, "
            "put a few existing lines next to the insertion point in old_string and repeat them, "
            "with the new lines added, in new_string."
        )
    old, new = _to_lf(old), _to_lf(new)
    if old == new:
        raise EditError("old_string and new_string are identical, so there is no change to make.")

    old_core, lead, trail = _trim_blank(_lines(old))
    edit = _Edit(
        text=text,
        old=old,
        new=new,
        path=path,
        eol=_detect_eol(text),
        file_lines=_split_lines(text),
        old_core=old_core,
        # Blank lines we ignore around old_string most likely mirror the same padding
        # around new_string; dropping those too keeps the file's blank lines as they were.
        new_core=_trim_blank_up_to(_lines(new), lead, trail),
    )

    outcome = _exact(edit)
    ranked: list[_Region] = []
    if outcome is None and old_core:
        outcome = _whitespace(edit)
        if outcome is None and all(_LINE_NUMBER.match(line) for line in old_core if line.strip()):
            # Fuzzy matching would find the spot, but new_string likely has the numbers too.
            raise EditError(
                "old_string starts its lines with line numbers copied from a file listing. "
                "Leave the line numbers out of old_string and new_string."
            )
        if outcome is None and has_elision(old_core, bare=True):
            edit, outcome = _elided(edit)
        if outcome is None and edit.old_core:
            ranked = _fuzzy_rank(edit.file_lines, edit.old_core, RIVAL_MARGIN)
            outcome = _fuzzy(edit, ranked, fuzzy_threshold)
    if outcome is None:
        raise _not_found(edit, ranked)

    result = _keep_final_newline(text, outcome.text, edit.eol)
    if result == text:
        raise EditError(
            f"This edit leaves {path} unchanged: it is applied already, or old_string and "
            "new_string differ only in whitespace that was normalized away."
        )
    return outcome.model_copy(update={"text": result})


def unified_diff(path: str, before: str, after: str) -> str:
    """A `git diff`-style unified diff (3 lines of context); "" when nothing changed."""
    if before == after:
        return ""
    out: list[str] = []
    diff = difflib.unified_diff(_split_lines(before), _split_lines(after), f"a/{path}", f"b/{path}", n=3)
    for line in diff:
        if line.endswith("\n"):
            out.append(line)
        else:  # the last line of a file without a trailing newline
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


# --- the three strategies ---------------------------------------------------


def _exact(edit: _Edit) -> EditOutcome | None:
    text = edit.text
    old_e, new_e = edit.old.replace("\n", edit.eol), edit.new.replace("\n", edit.eol)
    starts = _find_all(text, old_e)
    if not starts:
        return None
    if _elides_in_new(edit) and len(starts) == 1:
        return None  # `...` in new_string stands for lines to keep: merge by lines instead
    if len(starts) > 1:
        raise _ambiguous(edit.path, [_line_at(text, i) for i in starts], "exactly")
    i = starts[0]
    # An insertion re-sent after it was applied: old is found again, inside new.
    if edit.old in edit.new and edit.new.strip():
        for j in _find_all(text, new_e):
            if j <= i and i + len(old_e) <= j + len(new_e):
                first = _line_at(text, j + len(new_e) - len(new_e.lstrip()))
                raise _already_applied(edit.path, _Region(first - 1, first))

    # `old` found after some indentation, e.g. "return x" inside "        return x".
    # A plain substring replace would indent only the first line of a multi-line
    # `new`, and would add that indentation to new's own when new's first line is
    # indented unlike old's (a copy whose first line is a column off); the line-based
    # strategy re-indents every line to the file, so use it then.
    line_start = text.rfind("\n", 0, i) + 1
    first_old, first_new = edit.old.split("\n", 1)[0], edit.new.split("\n", 1)[0]
    if (
        i > line_start
        and not text[line_start:i].strip()
        and first_old.strip()
        and ("\n" in edit.new or indent_of(first_old) != indent_of(first_new))
    ):
        start = _line_at(text, i) - 1
        return _apply_region(edit, _Region(start, start + len(edit.old_core)), "whitespace")

    return EditOutcome(
        text=text[:i] + new_e + text[i + len(old_e) :],
        strategy="exact",
        start_line=_line_at(text, i),
        end_line=_line_at(text, i + len(old_e) - 1),
    )


def _whitespace(edit: _Edit) -> EditOutcome | None:
    starts = line_matches(edit.file_lines, edit.old_core)
    if not starts:
        return None
    if len(starts) > 1:
        raise _ambiguous(edit.path, [s + 1 for s in starts], "ignoring indentation and trailing whitespace")
    return _apply_region(edit, _Region(starts[0], starts[0] + len(edit.old_core)), "whitespace")


def _fuzzy(edit: _Edit, ranked: list[_Region], threshold: float) -> EditOutcome | None:
    if not ranked or ranked[0].score < threshold or _nonblank_count(edit.old_core) < MIN_FUZZY_LINES:
        return None
    best = ranked[0]
    rivals = [r for r in ranked[1:] if r.score >= best.score - FUZZY_MARGIN and not r.overlaps(best)]
    if rivals:
        regions = [best, *_disjoint(rivals)][:MAX_LISTED]
        listed = ", ".join(f"{r.describe()} ({_percent(r.score)})" for r in regions)
        raise EditError(
            f"old_string was not found exactly in {edit.path}, and several regions are about equally "
            f"similar to it: {listed}. Include more surrounding lines in old_string, copied exactly "
            "from the file, so it matches one place."
        )
    lines = _bare_lines(edit.file_lines)
    # When the merge fails or changes nothing, the "similar" region may simply be our own
    # earlier edit: the model re-sent it.
    try:
        late, early, score = _pairings(edit, lines, best)
        outcome = _merged(edit, late, "fuzzy", best)
        if early != late and _merged(edit, early, "fuzzy", best).text != outcome.text:
            raise Uncertain("its lines fit more than one set of lines there (repeated lines).")
        _check_no_rival(edit, lines, late, score, ranked)
    except Unanchored:
        _raise_if_applied(edit, best)
        return None
    except Uncertain as why:
        _raise_if_applied(edit, best)
        raise _uncertain(edit, best, why) from None
    if outcome.text == edit.text:
        _raise_if_applied(edit, best)
    return outcome


def _pairings(
    edit: _Edit, lines: list[str], region: _Region
) -> tuple[list[int | None], list[int | None], float]:
    """old_string's lines paired with file lines in and a little around `region` (a line
    old_string leaves out makes the region longer than old_string), and the pairing's
    score (about one per line); raises Uncertain."""
    pad = max(2, len(edit.old_core) // 3)
    lo, hi = max(0, region.start - pad), min(len(lines), region.stop + pad)
    late, early, score = align_fuzzy(lines, edit.old_core, lo, hi)
    check_anchored(edit.old_core, late, lines)
    if early != late:
        check_anchored(edit.old_core, early, lines)
    return late, early, score


def _check_no_rival(
    edit: _Edit, lines: list[str], pairs: list[int | None], score: float, ranked: list[_Region]
) -> None:
    """No other place fits old_string about as well (within RIVAL_LINES of the pairing score):
    a repeated block with a typo or a left-out line can rank a little lower at the right
    place than at a wrong one."""
    paired = [p for p in pairs if p is not None]
    chosen = _Region(paired[0], paired[-1] + 1)
    candidates = _disjoint([r for r in ranked if not r.overlaps(chosen)])[:MAX_RIVALS]
    for rival in [*candidates, *_echoes(edit.old_core, lines, chosen)]:
        try:
            rival_pairs, _, rival_score = _pairings(edit, lines, rival)
        except Uncertain:
            continue
        other = [p for p in rival_pairs if p is not None]
        if rival_score >= score - RIVAL_LINES and not _Region(other[0], other[-1] + 1).overlaps(chosen):
            raise Uncertain(f"it fits {rival.describe()} about as well as {chosen.describe()}.")


def _echoes(old: list[str], lines: list[str], chosen: _Region) -> list[_Region]:
    """Other places where at least two of old_string's lines occur in the same arrangement:
    a block repeated with small differences (overloads, `==` and `!=`) can rank far below
    the chosen one by similarity and still fit old_string just as well."""
    where: dict[str, list[int]] = {}
    for k, line in enumerate(lines):
        where.setdefault(squash(line), []).append(k)
    votes: Counter[int] = Counter()
    for i, line in enumerate(old):
        if line.strip():
            votes.update(k - i for k in where.get(squash(line), ()))
    regions = [
        _Region(max(0, start), min(len(lines), start + len(old)))
        for start, n in votes.most_common(MAX_RIVALS * 4)
        if n >= 2
    ]
    return _disjoint([r for r in regions if r.stop > r.start and not r.overlaps(chosen)])[:MAX_RIVALS]


def _raise_if_applied(edit: _Edit, near: _Region) -> None:
    applied = _find_new(edit, near, anywhere=False)
    if applied is not None:
        raise _already_applied(edit.path, applied)


def _elided(edit: _Edit) -> tuple[_Edit, EditOutcome | None]:
    """old_string with `...` lines: every part between them must be in the file, in order.

    `...` only at the ends of old_string says nothing: drop it and let the caller go on
    with the other strategies on the rest.
    """
    old_core, new_core = strip_outer_elisions(edit.old_core, edit.new_core)
    edit = replace(edit, old_core=old_core, new_core=new_core)
    if not has_elision(old_core, bare=True):
        return edit, _whitespace(edit) if old_core else None
    lines = _bare_lines(edit.file_lines)
    try:
        pairs = align_segments(lines, old_core)
    except Uncertain as why:
        raise _uncertain(edit, None, why) from None
    return edit, _apply_merge(edit, pairs, "elision")


def _find_new(edit: _Edit, near: _Region | None, *, anywhere: bool) -> _Region | None:
    """Where new_string already is in the file, if that means the edit was applied before.

    Found overlapping `near` (old_string's best candidate) it almost surely was.
    Found elsewhere, only a block of several lines is convincing: a short
    new_string such as "pass" occurs in many files by coincidence.
    """
    if not edit.new.strip():
        return None  # a deletion leaves nothing to look for
    new_e = edit.new.replace("\n", edit.eol)
    lead = len(new_e) - len(new_e.lstrip())  # report lines with text, not blank padding
    found = [
        _Region(_line_at(edit.text, i + lead) - 1, _line_at(edit.text, i + len(new_e.rstrip()) - 1))
        for i in _find_all(edit.text, new_e)
    ]
    found += [_Region(s, s + len(edit.new_core)) for s in line_matches(edit.file_lines, edit.new_core)]
    if near is not None:
        found.sort(key=lambda r: not r.overlaps(near))  # stable: overlapping ones first
        if found and found[0].overlaps(near):
            return found[0]
    if anywhere and found and _nonblank_count(edit.new_core) >= MIN_APPLIED_LINES:
        return found[0]
    return None


# --- building the new text ----------------------------------------------------


def _apply_region(edit: _Edit, region: _Region, strategy: Strategy) -> EditOutcome:
    """Apply to a region whose lines are old_string's, modulo whitespace."""
    return _apply_merge(edit, list(range(region.start, region.stop)), strategy, region)


def _apply_merge(edit: _Edit, pairs: list[int | None], strategy: Strategy, region: _Region | None = None) -> EditOutcome:
    """Merge new_string into the file lines that old_string's lines were paired with."""
    try:
        return _merged(edit, pairs, strategy, region)
    except Uncertain as why:
        raise _uncertain(edit, region, why) from None


def _merged(edit: _Edit, pairs: list[int | None], strategy: Strategy, region: _Region | None) -> EditOutcome:
    bare = has_elision(edit.old_core, bare=True)  # a bare `...` is code unless old_string elides too
    merged = merge(_bare_lines(edit.file_lines), edit.old_core, edit.new_core, pairs, bare=bare)
    span = _Region(merged.start, merged.stop)
    return EditOutcome(
        text=_replace_lines(edit.file_lines, span, merged.lines, edit.eol),
        strategy=strategy,
        start_line=span.start + 1,
        end_line=span.stop,
        similarity=region.score if region is not None else 1.0,
    )


def _elides_in_new(edit: _Edit) -> bool:
    """new_string has more `...` lines than old_string: some stand for kept lines."""
    return sum(is_elision(line, bare=True) for line in edit.new_core) > sum(
        is_elision(line, bare=True) for line in edit.old_core
    )


def _bare_lines(file_lines: list[str]) -> list[str]:
    return [line.rstrip("\n").removesuffix("\r") for line in file_lines]


def _replace_lines(file_lines: list[str], region: _Region, new_lines: list[str], eol: str) -> str:
    had_eol = file_lines[region.stop - 1].endswith("\n")
    body = eol.join(new_lines) + (eol if new_lines and had_eol else "")
    return "".join(file_lines[: region.start]) + body + "".join(file_lines[region.stop :])


def _keep_final_newline(original: str, result: str, eol: str) -> str:
    """Keep whether the file ends with a newline; models often add or drop one by accident."""
    if not original or not result:
        return result
    if original.endswith("\n") and not result.endswith("\n"):
        return result + eol
    if not original.endswith("\n") and result.endswith("\n"):
        return result[: -len(eol)] if result.endswith(eol) else result[:-1]
    return result


# --- errors -----------------------------------------------------------------


def _ambiguous(path: str, lines: list[int], how: str) -> EditError:
    shown = ", ".join(str(n) for n in lines[:MAX_LISTED]) + (", ..." if len(lines) > MAX_LISTED else "")
    return EditError(
        f"old_string matches {len(lines)} places in {path} ({how}), at lines {shown}. "
        "Include more surrounding lines in old_string so it matches exactly one place."
    )


def _already_applied(path: str, where: _Region) -> EditError:
    return EditError(
        f"new_string is already present in {path} at line {where.start + 1}, so this edit "
        "appears to be applied already. Re-read the file before editing it again."
    )


def _uncertain(edit: _Edit, region: _Region | None, why: Uncertain) -> EditError:
    if region is None and edit.old_core and edit.file_lines:
        ranked = _fuzzy_rank(edit.file_lines, edit.old_core)
        region = ranked[0] if ranked else None
    shown = ""
    if region is not None:
        shown = f"The most similar region is {region.describe()}:\n{_snippet(edit.file_lines, region)}\n"
    return EditError(
        f"old_string is not exactly in {edit.path}, and applying the edit anyway would be a guess: {why}\n"
        f"{shown}Copy the lines you change exactly from the file into old_string (`...` may stand for "
        "unchanged lines between them) and retry, or re-read the file."
    )


def _not_found(edit: _Edit, ranked: list[_Region]) -> EditError:
    applied = _find_new(edit, ranked[0] if ranked else None, anywhere=True)
    if applied is not None:
        return _already_applied(edit.path, applied)
    if not edit.old_core:
        return EditError(
            f"old_string contains only whitespace and was not found in {edit.path}. "
            "Put the existing lines you want to change in old_string."
        )
    if not ranked:
        return EditError(f"old_string was not found: {edit.path} is empty.")
    best = ranked[0]
    return EditError(
        f"old_string was not found in {edit.path}, not even ignoring whitespace and indentation.\n"
        f"The most similar region is {best.describe()} ({_percent(best.score)} similar):\n"
        f"{_snippet(edit.file_lines, best)}\n"
        "Copy the current text exactly from the file (without the line numbers) into "
        "old_string and retry, or re-read the file."
    )


def _percent(score: float) -> str:
    return f"{math.floor(score * 100)}%"  # rounded down: "100%" only for identical text


def _snippet(file_lines: list[str], region: _Region) -> str:
    stop = min(region.stop, region.start + MAX_SNIPPET_LINES)
    width = len(str(stop))
    out = []
    for n in range(region.start, stop):
        line = file_lines[n].rstrip("\r\n")
        if len(line) > MAX_SNIPPET_CHARS:
            line = line[:MAX_SNIPPET_CHARS] + " ..."
        out.append(f"{n + 1:>{width}} | {line}")
    if stop < region.stop:
        out.append(f"{'':>{width}} | ... ({region.stop - stop} more lines)")
    return "\n".join(out)
