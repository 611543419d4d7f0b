"""Undo history: before a fix is written, the previous contents of every file it
touches are saved; `qfix --undo` puts the newest fix of the workspace back, and
refuses when a file was edited after the fix (undoing would lose that edit)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from pydantic import BaseModel

from qwen_lsp.apply import ApplyError, StaleFile, Write, apply_writes
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
    """Save what `changes` will overwrite; returns the entry (delete it if applying fails).
    Written to a temporary name and renamed: an entry is whole or absent."""
    entry = UndoEntry(
        workspace=str(workspace.resolve()),
        command=command,
        applied_at=time.time(),
        files=[UndoFile(path=c.path, before=None if c.created else c.original, after=c.updated) for c in changes],
    )
    folder = _history(workspace)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{time.time_ns()}.json"
    partial = path.with_suffix(".partial")
    partial.write_text(entry.model_dump_json(), encoding="utf-8")
    partial.replace(path)
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
    # The reverse of the fix, all or nothing: what it wrote back to what was there (None: remove).
    try:
        apply_writes(workspace, [Write(f.path, expected=f.after, text=f.before) for f in entry.files])
    except StaleFile as exc:
        raise UndoRefused(
            f"not undone: {', '.join(exc.paths)} changed after the fix for `{entry.command}` was applied; "
            "restoring would lose those edits"
        ) from exc
    except ApplyError as exc:
        raise UndoRefused(f"not undone: {exc}") from exc
    newest.unlink()
    return entry
