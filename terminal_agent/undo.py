"""Undo history: before a fix is written, the previous contents of every file it
touches are saved; `qfix --undo` puts the newest fix of the workspace back, and
refuses when a file was edited after the fix (undoing would lose that edit)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from pydantic import BaseModel

from qwen_lsp.apply import apply_changes, check_fresh
from qwen_lsp.types import FileChange

from terminal_agent.paths import state_dir

KEEP = 50  # fixes remembered per workspace


class UndoFile(BaseModel):
    path: str  # workspace-relative
    before: str | None  # None: the fix created the file
    after: str


class UndoEntry(BaseModel):
    workspace: str
    command: str
    applied_at: float
    files: list[UndoFile]


class UndoRefused(RuntimeError):
    pass


def _history(workspace: Path) -> Path:
    key = hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:16]
    return state_dir() / "undo" / key


def _entries(workspace: Path) -> list[Path]:
    """Oldest first."""
    return sorted(_history(workspace).glob("*.json"), key=lambda p: int(p.stem))


def remember(workspace: Path, command: str, changes: list[FileChange]) -> Path:
    """Save what `changes` will overwrite; returns the entry (delete it if applying fails)."""
    entry = UndoEntry(
        workspace=str(workspace.resolve()),
        command=command,
        applied_at=time.time(),
        files=[UndoFile(path=c.path, before=None if c.created else c.original, after=c.updated) for c in changes],
    )
    folder = _history(workspace)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{time.time_ns()}.json"
    path.write_text(entry.model_dump_json(), encoding="utf-8")
    for old in _entries(workspace)[:-KEEP]:
        old.unlink(missing_ok=True)
    return path


def undo_last(workspace: Path) -> UndoEntry:
    """Restore the newest applied fix in `workspace` and drop it from the history."""
    entries = _entries(workspace)
    if not entries:
        raise UndoRefused(f"nothing to undo: qfix has applied no fix in {workspace}")
    newest = entries[-1]
    entry = UndoEntry.model_validate_json(newest.read_text(encoding="utf-8"))
    # The reverse of the fix, as changes whose "original" is what the fix wrote.
    reverse = [FileChange(path=f.path, original=f.after, updated=f.before or "", diff="") for f in entry.files]
    stale = check_fresh(workspace, reverse)
    if stale:
        raise UndoRefused(
            f"not undone: {', '.join(stale)} changed after the fix for `{entry.command}` was applied; "
            "restoring would lose those edits"
        )
    apply_changes(workspace, [c for c, f in zip(reverse, entry.files, strict=True) if f.before is not None])
    for f in entry.files:
        if f.before is None:  # the fix created it: undoing removes it
            (workspace / f.path).unlink()
    newest.unlink()
    return entry
