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


def git(cwd: Path, *args: str, timeout: float | None = None, ok_codes: tuple[int, ...] = (0,),
        stdin: bytes | None = None) -> str:
    """Run `git args...` in `cwd`; its stdout (bytes that are not UTF-8 kept as surrogate escapes).
    `ok_codes`: exit codes that are answers, not failures (`git check-ignore` says "none" with 1)."""
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False, timeout=timeout,
                              input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)
    except OSError as exc:
        raise GitError(f"cannot run git: {exc}") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git {args[0]} took longer than {timeout:g}s") from exc
    if proc.returncode not in ok_codes:
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


def config_entries(root: Path) -> list[tuple[str, str, str]]:
    """Every configuration value git uses in `root` (system, global, local, worktree, includes
    followed): (origin, key, value), e.g. ("file:.git/config", "core.hookspath", ".githooks")."""
    fields = git(root, "config", "--list", "--show-origin", "-z", timeout=QUICK_TIMEOUT).split("\0")
    # -z: each value is two NUL-terminated fields, its origin, then "key\nvalue"
    return [(origin, *pair.partition("\n")[::2]) for origin, pair in zip(fields[0::2], fields[1::2])]

def ignored(root: Path, paths: list[str]) -> set[str]:
    """Which of the workspace-relative `paths` git ignores (never tracked files: git tracks those)."""
    if not paths:
        return set()
    data = "".join(p + "\0" for p in paths).encode("utf-8", "surrogateescape")
    out = git(root, "check-ignore", "-z", "--stdin", timeout=QUICK_TIMEOUT, ok_codes=(0, 1), stdin=data)
    return {p for p in out.split("\0") if p}
