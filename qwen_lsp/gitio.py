"""Running git: the few plumbing calls the front ends need, through one runner.

The history for prompts (`context/git_context.py`) reads the repository with
GitPython; this module runs the `git` command for everything else, so that what
we read is exactly what `git` (and its hooks, index and config) sees.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

QUICK_TIMEOUT = 10.0  # for questions git answers at once; a hung one (a locked NFS mount) must not hang us


class GitError(Exception):
    """git is missing, failed, or took too long; the message says which (git's own words when it has some)."""


def git(cwd: Path, *args: str, timeout: float | None = None) -> str:
    """Run `git args...` in `cwd`; its stdout (bytes that are not UTF-8 kept as surrogate escapes)."""
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False, timeout=timeout)
    except OSError as exc:
        raise GitError(f"cannot run git: {exc}") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git {args[0]} took longer than {timeout:g}s") from exc
    if proc.returncode != 0:
        raise GitError(proc.stderr.decode("utf-8", "replace").strip() or f"git {args[0]} failed")
    return proc.stdout.decode("utf-8", "surrogateescape")


def repo_root(cwd: Path) -> Path:
    """The top-level directory of the work tree holding `cwd`; GitError outside one."""
    return Path(git(cwd, "rev-parse", "--show-toplevel", timeout=QUICK_TIMEOUT).strip())


def show(root: Path, spec: str) -> str | None:
    """`git show <rev>:<path>` (`HEAD:./a.py`, `:a.py` for the index); None when there is no
    such blob (untracked, not staged, outside a repository, or no git at all)."""
    try:
        return git(root, "show", spec)
    except GitError:
        return None


def staged_diff(root: Path) -> str:
    """The whole staged change, in a form the parser can rely on whatever the user's git config says."""
    return git(
        root, "-c", "core.quotepath=off", "diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv",
        "--src-prefix=a/", "--dst-prefix=b/", "--unified=3",
    )
