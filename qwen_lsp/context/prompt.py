"""Prompt assembly in a fixed order — system, tool schemas, repo map, git
context, files, the code the failure reaches (callees, recent changes), task — so that successive requests about one workspace share
the longest byte-stable prefix (vLLM prefix caching), with a token budget per
section and for the whole input."""

from __future__ import annotations

import json
import logging
import re
import string
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from qwen_lsp.context.changes import read_worktree
from qwen_lsp.context.frames import Frame, parse_output, primary_frame, strip_ansi, truncate_output
from qwen_lsp.context.git_context import GitCache, git_context, render_git
from qwen_lsp.context.index import WorkspaceIndex
from qwen_lsp.context.preload import tags_and_graph
from qwen_lsp.context.ranking import RefGraph, focus_imports
from qwen_lsp.context.reached import failure_starts, reached_sections
from qwen_lsp.context.repomap import MAX_FILE_BYTES, TagIndex, repo_map
from qwen_lsp.context.source import fence_language, read_source, referenced_names, render_context, render_snippet, source_context
from qwen_lsp.context.treesitter import language_for
from qwen_lsp.types import Task
from qwen_lsp.settings import Settings
from qwen_lsp.llm.tokens import count_tokens, truncate_to_tokens

log = logging.getLogger(__name__)

# What the chat template adds around the messages and tool schemas (role tags, tool preamble).
TEMPLATE_OVERHEAD = 256
HEADINGS = {
    "repo_map": "# Repository map", "git": "# Git context", "files": "# Files",
    "callees": "# Code the failure reaches", "changes": "# Recent changes near the failure", "task": "# Task",
}
MAX_FRAME_FILES = 4  # other files of the traceback shown besides the primary one
HEAD_CHARS_PER_TOKEN = 5  # code has 3-4 characters a token: a head this long is over the limit it is checked against


class Prompt(BaseModel):
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    section_tokens: dict[str, int]
    frames: list[Frame] = Field(default_factory=list)
    primary: Frame | None = None


def _marker(budget: int) -> str:
    return f"\n[... truncated to fit the {budget}-token budget ...]"


def fit(text: str, budget: int) -> str:
    """`text` if it fits in `budget` tokens, else its head plus a visible truncation marker."""
    if budget <= 0:
        return ""
    if count_tokens(text) <= budget:
        return text
    marker = _marker(budget)
    return truncate_to_tokens(text, max(0, budget - count_tokens(marker))).rstrip("\n") + marker


