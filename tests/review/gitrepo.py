"""Throwaway git repositories for the review tests, isolated from the machine's git config."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# Variables a parent git process (a hook running the tests) would leak into child repositories.
_LEAKY = ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX", "GIT_EXEC_PATH")
IDENTITY = {
    "GIT_AUTHOR_NAME": "Ada Tester",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Tester",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
}


def git_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment for git with no global or system config and a fixed identity."""
    env = {k: v for k, v in (base if base is not None else os.environ).items() if k not in _LEAKY}
    env.update(IDENTITY, GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    return env


class GitRepo:
    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.env = env if env is not None else git_env()
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", *args], cwd=self.root, env=self.env, capture_output=True, text=True, check=check
        )

    def write(self, relpath: str, text: str) -> Path:
        path = self.root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def stage(self, relpath: str, text: str) -> None:
        self.write(relpath, text)
        self.git("add", "--", relpath)

    def commit(self, message: str, files: dict[str, str] | None = None) -> str:
        for relpath, text in (files or {}).items():
            self.stage(relpath, text)
        self.git("commit", "-q", "-m", message)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").stdout.strip()
