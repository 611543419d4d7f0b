"""Writing a result's changes to disk, safely: a file the user changed since the
engine read it is never overwritten, and nothing is written unless all files
are still as read (so a fix never lands half-applied)."""

from __future__ import annotations

from pathlib import Path

from qwen_lsp.engine.protected import refuse_protected
from qwen_lsp.types import FileChange


class StaleFile(RuntimeError):
    pass


def check_fresh(root: Path, changes: list[FileChange]) -> list[str]:
    """Paths whose disk contents differ from what the engine read."""
    stale = []
    for change in changes:
        target = root / change.path
        current = _read(target)
        expected = None if change.created else change.original
        if current != expected:
            stale.append(change.path)
    return stale


def apply_changes(root: Path, changes: list[FileChange]) -> None:
    """Write every change, or none when any file changed since it was read."""
    refuse_protected(root, [c.path for c in changes])  # .git/, virtualenvs, *.pth...: never written
    stale = check_fresh(root, changes)
    if stale:
        raise StaleFile("changed since the fix was computed, not overwritten: " + ", ".join(stale))
    for change in changes:
        target = root / change.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(change.updated, encoding="utf-8", errors="surrogateescape", newline="")


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return None
