"""Which frame matters: severities inside a stack, and the primary location of a whole output."""

from __future__ import annotations

from collections.abc import Iterable

from .model import Frame, Severity


def rank_trace(
    frames: list[Frame], section_sizes: Iterable[int], related: Iterable[bool], *, stack: bool, severity: Severity = "error"
) -> None:
    """Severities of one trace: a call stack's callers are context, and so is every related stack
    (a Suppressed: exception, ASan's "freed by", the race detector's previous access)."""
    if stack:
        stack_severities(frames, section_sizes, severity)
    for frame, is_related in zip(frames, related, strict=True):
        if is_related:
            frame.severity = "info"


def stack_severities(frames: list[Frame], section_sizes: Iterable[int], severity: Severity = "error") -> None:
    """In each section of a stack trace: innermost and deepest user frame are errors, callers info."""
    pos = 0
    for size in section_sizes:
        section = frames[pos : pos + size]
        pos += size
        if not section:
            continue
        for f in section:
            f.severity = "info"
        section[-1].severity = severity
        user = [f for f in section if f.resolved and not f.library]
        if user:
            user[-1].severity = severity


def primary_frame(frames: list[Frame]) -> Frame | None:
    """The location to fix: the last user frame in the workspace of the first failing trace.

    Errors win over warnings; a trace in library code only has no primary frame; a
    recognised format's frames win over the generic location finder's guesses."""
    user = [f for f in frames if f.resolved and not f.library]
    if not user:
        return None
    user = [f for f in user if not f.guessed] or user
    pool = [f for f in user if f.severity == "error"] or [f for f in user if f.severity == "warning"] or user
    first = pool[0].trace
    in_trace = [f for f in user if f.trace == first]
    errors = [f for f in in_trace if f.severity == "error"]
    return (errors or in_trace)[-1]
