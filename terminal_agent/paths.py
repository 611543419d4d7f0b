"""Where qfix keeps its per-user state (shell records, undo history). Stdlib and
platformdirs only: the shell integration asks for it at every shell start."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_state_dir


def state_dir() -> Path:
    """QFIX_STATE_DIR overrides the platform's per-user state directory (tests use it)."""
    return Path(os.environ.get("QFIX_STATE_DIR") or user_state_dir("qwen-lsp"))


def sessions_dir() -> Path:
    """One `<shell pid>.json` per shell session: its last command."""
    return state_dir() / "sessions"
