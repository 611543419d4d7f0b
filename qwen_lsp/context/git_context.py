"""Git history for the files and lines involved: the uncommitted diff, the
last commits touching those lines, and blame for the failing lines.

Works outside any repository (empty context), in a repository with no
commits, in shallow clones and in worktrees. Every git failure shrinks the
context instead of raising."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from qwen_lsp.context.headlines import to_head

log = logging.getLogger(__name__)

T = TypeVar("T")
_MISSING = object()

try:  # gitpython raises at import when no git executable is on PATH
    import git
except ImportError:  # pragma: no cover - the machine has git
    git = None  # type: ignore[assignment]


class BlameLine(BaseModel):
    line: int
    commit: str  # short sha, or "uncommitted"
    author: str
    date: str  # YYYY-MM-DD
    summary: str
    text: str


class CommitInfo(BaseModel):
    sha: str  # short
    date: str
    author: str
    subject: str
    diff: str  # the relevant hunks only, capped


class FileHistory(BaseModel):
    path: str  # workspace-relative
    status: str = ""  # "modified", "untracked", "added", "" (clean)
    diff: str = ""  # uncommitted changes
    commits: list[CommitInfo] = Field(default_factory=list)
    blame: list[BlameLine] = Field(default_factory=list)


class GitContext(BaseModel):
    repo_root: str | None = None
    branch: str | None = None
    head: str | None = None  # short sha; None before the first commit
    shallow: bool = False
    files: list[FileHistory] = Field(default_factory=list)


def open_repo(workspace: Path) -> git.Repo | None:
    if git is None:
        return None
    try:
        return git.Repo(workspace, search_parent_directories=True)
    except Exception:  # not a repository, a broken .git, no permission
        log.debug("no git repository at %s", workspace, exc_info=True)
        return None


def _git(repo: git.Repo, *args: str) -> str | None:
    try:
        return repo.git.execute(["git", *args], with_extended_output=False, as_process=False, stdout_as_string=True)  # type: ignore[call-overload]
    except Exception:
        log.debug("git %s failed", " ".join(args), exc_info=True)
        return None


def _cap(text: str, max_lines: int) -> str:
    lines = text.splitlines()
    if len(lines) <= max_lines:
        return text.rstrip("\n")
    return "\n".join(lines[:max_lines]) + f"\n[... {len(lines) - max_lines} more diff lines ...]"


def _ranges(lines: Iterable[int], context: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for ln in sorted(set(lines)):
        a, b = max(1, ln - context), ln + context
        if spans and a <= spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], max(spans[-1][1], b))
        else:
            spans.append((a, b))
    return spans


def _parse_log(out: str) -> list[CommitInfo]:
    """Entries of `git log --format=%x1e%h%x1f%ad%x1f%an%x1f%s [-p|-L]`."""
    commits = []
    for entry in out.split("\x1e"):
        if not entry.strip():
            continue
        head, _, body = entry.partition("\n")
        parts = head.split("\x1f")
        if len(parts) < 4:
            continue
        diff_start = body.find("diff --git")
        diff = body[diff_start:] if diff_start >= 0 else body.strip()
        commits.append(CommitInfo(sha=parts[0], date=parts[1], author=parts[2], subject=parts[3], diff=diff))
    return commits


def _blame(repo: git.Repo, relpath: str, lines: list[int], has_head: bool, rev: str | None = None) -> list[BlameLine]:
    """Blame of `lines` in the working tree's file, or in `rev`'s version of it."""
    if not has_head or not lines:
        return []
    out: list[BlameLine] = []
    for a, b in _ranges(lines, 0):
        text = _git(repo, "blame", "--line-porcelain", "-L", f"{a},{b}", *([rev] if rev else []), "--", relpath)
        if not text:
            continue
        info: dict[str, str] = {}
        sha, final = "", 0
        for ln in text.splitlines():
            if ln.startswith("\t"):
                uncommitted = set(sha) == {"0"}
                date = ""
                if info.get("author-time"):
                    date = datetime.fromtimestamp(int(info["author-time"]), tz=UTC).strftime("%Y-%m-%d")
                out.append(
                    BlameLine(
                        line=final, commit="uncommitted" if uncommitted else sha[:8], author=info.get("author", ""),
                        date=date, summary="" if uncommitted else info.get("summary", ""), text=ln[1:],
                    )
                )
                info = {}
            elif len(parts := ln.split(" ")) >= 3 and len(parts[0]) >= 40 and all(c in "0123456789abcdef" for c in parts[0]):
                sha, final = parts[0], int(parts[2])
            else:
                key, _, value = ln.partition(" ")
                info[key] = value
    return out


class GitCache:
    """File histories of one long-lived process (the language server), keyed on what they depend on:
    HEAD, the index file's stamp, the file's content and the lines asked about. A repeated request
    about unchanged code runs no git subprocess at all (HEAD and refs are read in-process)."""

    def __init__(self, max_entries: int = 512) -> None:
        self._repos: dict[str, git.Repo | None] = {}
        self._histories: dict[tuple, FileHistory] = {}
        self._head_texts: dict[tuple, list[str] | None] = {}
        self._memo: dict[tuple, Any] = {}
        self._lock = threading.Lock()
        self._max = max_entries

    def repo(self, workspace: Path) -> git.Repo | None:
        key = os.path.abspath(workspace)
        if key not in self._repos:
            self._repos[key] = open_repo(workspace)
        return self._repos[key]

    def stamp(self, workspace: Path) -> tuple:
        """What the git section of `workspace` depends on besides its files' contents: HEAD and
        the index file's stamp (both read in-process, no subprocess)."""
        repo = self.repo(workspace)
        if repo is None:
            return ()
        return head_sha(repo), file_stamp(Path(repo.git_dir) / "index")

    def head_lines(self, repo: git.Repo, head: str, in_repo: str) -> list[str] | None:
        """HEAD's version of a file, by line (one `git show` per file and HEAD)."""
        key = ("head", head, in_repo)
        if key not in self._head_texts:
            if len(self._head_texts) >= self._max:
                self._head_texts.pop(next(iter(self._head_texts)))
            text = _git(repo, "show", f"{head}:{in_repo}")
            self._head_texts[key] = text.splitlines() if text is not None else None
        return self._head_texts[key]

    def common_dir(self, workspace: Path) -> Path | None:
        """The repository's common git directory (a worktree's is its main repository's)."""
        repo = self.repo(workspace)
        return Path(repo.common_dir) if repo is not None else None

    def memo(self, key: tuple, build: Callable[[], T]) -> T:
        """`build()`'s value kept under `key`, which must name everything it depends on. The value
        is shared by every caller: read it, never change it."""
        hit = self._memo.get(key, _MISSING)
        if hit is _MISSING:
            hit = build()  # outside the lock: git takes its time; two threads may both ask it
            with self._lock:
                while len(self._memo) >= self._max:
                    self._memo.pop(next(iter(self._memo)))
                self._memo[key] = hit
        return hit

    def history(self, key: tuple, build) -> FileHistory:
        hit = self._histories.get(key)
        if hit is None:
            if len(self._histories) >= self._max:
                self._histories.pop(next(iter(self._histories)))
            hit = self._histories[key] = build()
        return hit.model_copy(deep=True)


