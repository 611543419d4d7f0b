"""The code a failure reaches beyond its frames, as two prompt sections: the callees' bodies
(callees.py) and what changed there lately (changes.py). Where a request's failure starts: the
task's location and every user frame of the failing trace (a chained exception's causes are
frames of the same trace), the failing test's whole function among them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from qwen_lsp.context.callees import Callee, CalleeWalk, ParseCache, is_test_path, render_callees, with_changed
from qwen_lsp.context.changes import Change, Reach, Where, changed_functions, read_changes, render_changes
from qwen_lsp.context.frames import Frame
from qwen_lsp.context.git_context import GitCache
from qwen_lsp.context.repomap import TagIndex

log = logging.getLogger(__name__)

ReadFile = Callable[[str], str | None]
IMPORTED = 0.3  # a file a start's file imports: reachable, but nothing says this call path runs


class Reached(BaseModel):
    callees: str = ""
    changes: str = ""


def failure_starts(frames: list[Frame], primary: Frame | None, focus: tuple[str | None, int | None]) -> list[tuple[str, int]]:
    """(path, line) where the failure happens: the task's location, then the user frames of the
    primary frame's trace, deepest first."""
    out: list[tuple[str, int]] = []
    path, line = focus
    if path and line:
        out.append((path, line))
    if primary is not None:
        for f in reversed([f for f in frames if f.trace == primary.trace and f.resolved and not f.library]):
            if f.resolved and (f.resolved, f.line) not in out:
                out.append((f.resolved, f.line))
    return out


def failing_test_start(starts: list[tuple[str, int]], frames: list[Frame]) -> tuple[str, int] | None:
    """The failing test's frame: a start in a test file, or in a function named test*."""
    named = {(f.resolved, f.line) for f in frames if (f.function or "").startswith("test")}
    for start in starts:
        if start in named:
            return start
    return next((s for s in starts if is_test_path(s[0])), None)


def failure_message(frames: list[Frame]) -> str:
    """What the failure says (the first error's message: `AssertionError: assert 'No such option' in …`)."""
    return next((f.message for f in frames if f.severity == "error" and f.message), "")


def reached_sections(
    workspace: Path, index: TagIndex | None, read: ReadFile, starts: list[tuple[str, int]], frames: list[Frame],
    *, shown: list[tuple[str, int, int]], callee_budget: int, change_budget: int, git_text: str = "",
    git_cache: GitCache | None = None, worktree: Callable[[], tuple[Where | None, list[Change]]] | None = None,
    parses: ParseCache | None = None,
) -> Reached:
    """The callees section and the changes section (each within its budget, either may be empty).
    `git_cache` and `worktree`: see changes.read_changes; `parses`: callees.ParseCache."""
    out = Reached()
    callees: list[Callee] = []
    walk: CalleeWalk | None = None
    if index is not None and starts:
        try:
            walk = CalleeWalk(index, read, parses)
            test = failing_test_start(starts, frames)
            callees = walk.walk(starts, walk.hints(*test, failure_message(frames)) if test else [])
        except Exception:
            log.debug("callees not walked", exc_info=True)
            callees = []
    reach = _reach(starts, walk, callees)
    changes: list[Change] = []
    try:
        changes = read_changes(workspace, sorted(reach.files, key=lambda p: -reach.files[p]), cache=git_cache,
                               worktree=worktree)
    except Exception:
        log.debug("changes not read", exc_info=True)
    if walk is not None:
        for path in {h.path for c in changes for h in c.hunks} - reach.texts.keys():
            if (p := walk.parsed(path)) is not None:
                reach.texts[path] = p.text
        try:
            callees = with_changed(walk, callees, changed_functions(changes, reach))
            out.callees = render_callees(walk, callees, callee_budget, shown)
        except Exception:
            log.debug("callee section not rendered", exc_info=True)
    out.changes = render_changes(changes, reach, change_budget, git_text)
    return out


def _reach(starts: list[tuple[str, int]], walk: CalleeWalk | None, callees: list[Callee]) -> Reach:
    """How close files and definitions are to the failure: the starts' files, what they import, the callees."""
    reach = Reach()
    for path, _line in starts:
        reach.files[path] = 1.0
    if walk is not None:
        for path, _line in starts:
            p = walk.parsed(path)
            for b in (p.bindings.values() if p is not None else ()):
                for f in [*walk.module_paths(path, b.qualified), *walk.module_paths(path, b.module)]:
                    reach.files.setdefault(f, IMPORTED)
    for c in callees:
        reach.files[c.path] = max(reach.files.get(c.path, 0.0), c.score)
        if walk is not None and c.path not in reach.texts and (p := walk.parsed(c.path)) is not None:
            reach.texts[c.path] = p.text
        if c.defn.kind != "module":
            reach.spans.append((c.path, c.start, c.defn.end_line, c.defn.name, c.score))
    return reach
