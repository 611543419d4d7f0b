"""Who is asking: the session id a router keeps on one replica (x-session-id).

One session is one workspace of one developer. The workspace's path alone is not enough: every
devcontainer checks out at /workspaces/NAME, so two developers would share a session (and a
replica, and a gateway's `user`). The developer's part is their `user_id` setting, or else an id
made once per installation and kept in the cache folder.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path

from qwen_lsp.settings import Settings

INSTALLATION_FILE = "installation-id"


def installation_id(cache_dir: Path) -> str:
    """A random id made the first time and kept in `cache_dir` (a new one if it cannot be kept)."""
    path = Path(cache_dir).expanduser() / INSTALLATION_FILE
    try:
        text = path.read_text(encoding="ascii").strip()
        if len(text) == 32 and all(c in "0123456789abcdef" for c in text):
            return text
    except (OSError, UnicodeDecodeError):
        pass
    made = uuid.uuid4().hex
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{INSTALLATION_FILE}.{os.getpid()}")
        temporary.write_text(made, encoding="ascii")
        os.replace(temporary, path)  # two processes at once: one id wins, and both read it next time
        return path.read_text(encoding="ascii").strip()
    except OSError:
        return made


def session_id(settings: Settings, workspace: Path) -> str:
    """The x-session-id of `workspace` for this developer: the user's own session_id setting, else a
    hash of who (user_id or the installation id) and where (the workspace's real path)."""
    if settings.session_id:
        return settings.session_id
    who = settings.user_id or installation_id(settings.cache_dir)
    where = os.path.realpath(workspace)
    return hashlib.sha256(f"{who}\n{where}".encode()).hexdigest()[:16]