def head_sha(repo: git.Repo) -> str | None:
    # Read from HEAD and refs/packed-refs, no subprocess. Not `repo.head.commit`: that asks GitPython's
    # one `git cat-file` process, which two threads at once (a prefetch assembling while a fix computes
    # its key) can leave waiting forever on each other's answer.
    try:
        return git.refs.symbolic.SymbolicReference.dereference_recursive(repo, "HEAD")
    except Exception:
        return None


def file_stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _content_key(path: Path) -> str | None:
    try:
        return hashlib.sha1(path.read_bytes()).hexdigest()
    except OSError:
        return None


def git_context(
    workspace: Path,
    paths: list[str],
    lines: dict[str, list[int]] | None = None,
    *,
    max_commits: int = 3,
    diff_lines: int = 40,
    cache: GitCache | None = None,
    read_file: Callable[[str], str | None] | None = None,
) -> GitContext:
    """History for `paths` (workspace-relative); `lines` narrows commits and blame to those lines.
    With a `cache`, histories of unchanged files come from memory, and `lines` are the lines of the
    buffers `read_file` reads (None: of the files on disk)."""
    repo = cache.repo(workspace) if cache is not None else open_repo(workspace)
    if repo is None or repo.working_tree_dir is None:
        return GitContext()
    if cache is not None:
        return _cached_context(repo, cache, workspace, paths, lines or {}, max_commits, diff_lines, read_file)
    root = Path(repo.working_tree_dir)
    try:
        has_head = repo.head.is_valid()
    except Exception:
        log.debug("cannot read HEAD", exc_info=True)
        has_head = False
    ctx = GitContext(repo_root=str(root))
    try:
        ctx.branch = None if repo.head.is_detached else repo.active_branch.name
    except Exception:
        log.debug("cannot read the current branch", exc_info=True)
        ctx.branch = None
    if has_head:
        ctx.head = (_git(repo, "rev-parse", "--short", "HEAD") or "").strip() or None
        ctx.shallow = (_git(repo, "rev-parse", "--is-shallow-repository") or "").strip() == "true"
    lines = lines or {}
    for relpath in dict.fromkeys(paths):
        abs_path = (workspace / relpath).resolve() if not os.path.isabs(relpath) else Path(relpath)
        try:
            in_repo = abs_path.relative_to(root.resolve()).as_posix()
        except ValueError:
            continue  # a file of another repository (or none)
        ctx.files.append(_file_history(repo, relpath, in_repo, lines.get(relpath, []), has_head, max_commits, diff_lines))
    return ctx


