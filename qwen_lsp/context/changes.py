"""What changed near the failure: the working tree's diff (staged and unstaged together) and the
recent commits' diffs of the files the failure reaches, hunk by hunk, ranked by how close a hunk is
to the failure (a function the callee walk reached, a file of the trace, any other file) and by how
recent it is, rendered within the section's budget.

"I edited parse(), ran the tests, one fails": the edit is the likeliest cause, and the plan is one
thinking call made before any tool runs. Running git is the only I/O (`read_changes`); ranking and
rendering are pure. Outside a repository, or when git fails, there is simply nothing to show."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field
from unidiff import PatchSet

from qwen_lsp.context.git_context import GitCache, file_stamp, head_sha
from qwen_lsp.context.treesitter import language_for
from qwen_lsp.gitio import GitError, git
from qwen_lsp.llm.tokens import count_tokens

log = logging.getLogger(__name__)

GIT_TIMEOUT = 10.0
MAX_COMMITS = 10  # recent commits of the reached files looked at
LATEST_COMMITS = 2  # the newest commits, whatever files they touch
MAX_COMMIT_CHARS = 200_000  # of one commit's diff: a mass reformat is cut at a file boundary
MAX_LOG_PATHS = 40  # files named to `git log`: the reached ones, best first
MAX_HUNK_LINES = 60  # a longer hunk is cut (and says so): a reformat must not eat the section
OTHER_FILE = 0.05  # an uncommitted hunk of a file the failure does not reach: still worth a look
SUSPECT = 0.7  # a changed function in a reached file, among the callees (a direct call scores 0.6)
RECENCY = 0.8  # per commit further back
_LOG_FORMAT = "--format=%x1e%h%x1f%ad%x1f%an%x1f%s"
_DIFF_ARGS = ("--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/", "--unified=3")


class Hunk(BaseModel):
    path: str  # workspace-relative
    new_start: int
    new_end: int
    function: str = ""  # git's section heading: the enclosing definition as git sees it
    text: str  # the @@ line and the hunk's lines


class Change(BaseModel):
    label: str  # "Uncommitted changes (staged and unstaged)" / "Commit abc1234 2026-01-02 Ann: subject"
    age: int  # 0: the working tree; n: the n-th newest commit of the log that found it (all files, or the reached ones)
    hunks: list[Hunk] = Field(default_factory=list)


@dataclass
class Reach:
    """How close code is to the failure: files (trace, imports, callees) and definitions' spans, scored."""

    files: dict[str, float] = field(default_factory=dict)
    spans: list[tuple[str, int, int, str, float]] = field(default_factory=list)  # (path, start, end, name, score)
    texts: dict[str, str] = field(default_factory=dict)  # today's text of the reached files (for commits' hunks)


def parse_hunks(diff: str, prefix: str = "", *, commit: bool = False) -> list[Hunk]:
    """Hunks of a unified diff of source files; paths made workspace-relative by dropping `prefix`
    (the workspace's path inside the repository). Hunks of files outside it are dropped."""
    try:
        patch = PatchSet(diff)
    except Exception:
        log.debug("diff not parsed", exc_info=True)
        return []
    out: list[Hunk] = []
    for f in patch:
        path = f.path
        if prefix:
            if not path.startswith(prefix + "/"):
                continue
            path = path[len(prefix) + 1 :]
        if f.is_removed_file or f.is_binary_file or language_for(path) is None:
            continue
        for h in f:
            if commit and h.source_start == 0 and h.source_length == 0:
                continue  # a commit adding the file: its code, not a change to it (the callees show code)
            lines = str(h).splitlines()
            if len(lines) > MAX_HUNK_LINES + 1:
                lines = [*lines[: MAX_HUNK_LINES + 1], f"[... {len(lines) - MAX_HUNK_LINES - 1} more lines of this hunk ...]"]
            out.append(Hunk(path=path, new_start=h.target_start, new_end=h.target_start + max(0, h.target_length - 1),
                            function=(h.section_header or "").strip(), text="\n".join(lines)))
    return out


def _run(root: Path, *args: str) -> str | None:
    try:
        return git(root, "-c", "core.quotepath=off", *args, timeout=GIT_TIMEOUT)
    except GitError:
        log.debug("git %s failed", args[0], exc_info=True)
        return None


@dataclass(frozen=True)
class Where:
    """The repository a workspace is in: its top, the workspace's path inside it, and HEAD."""

    root: Path
    prefix: str  # "" when the workspace is the repository's top
    head: str | None  # full sha; None before the first commit


