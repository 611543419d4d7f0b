"""Paths the model may never create, edit or delete, because something runs them
without the user looking: git hooks and config (`core.fsmonitor` runs on `git status`),
whatever git's configuration says it runs (a `core.hooksPath` folder, included config
files, driver scripts: see runs_later.executed_paths), virtualenvs and installed packages
(a `.pth` file runs on every start of Python), bytecode caches, and qwen-lsp's own folders
wherever they lie, inside a workspace too (runpaths.own_dirs: the cache with its plans and
tokenizer, qfix's state with its journals, the build cache): a planted journal would be
"rolled back" by the next qfix.

One check, used by the overlay (the tool answers the model with the reason) and by
`apply_changes` (a second line before anything is written, asking git afresh).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

from qwen_lsp.engine.runs_later import ConfigEntry, executed_paths, git_reason
from qwen_lsp.gitio import GitError, config_entries, repo_root
from qwen_lsp.runpaths import own_dirs

log = logging.getLogger(__name__)

_DIRS = {
    ".git": "git's own data (config and hooks run commands)",
    ".hg": "Mercurial's own data (hgrc hooks run commands)",
    ".svn": "Subversion's own data",
    ".jj": "Jujutsu's own data",
    "node_modules": "installed packages",
    "site-packages": "installed packages",
    "dist-packages": "installed packages",
    "__pycache__": "compiled bytecode Python would run",
}
_SUFFIXES = {".pth": "a .pth file runs code on every start of Python", ".pyc": "compiled bytecode Python would run"}


class ProtectedPath(ValueError):
    pass


def git_executed(root: Path) -> dict[str, str]:
    """What git's configuration makes it run in `root` (workspace-relative path -> why); without
    git, only `.gitmodules` (git's own folder is protected by name whatever git says)."""
    real = Path(os.path.realpath(root))
    try:
        entries = [ConfigEntry(*e) for e in config_entries(real)]
        top = Path(os.path.realpath(repo_root(real))).as_posix()
    except GitError as exc:
        log.debug("cannot ask git what it runs in %s: %s", root, exc)
        entries, top = [], None
    return executed_paths(real.as_posix(), entries, top)


def protected_reason(root: Path, rel: str, extra: Iterable[Path] = (),
                     executed: Mapping[str, str] | None = None) -> str | None:
    """Why the workspace-relative `rel` is off limits, or None. `extra`: more protected directories;
    `executed`: what git runs (`git_executed`)."""
    parts = PurePosixPath(rel).parts
    for part in parts:
        why = _DIRS.get(part.lower())  # .GIT is .git on a case-insensitive filesystem
        if why:
            return f"{rel} is inside {part}/ ({why})"
    suffix = PurePosixPath(rel).suffix.lower()
    if suffix in _SUFFIXES:
        return f"{rel}: {_SUFFIXES[suffix]}"
    if executed and (why := git_reason(rel, dict(executed))):
        return why
    if parts and parts[-1] == "pyvenv.cfg":
        return f"{rel} would make its directory a virtualenv"
    for depth in range(1, len(parts)):
        venv = root.joinpath(*parts[:depth])
        if (venv / "pyvenv.cfg").is_file():
            return f"{rel} is inside the virtualenv {PurePosixPath(*parts[:depth])}/"
    target = (root / rel).resolve()
    for directory, what in [*((d, "qwen-lsp's cache directory") for d in extra), *own_dirs()]:
        directory = directory.resolve()
        if target == directory or directory in target.parents:
            return f"{rel} is inside {what}"
    return None


def check_writable(root: Path, rel: str, extra: Iterable[Path] = (),
                   executed: Mapping[str, str] | None = None) -> None:
    """Raise ProtectedPath (with a message the model can act on) if `rel` is protected."""
    why = protected_reason(root, rel, extra, executed)
    if why:
        raise ProtectedPath(
            f"{why}. It is protected: qwen-lsp never changes it. Change the project's own source files "
            "instead; if this file really must change, say so in finish's summary and the user will do it."
        )


def refuse_protected(root: Path, paths: Iterable[str]) -> None:
    """Raise ProtectedPath if any of `paths` is protected (the last line before writing; git is
    asked again what it runs, so a result computed earlier gets no pass)."""
    executed = git_executed(root)
    for rel in paths:
        why = protected_reason(root, rel, executed=executed)
        if why:
            raise ProtectedPath(f"refused to write {why}; nothing was written")