def _cached_context(
    repo: git.Repo, cache: GitCache, workspace: Path, paths: list[str], lines: dict[str, list[int]],
    max_commits: int, diff_lines: int, read_file: Callable[[str], str | None] | None = None,
) -> GitContext:
    root = Path(repo.working_tree_dir or workspace)
    head = head_sha(repo)
    git_dir = Path(repo.git_dir)
    ctx = GitContext(repo_root=str(root), head=head[:7] if head else None, shallow=(Path(repo.common_dir) / "shallow").exists())
    try:
        ctx.branch = None if repo.head.is_detached else repo.active_branch.name
    except Exception:
        ctx.branch = None
    index_stamp = file_stamp(git_dir / "index")
    for relpath in dict.fromkeys(paths):
        abs_path = (workspace / relpath).resolve() if not os.path.isabs(relpath) else Path(relpath)
        try:
            in_repo = abs_path.relative_to(root.resolve()).as_posix()
        except ValueError:
            continue
        file_lines = lines.get(relpath, [])
        state = (str(root), head, index_stamp, in_repo, relpath, _content_key(abs_path), diff_lines)
        # Two entries: editing the buffer moves the failing lines but not the file on disk,
        # so the status and diff stay cached while only the line history is asked again.
        hist = cache.history(("changes", *state), lambda: _changes(repo, relpath, in_repo, head is not None, diff_lines))
        if hist.status != "untracked" and head is not None:
            lined = _head_line_history(repo, cache, head, relpath, in_repo, abs_path, file_lines, max_commits,
                                       diff_lines, read_file)
            hist.commits, hist.blame = lined.commits, lined.blame
        ctx.files.append(hist)
    return ctx


def _head_line_history(
    repo: git.Repo, cache: GitCache, head: str, relpath: str, in_repo: str, abs_path: Path, lines: list[int],
    max_commits: int, diff_lines: int, read_file: Callable[[str], str | None] | None,
) -> FileHistory:
    """The line history of buffer `lines`, asked (and cached) in HEAD's line numbers: an edit
    that only moves them asks git nothing. Lines HEAD does not have are blamed as uncommitted."""
    text = read_file(relpath) if read_file is not None else None
    if text is None:
        try:
            text = abs_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
    buffer = text.splitlines()
    head_lines = cache.head_lines(repo, head, in_repo)
    if head_lines is None:  # not in HEAD (added since): nothing to follow
        return FileHistory(path=relpath)
    mapped = to_head(buffer, head_lines, lines)
    at_head = sorted(set(mapped.values()))
    lined = cache.history(("lines@head", head, in_repo, tuple(at_head), max_commits, diff_lines),
                          lambda: _line_history(repo, relpath, in_repo, at_head, max_commits, diff_lines, rev=head))
    back = {h: b for b, h in mapped.items()}
    blame = [b.model_copy(update={"line": back[b.line]}) for b in lined.blame if b.line in back]
    for line in sorted(set(lines) - set(mapped)):
        if 0 < line <= len(buffer):
            blame.append(BlameLine(line=line, commit="uncommitted", author="Not Committed Yet", date="", summary="",
                                    text=buffer[line - 1]))
    lined.blame = sorted(blame, key=lambda b: b.line)
    return lined