def assemble(
    task: Task,
    workspace: Path,
    settings: Settings,
    *,
    system: str,
    tools: list[dict],
    read_file: Callable[[str], str | None] | None = None,
    cache_dir: Path | None = None,
    max_model_len: int | None = None,
    live: WorkspaceIndex | None = None,
) -> Prompt:
    """The chat messages for `task`: system, then one user message with the repo map,
    git context, files and the task, in that order, within the settings' budgets.

    `max_model_len` (the server's context length, if known) caps the total input
    budget; leave room for the completion by passing max_model_len - max_tokens.
    `live`, the language server's in-memory index of this workspace, replaces the disk index and
    memoises the map and git histories."""
    workspace = Path(workspace)
    budgets = settings.budgets
    if max_model_len is not None and max_model_len < budgets.total_input:
        budgets = budgets.model_copy(update={"total_input": max(0, max_model_len)})

    # --- where the task points: the task's own location, then the traceback's frames
    frames: list[Frame] = []
    primary: Frame | None = None
    if task.terminal_output:
        cwd = workspace / task.cwd if task.cwd else workspace
        try:
            # Parsing is linear but not free: a huge log is first cut around its failure.
            frames = parse_output(
                truncate_output(task.terminal_output, max_lines=5000), cwd=cwd, workspace=workspace, command=task.command
            )
        except Exception:
            log.debug("terminal output not parsed; no frames", exc_info=True)
            frames = []
        primary = primary_frame(frames)
    focus_path, focus_line, focus_end = task.path, task.start_line, task.end_line
    if focus_path is None and primary is not None:
        focus_path, focus_line, focus_end = primary.resolved, primary.line, primary.line
    focus_line = focus_line or (primary.line if primary is not None and primary.resolved == focus_path else None)
    frame_files = _frame_locations(frames, primary)
    focus_files = [p for p in dict.fromkeys([focus_path, *[p for p, _ in frame_files]]) if p]

    # --- budgets: the whole input must fit; the task is kept, the context sections shrink together
    fixed = count_tokens(system) + (count_tokens(json.dumps(tools, ensure_ascii=False)) if tools else 0) + TEMPLATE_OVERHEAD
    available = max(0, budgets.total_input - fixed)
    task_budget = min(budgets.task, max(0, available // 2))
    wanted = budgets.repo_map + budgets.git + budgets.files + budgets.callees + budgets.changes
    scale = min(1.0, max(0, available - task_budget) / wanted) if wanted else 0.0
    map_budget, git_budget, files_budget, callee_budget, change_budget = (
        int(b * scale) for b in (budgets.repo_map, budgets.git, budgets.files, budgets.callees, budgets.changes))

    # --- git runs in processes of its own: started first, on threads, it works while this thread
    # tags the buffers and builds the map and the files section
    git_cache = live.git if live is not None else None
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="qwen-git")
    try:
        git_section = pool.submit(_git_section, workspace, focus_files[:3], _failing_lines(focus_path, focus_line, focus_end, frame_files),
                                  git_cache, read_file, git_budget - 8)
        worktree = pool.submit(read_worktree, workspace, git_cache)

        # --- tags (shared by the map and by definition lookup for the files section)
        index: TagIndex | None = None
        graph: RefGraph | None = None
        try:
            if live is not None:
                index = live.tag_index()
            else:  # what a preload (context/preload.py) loaded while the command ran, if it still holds
                index, graph = tags_and_graph(workspace, cache_dir if cache_dir is not None else settings.cache_dir)
        except Exception:
            log.debug("tag index not built; no repo map", exc_info=True)
            index = None

        mentioned = _mentioned_names(workspace, focus_path, focus_line, focus_end, primary, read_file)
        sections: dict[str, str] = {}
        try:
            exclude = [focus_path] if focus_path else []
            if live is not None:
                sections["repo_map"] = live.repo_map(max(0, map_budget - 8), focus_files=focus_files, mentioned=mentioned,
                                                     exclude=exclude, read_file=read_file)
            else:
                sections["repo_map"] = (
                    repo_map(workspace, max(0, map_budget - 8), focus_files=focus_files, mentioned=mentioned,
                             exclude=exclude, index=index, graph=graph,
                             imported=focus_imports([f for f in focus_files if f in index.files],
                                                    lambda rel: read_source(workspace, rel, read_file)))
                    if index is not None else ""
                )
        except Exception:
            log.debug("repo map not built", exc_info=True)
            sections["repo_map"] = ""
        if live is not None and (too_large := live.not_indexed()):
            sections["repo_map"] = (sections["repo_map"].rstrip() + "\n\n" + not_indexed_note(too_large)).lstrip()

        files, shown = _files_section(
            workspace, focus_path, focus_line, focus_end, frame_files, files_budget - 8, read_file, index
        )
        sections["git"], sections["files"] = git_section.result(), files
        reached = reached_sections(
            workspace, index, lambda rel: read_source(workspace, rel, read_file), failure_starts(frames, primary, (focus_path, focus_line)),
            frames, shown=shown, callee_budget=callee_budget - 8, change_budget=change_budget - 8, git_text=sections["git"],
            git_cache=git_cache, worktree=worktree.result, parses=live.parses if live is not None else None,
        )
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    sections["callees"], sections["changes"] = reached.callees, reached.changes
    sections["task"] = _fit_task(task, frames, primary, task_budget - 8)

    user = "\n\n".join(f"{HEADINGS[k]}\n\n{v.strip() or '(none)'}" for k, v in sections.items())
    # Headings and joins cost a few tokens the section budgets did not see: trim files if over.
    over = fixed + count_tokens(user) - budgets.total_input
    if over > 0:
        files_tokens = count_tokens(sections["files"])
        sections["files"] = fit(sections["files"], max(0, files_tokens - over - 16))
        user = "\n\n".join(f"{HEADINGS[k]}\n\n{v.strip() or '(none)'}" for k, v in sections.items())

    section_tokens = {"system": count_tokens(system), "tools": fixed - count_tokens(system) - TEMPLATE_OVERHEAD}
    section_tokens.update({k: count_tokens(v) for k, v in sections.items()})
    section_tokens["total"] = count_tokens(system) + count_tokens(user) + section_tokens["tools"]
    return Prompt(
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        tools=tools, section_tokens=section_tokens, frames=frames, primary=primary,
    )


def _failing_lines(path: str | None, line: int | None, end: int | None, frame_files: list[tuple[str, int]]) -> dict[str, list[int]]:
    """The lines whose history the git section shows, per file: the task's, then the frames'."""
    lines: dict[str, list[int]] = {}
    if path and line:
        lines.setdefault(path, []).extend(range(line, (end or line) + 1))
    for p, ln in frame_files:
        lines.setdefault(p, []).append(ln)
    return lines


def _git_section(
    workspace: Path, paths: list[str], lines: dict[str, list[int]], cache: GitCache | None,
    read_file: Callable[[str], str | None] | None, budget: int,
) -> str:
    try:
        return fit(render_git(git_context(workspace, paths, lines, cache=cache, read_file=read_file)), budget)
    except Exception:
        log.debug("git section not built", exc_info=True)
        return ""


def not_indexed_note(too_large: dict[str, int]) -> str:
    """Says which open files the map leaves out for their size, so the model does not take a
    missing definition for a missing file."""
    names = sorted(too_large)
    shown = ", ".join(f"{rel} ({too_large[rel] / 1e6:.1f} MB)" for rel in names[:5])
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    return (f"Not indexed, too large to index (over {MAX_FILE_BYTES // 1000} KB): {shown}{more}. "
            "Their definitions are not in this map; read_file can still show parts of them.")


def _frame_locations(frames: list[Frame], primary: Frame | None) -> list[tuple[str, int]]:
    """User frames of the primary frame's trace, deepest first, one per (file, line)."""
    if primary is None:
        return []
    out: list[tuple[str, int]] = []
    for f in reversed([f for f in frames if f.trace == primary.trace and f.resolved and not f.library]):
        if f.resolved and (f.resolved, f.line) not in out:
            out.append((f.resolved, f.line))
    return out


def _mentioned_names(
    workspace: Path, path: str | None, line: int | None, end: int | None, primary: Frame | None,
    read_file: Callable[[str], str | None] | None,
) -> list[str]:
    names: list[str] = []
    if path and line:
        text = read_source(workspace, path, read_file)
        if text is not None:
            try:
                names.extend(referenced_names(text, language_for(path), line, end or line))
            except Exception:
                log.debug("names not read from %s", path, exc_info=True)
                pass
    if primary is not None:
        names.extend(re.findall(r"[`'\"‘]([A-Za-z_][\w]*)[`'\"’]", primary.message))
    return list(dict.fromkeys(names))


def _files_section(
    workspace: Path, path: str | None, line: int | None, end: int | None, frame_files: list[tuple[str, int]],
    budget: int, read_file: Callable[[str], str | None] | None, index: TagIndex | None,
) -> tuple[str, list[tuple[str, int, int]]]:
    """The files section, and the spans it shows whole (path, first line, last line)."""
    spans: list[tuple[str, int, int]] = []
    if budget <= 0:
        return "", spans
    parts: list[str] = []
    used = 0
    lookup = index.lookup if index is not None else None

    def add(text: str) -> bool:
        nonlocal used
        tokens = count_tokens(text) + 2
        if used + tokens > budget:
            return False
        parts.append(text)
        used += tokens
        return True

    if path:
        text = read_source(workspace, path, read_file)
        if text is None:
            add(f"### {path}\n(could not be read: missing, binary or too large)")
        else:
            whole = f"### {path} (whole file, {len(text.splitlines())} lines)\n```{fence_language(path)}\n{text.rstrip()}\n```"
            ctx = None
            try:
                ctx = source_context(workspace, path, line, end_line=end, read_file=read_file, lookup=lookup)
            except Exception:
                log.debug("source context failed for %s; whole file only", path, exc_info=True)
                ctx = None
            if ctx is None or not more_tokens_than(whole, budget * 0.6):
                if add(whole):
                    spans.append((path, 1, len(text.splitlines())))
                else:
                    parts.append(fit(whole, budget - used))
                    used = budget
                related = ctx.related if ctx is not None else []
                if related:
                    add("Definitions used at the failing line:\n" + "\n".join(render_snippet(s) for s in related))
            else:
                excerpt = render_context(ctx)
                if add(excerpt):
                    spans.extend((s.path, s.start_line, s.end_line) for s in [ctx.focus, *ctx.related] if s is not None)
                else:
                    parts.append(fit(excerpt, budget - used))
                    used = budget
    shown = {path}
    for other, ln in frame_files:
        if other in shown or len(shown) > MAX_FRAME_FILES:
            continue
        shown.add(other)
        try:
            ctx = source_context(workspace, other, ln, read_file=read_file, lookup=None, max_related=0)
        except Exception:
            log.debug("source context failed for %s", other, exc_info=True)
            ctx = None
        if ctx is None or ctx.focus is None:
            continue
        if add(f"### {other} (traceback frame at line {ln})\n" + render_snippet(ctx.focus)):
            spans.append((other, ctx.focus.start_line, ctx.focus.end_line))
    return "\n\n".join(parts), spans


def more_tokens_than(text: str, limit: float) -> bool:
    """`count_tokens(text) > limit`, counting only a head of a long text when the head alone is over.

    Exact: the tokenizer splits the text into pieces by a regular expression and encodes each piece on
    its own, and a line that starts with a letter after a newline starts a new piece (no piece spans
    that newline and the letter), so the head's tokens are the text's first tokens."""
    start = int(limit * HEAD_CHARS_PER_TOKEN)
    if len(text) > 2 * start:
        cut = start
        while (cut := text.find("\n", cut) + 1) and cut < len(text) and text[cut] not in string.ascii_letters:
            pass
        if 0 < cut < len(text) and count_tokens(text[:cut]) > limit:
            return True
    return count_tokens(text) > limit


def _fit_task(task: Task, frames: list[Frame], primary: Frame | None, budget: int) -> str:
    """The task section within budget: the request stays whole, the terminal output shrinks around the failure."""
    text = ""
    for max_lines in (200, 100, 50, 20, 8):
        text = _task_section(task, frames, primary, max_lines)
        if count_tokens(text) <= budget:
            return text
    return fit(text, budget)


def _task_section(task: Task, frames: list[Frame], primary: Frame | None, max_lines: int = 200) -> str:
    rows = [f"Kind: {task.kind.value}", f"Request: {task.description}"]
    if task.path:
        where = task.path
        if task.start_line:
            where += f":{task.start_line}" + (f"-{task.end_line}" if task.end_line and task.end_line != task.start_line else "")
        rows.append(f"Location: {where}")
    if task.command:
        rows.append(f"Command: {task.command}" + (f" (exit code {task.exit_code})" if task.exit_code is not None else ""))
    if task.cwd:
        rows.append(f"Working directory: {task.cwd}")
    if primary is not None:
        rows.append(f"Primary failure: {primary.resolved}:{primary.line}" + (f":{primary.column}" if primary.column else "") + f": {primary.message}")
        user = [f for f in frames if f.trace == primary.trace and f.resolved and not f.library]
        if len(user) > 1:
            rows.append("Call chain (outermost first): " + " -> ".join(f"{f.resolved}:{f.line}" + (f" {f.function}" if f.function else "") for f in user))
    others = [f for f in frames if primary is not None and f.trace != primary.trace and f.resolved and f.severity == "error"]
    if others:
        rows.append("Other errors: " + "; ".join(f"{f.resolved}:{f.line}: {f.message.splitlines()[0][:120]}" for f in others[:8]))
    text = "\n".join(rows)
    if task.terminal_output:
        output = truncate_output(strip_ansi(task.terminal_output), max_lines=max_lines, max_line_chars=500)
        text += f"\n\nTerminal output:\n```\n{output.rstrip()}\n```"
    return text
