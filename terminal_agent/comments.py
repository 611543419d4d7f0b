"""`qfix --comments [PATH]`: do the instruction comments (`# qwen: …`) of the files under PATH.

    files   PATH itself, or the files git sees under it (tracked and untracked, not ignored)
    each file with marked comments: one engine run (all of its comments), the diff shown with the
            comments taken out, then [a]pply / [s]kip / [q]uit (--yes: only a verified change;
            --dry-run and --json: nothing written)

Comments arriving with a `git pull` are repository content: they run nothing until the user runs this.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from qwen_lsp.apply import ApplyError
from qwen_lsp.engine.comments import MarkedComment, comment_task, find_marked, strip_comments
from qwen_lsp.engine.loop import Engine
from qwen_lsp.engine.protected import ProtectedPath
from qwen_lsp.gitio import GitError, git
from qwen_lsp.llm.client import ModelServerError, RequestRejected
from qwen_lsp.sanitize import json_safe
from qwen_lsp.settings import Settings
from qwen_lsp.types import FixResult, Task

from terminal_agent import agent, undo
from terminal_agent.ui import UI

MAX_FILE_BYTES = 1_000_000  # a bigger file is data, not code someone wrote a request in


class FileOutcome(BaseModel):
    path: str
    instructions: list[str]
    outcome: str  # the engine's outcome, or "applied", "not_applied", "proposed"
    diff: str = ""
    error: str | None = None


class CommentsReport(BaseModel):
    workspace: str
    files: list[FileOutcome] = Field(default_factory=list)
    exit_status: int = 0


def marked_files(target: Path, workspace: Path, markers: list[str]) -> dict[str, list[MarkedComment]]:
    """Workspace-relative path -> its marked comments, for the files at or under `target`."""
    out: dict[str, list[MarkedComment]] = {}
    for path in _files(target, workspace):
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                continue
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        rel = path.relative_to(workspace).as_posix()
        if found := find_marked(text, rel, markers):
            out[rel] = found
    return out


def _files(target: Path, workspace: Path) -> list[Path]:
    if target.is_file():
        return [target]
    try:
        listed = git(workspace, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", str(target),
                     timeout=30)
        return sorted({workspace / p for p in listed.split("\0") if p and (workspace / p).is_file()})
    except GitError:  # not a repository: every file below, hidden folders left out
        found = []
        for folder, dirs, names in os.walk(target):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            found += [Path(folder) / n for n in names]
        return sorted(found)


def run(target: str, opts: agent.Options) -> int:
    ui = UI(to_stderr=opts.json)
    path = Path(target).resolve()
    if not path.exists():
        ui.fail(f"{target}: no such file or folder")
        return 2
    workspace = agent.find_workspace(path if path.is_dir() else path.parent).resolve()
    settings = agent.settings_for(workspace, ui)
    report = CommentsReport(workspace=str(workspace))
    found = marked_files(path, workspace, settings.comment_markers)
    if not found:
        ui.say(f"No instruction comments ({', '.join(settings.comment_markers)}) under {target}.")
    try:
        for rel, comments in found.items():
            if not _do_file(rel, comments, workspace, settings, opts, ui, report):
                break
    except RequestRejected as exc:
        ui.fail(" ".join(str(exc).split()))
        report.exit_status = 4
    except ModelServerError as exc:
        ui.fail(" ".join(str(exc).split()))
        report.exit_status = 2
    except KeyboardInterrupt:
        ui.fail("cancelled")
        report.exit_status = 130
    else:
        done = ("applied", "proposed")
        report.exit_status = 0 if all(f.outcome in done for f in report.files) else 1
    if opts.json:
        print(json_safe(report.model_dump_json(indent=2)))
    return report.exit_status


def _do_file(rel: str, comments: list[MarkedComment], workspace: Path, settings: Settings, opts: agent.Options,
             ui: UI, report: CommentsReport) -> bool:
    """One file's comments, start to end; False when the user quit."""
    ui.say(f"\n{rel}: " + "; ".join(f"line {c.line}: {c.instruction}" for c in comments), "bold")
    task = comment_task(rel, comments, comments, marker=settings.comment_markers[0] if settings.comment_markers else "qwen:")
    with ui.working() as progress:
        result = asyncio.run(_think(task, workspace, settings, progress))
    result.changes = [strip_comments(c, comments) for c in result.changes]
    result.changes = [c for c in result.changes if c.created or c.updated != c.original]
    entry = FileOutcome(path=rel, instructions=[c.instruction for c in comments], outcome=result.outcome,
                        diff="".join(c.diff for c in result.changes), error=result.error)
    report.files.append(entry)
    if not result.changes:
        ui.fail(f"nothing done: {agent.NO_FIX.get(result.outcome, result.outcome)}")
        return True
    agent.show(result, ui)
    if opts.dry_run:
        entry.outcome = "proposed"
        ui.say("Dry run: nothing was changed.", "bold")
        return True
    entry.outcome = "not_applied"
    refused = (agent.unverified(result) or agent.needs_consent(result)) if opts.yes else None
    if refused:
        ui.fail(f"not applied: {refused}; run without --yes to review it and decide")
        return True
    if opts.yes:
        choice = "apply"
    elif not ui.interactive:
        ui.say("Not applied: no terminal to ask on (use --yes to apply).")
        return True
    else:
        while (choice := ui.choose(f"Apply the changes to {len(result.changes)} file(s)?")) == "edit":
            ui.say("There is no command to edit here.")
    if choice == "quit":
        return False
    if choice == "apply":
        try:
            undo.apply_with_undo(workspace, f"qfix --comments {rel}", result.changes)
        except (ApplyError, ProtectedPath) as exc:
            ui.fail(f"not applied: {exc}")
            return True
        entry.outcome = "applied"
        ui.ok(f"applied to {', '.join(c.path for c in result.changes)}  (qfix --undo puts it back)")
    return True


async def _think(task: Task, workspace: Path, settings: Settings, progress: Callable[[str], None]) -> FixResult:
    engine = Engine(settings)
    try:
        return await engine.fix(task, workspace, progress=progress)
    finally:
        await engine.client.close()