def locate(workspace: Path, cache: GitCache | None = None) -> Where | None:
    """Where `workspace` is in its repository; None outside one. With a `cache` (the language
    server's), read in-process from the repository GitPython opened, else asked of git."""
    if cache is not None:
        repo = cache.repo(workspace)
        if repo is None or repo.working_tree_dir is None:
            return None
        root, head = Path(repo.working_tree_dir), head_sha(repo)
    else:
        top = _run(workspace, "rev-parse", "--show-toplevel")
        if not top:
            return None
        root = Path(top.strip())
        head = (_run(root, "rev-parse", "--verify", "--quiet", "HEAD") or "").strip() or None
    try:
        prefix = Path(os.path.realpath(workspace)).relative_to(os.path.realpath(root)).as_posix()
    except ValueError:
        return None
    return Where(root, "" if prefix == "." else prefix, head)


def worktree_changes(where: Where) -> list[Change]:
    """The working tree's diff against HEAD (staged and unstaged), as one change: it depends on every
    file on disk, so it is read afresh each time (one `git diff`)."""
    wt = _run(where.root, "diff", "HEAD" if where.head else "--cached", *_DIFF_ARGS)
    if wt and (hunks := parse_hunks(wt, where.prefix)):
        return [Change(label="Uncommitted changes (staged and unstaged)", age=0, hunks=hunks)]
    return []


def commit_changes(where: Where, paths: list[str], *, max_commits: int = MAX_COMMITS,
                   cache: GitCache | None = None) -> list[Change]:
    """The newest commits: the last LATEST_COMMITS whatever they touch and the last `max_commits`
    touching `paths`, newest first. They depend on HEAD (and on how much history a shallow clone
    has), not on the working tree: with a `cache` they are read once per HEAD and paths. The
    changes returned are shared with the cache: read them, do not change them."""
    if not where.head or not paths or max_commits <= 0:
        return []
    specs = tuple(f"{where.prefix}/{p}" if where.prefix else p for p in paths[:MAX_LOG_PATHS])
    if cache is None:
        return _commit_changes(where, specs, max_commits)
    common = cache.common_dir(where.root)
    shallow = file_stamp(common / "shallow") if common is not None else None
    key = ("commits", str(where.root), where.head, shallow, where.prefix, specs, max_commits)
    return list(cache.memo(key, lambda: _commit_changes(where, specs, max_commits)))


def _commit_changes(where: Where, specs: tuple[str, ...], max_commits: int) -> list[Change]:
    root, prefix = where.root, where.prefix
    # Modified (and renamed) files only: a commit adding a file shows its code, not a change to it.
    log_args = ("--no-merges", "--date=short", _LOG_FORMAT, "-p", "--diff-filter=MR", *_DIFF_ARGS)
    # The last commits whatever they touch (the user's own latest work), then those of the reached files.
    latest = _run(root, "log", f"-n{LATEST_COMMITS}", *log_args, "--", prefix or ".")
    reached = _run(root, "log", f"-n{max_commits}", *log_args, "--", *specs)
    found: dict[str, Change] = {}
    for log_text in (latest, reached):
        entries = [e for e in (log_text or "").split("\x1e") if e.strip()]
        for age, entry in enumerate(entries, 1):  # recency counts among the commits of that log
            head, _, body = entry.partition("\n")
            parts = head.split("\x1f")
            if len(parts) < 4:
                continue
            sha, date, author, subject = parts[:4]
            if sha in found:
                found[sha].age = min(found[sha].age, age)
                continue
            diff = body[body.find("diff --git"):][:MAX_COMMIT_CHARS] if "diff --git" in body else ""
            hunks = parse_hunks(diff[: diff.rfind("\ndiff --git")] if len(diff) == MAX_COMMIT_CHARS else diff, prefix, commit=True)
            if hunks:
                found[sha] = Change(label=f"Commit {sha} {date} {author}: {subject}", age=age, hunks=hunks)
    # Shown newest first: the order of history.
    order = (_run(root, "rev-list", "--no-merges", f"-n{max_commits * 50}", "HEAD") or "").split()
    position = {full[:12]: i for i, full in enumerate(order)}

    def where_in(sha: str) -> int:
        return next((i for full, i in position.items() if full.startswith(sha) or sha.startswith(full)), len(order))

    return sorted(found.values(), key=lambda c: where_in(c.label.split()[1]))


def read_worktree(workspace: Path, cache: GitCache | None = None) -> tuple[Where | None, list[Change]]:
    """Where the workspace is, and its working tree's changes (the part of `read_changes` that needs
    no paths: the language server starts it first, on another thread)."""
    where = locate(workspace, cache)
    return where, worktree_changes(where) if where is not None else []


def read_changes(
    workspace: Path, paths: list[str], *, max_commits: int = MAX_COMMITS, cache: GitCache | None = None,
    worktree: Callable[[], tuple[Where | None, list[Change]]] | None = None,
) -> list[Change]:
    """The working tree's changes, then the newest commits: the last LATEST_COMMITS whatever they touch and
    the last `max_commits` touching `paths` (workspace-relative, best first), newest first. Empty outside
    a repository. `worktree`: gives `read_worktree`'s answer, read ahead; `cache`: see `commit_changes`."""
    where, out = worktree() if worktree is not None else read_worktree(workspace, cache)
    if where is None:
        return []
    return out + commit_changes(where, paths, max_commits=max_commits, cache=cache)


