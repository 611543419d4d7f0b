"""Where qfix keeps its per-user state (shell records, undo history). Stdlib, platformdirs
and qwen_lsp.runpaths only: the shell integration asks for it at every shell start."""

from __future__ import annotations

from pathlib import Path

from qwen_lsp.runpaths import state_dir

__all__ = ["sessions_dir", "state_dir"]


def sessions_dir() -> Path:
    """One `<shell pid>.json` per shell session: its last command."""
    return state_dir() / "sessions"
