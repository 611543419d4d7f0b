"""A small multi-file project for the repo-map and live-index tests, and git with a fixed author and date."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from qwen_lsp.context.callees import CalleeWalk
from qwen_lsp.context.repomap import build_index
from qwen_lsp.context.source import read_source


def write(root: Path, rel: str, text: str | bytes) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(text) if isinstance(text, bytes) else p.write_text(text)


def write_all(root: Path, files: dict[str, str]) -> Path:
    """`files` (relative path -> text) written under `root`; `root`."""
    for rel, text in files.items():
        write(root, rel, text)
    return root


def walk_of(ws: Path, tmp_path: Path) -> CalleeWalk:
    """A callee walk over workspace `ws`, its index cached under `tmp_path`."""
    return CalleeWalk(build_index(ws, cache_dir=tmp_path / "cache"), lambda rel: read_source(ws, rel))


def backdate(root: Path, seconds: int = 60) -> None:
    """Every file and folder last changed a while ago: past the snapshot's racy window."""
    when = time.time_ns() - seconds * 1_000_000_000
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            os.utime(os.path.join(dirpath, name), ns=(when, when))
        os.utime(dirpath, ns=(when, when))


def damage_file(path: Path, how: str) -> bool:
    """Spoil a stored file the way disks and crashes do; False for a kind this does not know."""
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "flipped byte":
        path.write_bytes(data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:])
    elif how == "garbage":
        path.write_bytes(os.urandom(len(data)))
    elif how == "empty":
        path.write_bytes(b"")
    else:
        return False
    return True


def make_app(root: Path) -> Path:
    """Models, two modules using them, and a utility nothing uses."""
    write(root, "app/models.py", "class User:\n    def save(self):\n        pass\n\n\nclass Order:\n    def total(self):\n        return 0\n")
    write(root, "app/views.py", "from app.models import User\n\n\ndef show_user(uid):\n    u = User()\n    u.save()\n    return u\n")
    write(root, "app/billing.py", "from app.models import Order\n\n\ndef invoice(o: Order):\n    return o.total()\n")
    write(root, "app/util.py", "def slugify(s):\n    return s.lower()\n")
    return root


def git(cwd: Path, *args: str, date: str = "2024-03-01T12:00:00") -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.com", "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date,
        "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout
