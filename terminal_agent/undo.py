"""Undo history: a fix's undo entry (the previous contents of every file it touches) is
written in the same transaction as the fix, and `qfix --undo` puts the newest fix of the
workspace back and drops its entry in one transaction too; it refuses when a file was edited
after the fix (undoing would lose that edit). Both go through the workspace's apply journal
(qwen_lsp/journal.py), so a qfix killed while writing leaves nothing half done: `recover`
(run first by every qfix) rolls the interrupted write back, entry included."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from pydantic import BaseModel

from qwen_lsp import journal
from qwen_lsp.apply import ApplyError, SideFile, StaleFile, Write, apply_changes, apply_writes, new_folders
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
    made_dirs: list[str] = []  # folders the fix created (workspace-relative, outermost first)


class UndoRefused(RuntimeError):
    pass


def _key(workspace: Path) -> str:
    return hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:16]


def _history(workspace: Path) -> Path:
    return state_dir() / "undo" / _key(workspace)


def journal_dir(workspace: Path) -> Path:
    """The workspace's apply journal: the user's state, never a folder a repository could fill."""
    return state_dir() / "journal" / _key(workspace)


def recover(workspace: Path) -> journal.Rollback | None:
    """Roll back a fix or an undo that a killed qfix left half written in `workspace`."""
    return journal.recover(journal_dir(workspace), workspace, [_history(workspace)])


def sweep_stray_temps() -> list[str]:
    """The temporary files killed writes left in every workspace (SIGKILL mid-apply): removed at
    the next qfix anywhere, not only the next one there. A journal counts only in the folder its
    own root names (a planted one elsewhere is ignored) and only its own temporary files go;
    the roll back itself waits for the next qfix in that workspace, which tells the user."""
    removed: list[str] = []
    for folder in sorted((state_dir() / "journal").glob("*/")):
        try:
            root = Path(journal.Journal.model_validate_json((folder / journal.JOURNAL).read_bytes()).root)
        except (OSError, ValueError):
            continue  # none, or unreadable: `recover` in its workspace says so
        if root.is_absolute() and _key(root) == folder.name:
            removed += journal.sweep_temps(folder, root, [_history(root)])
    return removed


def _entries(workspace: Path) -> list[Path]:
    """Oldest first."""
    return sorted(_history(workspace).glob("*.json"), key=lambda p: int(p.stem))


def apply_with_undo(workspace: Path, command: str, changes: list[FileChange]) -> Path:
    """Write `changes` and their undo entry, all or nothing (see apply.py); returns the entry."""
    entry = UndoEntry(
        workspace=str(workspace.resolve()),
        command=command,
        applied_at=time.time(),
        files=[UndoFile(path=c.path, before=None if c.created else c.original, after=c.updated) for c in changes],
        made_dirs=new_folders(workspace, [c.path for c in changes]),
    )
    folder = _history(workspace)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{time.time_ns()}.json"
    apply_changes(workspace, changes, journal=journal_dir(workspace), label=f"the fix for `{command}`",
                  side=[SideFile(path, entry.model_dump_json().encode())])
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
        apply_writes(workspace, [Write(f.path, expected=f.after, text=f.before) for f in entry.files],
                     journal=journal_dir(workspace), label=f"the undo of the fix for `{entry.command}`",
                     side=[SideFile(newest, None)], drop_dirs=entry.made_dirs)
    except StaleFile as exc:
        raise UndoRefused(
            f"not undone: {', '.join(exc.paths)} changed after the fix for `{entry.command}` was applied; "
            "restoring would lose those edits"
        ) from exc
    except ApplyError as exc:
        raise UndoRefused(f"not undone: {exc}") from exc
    return entry