def _file_history(
    repo: git.Repo, relpath: str, in_repo: str, lines: list[int], has_head: bool, max_commits: int, diff_lines: int
) -> FileHistory:
    hist = _changes(repo, relpath, in_repo, has_head, diff_lines)
    if hist.status != "untracked" and has_head:
        lined = _line_history(repo, relpath, in_repo, lines, max_commits, diff_lines)
        hist.commits, hist.blame = lined.commits, lined.blame
    return hist


def _changes(repo: git.Repo, relpath: str, in_repo: str, has_head: bool, diff_lines: int) -> FileHistory:
    """Status and uncommitted diff: they depend on the file's state, not on the lines asked about."""
    hist = FileHistory(path=relpath)
    status = (_git(repo, "status", "--porcelain", "--", in_repo) or "").strip()
    code = status[:2]
    hist.status = {"??": "untracked", "A ": "added", "AM": "added", "D ": "deleted", " D": "deleted"}.get(
        code, "modified" if code.strip() else ""
    )
    if hist.status == "untracked":
        return hist  # no history, and its whole content is in the files section anyway
    if has_head:
        diff = _git(repo, "diff", "HEAD", "--unified=2", "--", in_repo) or ""
    else:
        diff = _git(repo, "diff", "--cached", "--unified=2", "--", in_repo) or ""
    hist.diff = _cap(diff, diff_lines)
    return hist


def _line_history(
    repo: git.Repo, relpath: str, in_repo: str, lines: list[int], max_commits: int, diff_lines: int,
    rev: str | None = None,
) -> FileHistory:
    """The commits that made `lines` what they are, and their blame (needs a HEAD); `rev`: the
    lines are `rev`'s (HEAD's), else the working tree's."""
    fmt = "--format=%x1e%h%x1f%ad%x1f%an%x1f%s"
    log = None
    spans = _ranges(lines, 3)
    if spans:
        # -L follows the lines through history: the commits that made these lines what they are.
        args = ["log", f"-n{max_commits}", "--date=short", fmt, "--no-color"]
        for a, b in spans[:3]:
            args.append(f"-L{a},{b}:{in_repo}")
        log = _git(repo, *args)
    if not log:  # no lines given, or -L failed (range past the end of HEAD's version)
        log = _git(repo, "log", f"-n{max_commits}", "--date=short", fmt, "--no-color", "-p", "--unified=1", "--", in_repo)
    hist = FileHistory(path=relpath, blame=_blame(repo, in_repo, lines, True, rev))
    for c in _parse_log(log or ""):
        c.diff = _cap(c.diff, diff_lines // 2)
        hist.commits.append(c)
    return hist


def render_git(ctx: GitContext) -> str:
    """Markdown for the git section; empty when there is nothing to say."""
    if ctx.repo_root is None:
        return ""
    head = f"branch {ctx.branch or '(detached)'}, HEAD {ctx.head or '(no commits yet)'}" + (", shallow clone" if ctx.shallow else "")
    parts = [head]
    for f in ctx.files:
        if f.status == "untracked":
            parts.append(f"### {f.path}\nUntracked (not in git yet).")
            continue
        sub = [f"### {f.path}" + (f" ({f.status})" if f.status else "")]
        if f.diff:
            sub.append("Uncommitted changes:\n```diff\n" + f.diff + "\n```")
        if f.blame:
            rows = "\n".join(f"{b.line:>5} {b.commit} {b.date} {b.author}: {b.summary} | {b.text}" for b in f.blame)
            sub.append("Blame of the failing lines:\n```\n" + rows + "\n```")
        for c in f.commits:
            body = f"\n```diff\n{c.diff}\n```" if c.diff else ""
            sub.append(f"Commit {c.sha} {c.date} {c.author}: {c.subject}{body}")
        if len(sub) > 1:
            parts.append("\n\n".join(sub))
    return "\n\n".join(parts)
