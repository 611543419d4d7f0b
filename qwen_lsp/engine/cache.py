"""Disk cache of reasoning state: the same problem asked again (editor, qfix or
review hook) restores the plan and skips the thinking call.

The key is a fingerprint of the task (normalized error text), of the files
involved (their content hashes), so a changed file invalidates the entry, and of
the server and model that thought the plan. Paths
under the workspace root are made relative first, so the same failure in a
second clone, a worktree or a CI checkout of the same code shares the plan.
diskcache gives size bounds, persistence and multi-process safety (SQLite).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
import time
from pathlib import Path
from typing import Any, TypeVar

import diskcache
from pydantic import BaseModel, ValidationError

from qwen_lsp.types import CachedState, Task

M = TypeVar("M", bound=BaseModel)

_VOLATILE = [
    (re.compile(r"0x[0-9a-fA-F]+"), "0x?"),  # addresses
    (re.compile(r"\b\d+(\.\d+)?\s*(s|ms|sec|seconds)\b"), "<t>"),  # durations
    (re.compile(r"/tmp/[^\s:'\"]+"), "/tmp/?"),  # temp paths
    (re.compile(r"\d{4}-\d\d-\d\d[T _]\d\d[:_]\d\d[:_]\d\d([._]\d+)?Z?"), "<date>"),  # log names, timestamps
    (re.compile(r"(thread '[^']*') \(\d+\)"), r"\1"),  # newer Rust prints the thread id in panics
    (re.compile(r"\bgoroutine \d+\b"), "goroutine ?"),  # Go panics
    (re.compile(r"[ \t]+"), " "),
]


def normalize_output(text: str, root: Path | None = None) -> str:
    """Error text with the parts that change between identical failures removed.

    With `root`, absolute paths under it become workspace-relative
    ("/home/a/proj/calc.py" -> "calc.py", "/home/a/proj" -> "."), before the
    /tmp rule could blur a workspace that lives under /tmp.
    """
    if root is not None:
        text = relative_to_root(text, root)
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    return "\n".join(line.strip() for line in text.strip().splitlines())


def relative_to_root(text: str, root: Path) -> str:
    """`text` with every absolute path under `root` (as given or resolved) made relative to it."""
    for prefix in _root_spellings(root):
        # Not inside a longer name: "/w/proj" must leave "/w/proj2/x" and "/x/w/proj" alone.
        pattern = re.compile(r"(?<![\w.~/-])" + re.escape(prefix) + r"(?:/+|(?![\w.-]))")
        text = pattern.sub(lambda m: "" if m.group().endswith("/") else ".", text)
    return text


def _root_spellings(root: Path) -> list[str]:
    """The root as given and resolved (symlinked checkouts print either), longest first."""
    spellings = {str(root).rstrip("/")}
    try:
        spellings.add(str(root.resolve()).rstrip("/"))
    except OSError:
        pass
    return sorted((s for s in spellings if s), key=len, reverse=True)


def task_fingerprint(task: Task, file_hashes: dict[str, str], root: Path | None = None,
                     server: tuple[str, str] | None = None, plan_mode: str = "thinking") -> str:
    """The cache key of `task`. Pass the workspace `root` so that absolute paths in the
    error text and command do not tie the key to one checkout's location, and the `server`
    (base URL, model id) the plan comes from: a plan thought by one model is never replayed
    to another (a small local model's plan to the real one, a test double's to a server).
    `plan_mode` says how the plan is made (thinking, reading, no thinking): a plan made one
    way is not the answer to a request for another."""
    payload = {
        "server": [server[0].rstrip("/"), server[1]] if server else None,
        "plan_mode": plan_mode,
        "kind": task.kind.value,
        "description": normalize_output(task.description, root),
        "path": task.path,
        "lines": [task.start_line, task.end_line],
        "output": normalize_output(task.terminal_output or "", root),
        "command": relative_to_root(task.command, root) if task.command and root is not None else task.command,
        "files": sorted(file_hashes.items()),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()

log = logging.getLogger(__name__)


class StateCache:
    """Size-bounded, persistent, process-safe store of pydantic models."""

    def __init__(self, directory: Path, size_limit_mb: int = 512) -> None:
        self.directory = Path(directory)
        self._size_limit = size_limit_mb * 1024 * 1024
        self._cache = self._open()

    def _open(self) -> diskcache.Cache | None:
        """The cache; None (after one warning) when its folder cannot be used at all: the cache is an
        optimisation, and a full or read-only disk must not stop a fix."""
        try:
            cache = diskcache.Cache(str(self.directory), size_limit=self._size_limit)
            cache.check(fix=False)  # touches the database: fails here when corrupted
            return cache
        except Exception as exc:  # noqa: BLE001 - corruption, or a folder that cannot be written
            first = exc
        try:  # corrupted: start empty, keep the old folder aside
            aside = self.directory.with_name(f"{self.directory.name}.corrupt-{int(time.time())}")
            shutil.move(str(self.directory), str(aside))
            return diskcache.Cache(str(self.directory), size_limit=self._size_limit)
        except Exception:  # noqa: BLE001 - not corruption: the folder itself is unusable (full, read-only)
            why = first.strerror if isinstance(first, OSError) and first.strerror else str(first) or type(first).__name__
            log.warning("qwen-lsp: the cache folder %s cannot be used (%s): running without it", self.directory, why)
            return None

    def get_state(self, key: str) -> CachedState | None:
        return self.get(key, CachedState)

    def put_state(self, key: str, state: CachedState) -> None:
        self.put(key, state)

    def get(self, key: str, model: type[M]) -> M | None:
        if self._cache is None:
            return None
        try:
            raw: Any = self._cache.get(key)
        except Exception:  # noqa: BLE001 - an unreadable entry is a miss, never a crash
            return None
        if raw is None:
            return None
        try:
            return model.model_validate_json(raw)
        except ValidationError:
            return None

    def put(self, key: str, value: BaseModel) -> None:
        if self._cache is None:
            return
        try:
            self._cache.set(key, value.model_dump_json())
        except Exception:  # noqa: BLE001 - a full or read-only disk must not fail the fix
            pass

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