def changed_functions(changes: list[Change], reach: Reach, *, limit: int = 4) -> list[tuple[str, int, float, str]]:
    """Where the best hunks are in today's files (path, line, score, what changed it), for the callee
    section to show the functions around them whole: a diff alone shows three lines either side."""
    out: list[tuple[str, int, float, str]] = []
    ranked = sorted(((hunk_score(c, h, reach), c, h) for c in changes for h in c.hunks), key=lambda t: -t[0])
    for score, c, h in ranked:
        if len(out) >= limit or score <= 0:
            break
        if c.age == 0:
            lines = [_first_change(h)]
        else:
            lines = _lines_now(h, reach.texts.get(h.path))[:1]
        for line in lines:
            what = "changed in the working tree" if c.age == 0 else f"changed in {c.label.split(':')[0].lower()}"
            out.append((h.path, line, max(score, SUSPECT if h.path in reach.files else OTHER_FILE * 4), what))
    return out


def _first_change(hunk: Hunk) -> int:
    """Today's line of the hunk's first added line (or where its first removed line was)."""
    n = hunk.new_start
    for ln in hunk.text.splitlines()[1:]:
        if ln[:1] in "+-":
            return n
        n += 1
    return hunk.new_start


def _changed_lines(hunk: Hunk) -> list[str]:
    return [ln for ln in hunk.text.splitlines()[1:] if ln[:1] in "+-" and ln[1:].strip()]


def hunk_score(change: Change, hunk: Hunk, reach: Reach) -> float:
    """Closeness to the failure times recency. Line numbers match today's files only for the
    working tree; a commit's added lines are looked up in today's text of the file instead, and
    failing that its changed lines and git's heading are searched for the reached names."""
    best = reach.files.get(hunk.path, 0.0) * (0.5 if change.age == 0 else 0.2)
    spans = [s for s in reach.spans if s[0] == hunk.path]
    if change.age == 0:
        lines = [(hunk.new_start, hunk.new_end)]
    else:
        lines = [(n, n) for n in _lines_now(hunk, reach.texts.get(hunk.path))]
    changed = "\n".join([hunk.function, *_changed_lines(hunk)])
    for _path, start, end, name, score in spans:
        if any(start <= b and a <= end for a, b in lines):
            best = max(best, score)
        elif name and re.search(rf"\b{re.escape(name)}\b", changed):
            best = max(best, score * 0.7)
    if change.age == 0:
        return max(best, OTHER_FILE)
    if change.age <= LATEST_COMMITS:
        best = max(best, OTHER_FILE)  # the user's latest work is worth a look wherever it is
    return best * 0.9 * RECENCY ** (change.age - 1)


def _lines_now(hunk: Hunk, text: str | None) -> list[int]:
    """Where the hunk's added lines are in today's text of the file (those still there, and telling)."""
    if not text:
        return []
    added = {ln[1:].strip() for ln in hunk.text.splitlines()[1:] if ln.startswith("+") and len(ln[1:].strip()) > 3}
    return [i for i, ln in enumerate(text.splitlines(), 1) if ln.strip() in added]


def render_changes(changes: list[Change], reach: Reach, budget: int, already: str = "") -> str:
    """The best hunks that fit `budget` tokens, grouped by change (newest first) in file order.
    A hunk whose changed lines all appear in `already` (the git section) is not repeated."""
    if budget <= 0:
        return ""
    known = set(already.splitlines())
    ranked = sorted(
        ((hunk_score(c, h, reach), n, i, h) for n, c in enumerate(changes) for i, h in enumerate(c.hunks)),
        key=lambda t: (-t[0], t[1], t[2]),
    )
    chosen: dict[int, list[tuple[int, Hunk]]] = {}
    used = 0
    for score, n, i, h in ranked:
        if score <= 0:
            break
        lines = _changed_lines(h)
        if lines and all(ln in known for ln in lines):
            continue
        cost = count_tokens(h.text) + 12 + (0 if n in chosen else 24)
        if used + cost > budget:
            continue
        used += cost
        chosen.setdefault(n, []).append((i, h))
    parts = []
    for n in sorted(chosen):  # the working tree, then the commits newest first
        hunks = sorted(chosen[n], key=lambda t: (t[1].path, t[1].new_start))
        body = "\n".join(f"--- {h.path}\n{h.text}" for _, h in hunks)
        parts.append(f"{changes[n].label}:\n```diff\n{body}\n```")
    return "\n\n".join(parts)
