"""`qfix --ask "TEXT"`: a plain-words request from the terminal, as the editors' *Ask Qwen…*: the engine's
plan and diff for TEXT in this workspace, [a]pply writes it (undoable with `qfix --undo`), a suggested
command lands on your command line. There is no failing command, so nothing is re-run; `--dry-run` and
`--json` change nothing, and `--yes` applies only a change a sandboxed check verified."""

from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path

from qwen_lsp.engine.loop import Engine
from qwen_lsp.llm.client import ModelServerError, RequestRejected
from qwen_lsp.sanitize import json_safe
from qwen_lsp.types import Task, TaskKind
from terminal_agent import agent
from terminal_agent.report import QfixReport
from terminal_agent.ui import UI


def run(text: str, opts: agent.Options) -> int:
    """The request `text` in the workspace of the current folder; qfix's exit code."""
    ui = UI(to_stderr=opts.json)
    here = Path.cwd()
    workspace = agent.find_workspace(here)
    command = f"qfix --ask {shlex.quote(text)}"
    report = QfixReport(command=command, workspace=str(workspace), cwd=str(here), outcome="failed")
    try:
        report.exit_status = _ask(text, here, workspace, command, opts, ui, report)
    except RequestRejected as exc:
        report.error, report.outcome, report.exit_status = " ".join(str(exc).split()), "error", 4
        print(f"qfix: request error: {report.error}", file=sys.stderr)
    except ModelServerError as exc:
        report.error, report.outcome, report.exit_status = " ".join(str(exc).split()), "error", 2
        print(f"qfix: {report.error}", file=sys.stderr)
    except KeyboardInterrupt:
        ui.fail("cancelled: " + ("the applied change stays (`qfix --undo` reverts it)" if report.applied
                                 else "nothing was changed"))
        report.outcome, report.exit_status = "cancelled", 130
    if opts.json:
        print(json_safe(report.model_dump_json(indent=2)))  # no raw control characters
    return report.exit_status


def _ask(text: str, here: Path, workspace: Path, command: str, opts: agent.Options, ui: UI, report: QfixReport) -> int:
    agent.recover_interrupted(workspace, ui)  # before the engine reads the files
    settings = agent.settings_for(workspace, ui)
    relative = here.resolve().relative_to(workspace.resolve()).as_posix()
    task = Task(kind=TaskKind.instruction, description=text, cwd=None if relative == "." else relative)
    with ui.working() as progress:
        result = asyncio.run(_think(task, workspace, settings, progress, opts))
    report.add_result(result)
    if not result.changes and not result.suggestions:
        report.outcome = "no_change"
        ui.fail(f"nothing proposed: {result.summary.strip() or result.outcome}")
        return 1
    agent.show(result, ui)
    if opts.dry_run:
        report.outcome = "proposed"
        ui.say("\nDry run: nothing was changed.", "bold")
        return 0
    report.outcome = "not_applied"
    if result.changes:
        refused = (agent.unverified(result) or agent.needs_consent(result)) if opts.yes else None
        if refused:
            ui.fail(f"not applied: {refused}; run it without --yes to review it and decide")
            report.not_applied = refused
        elif opts.yes or (ui.interactive and ui.confirm(f"Apply the changes to {len(result.changes)} file(s)? [y/N]")):
            if not agent.apply_reported(workspace, command, result.changes, ui, report):
                return 1
    if handoff := agent.ask_for_command(result, opts, ui):
        agent.hand_to_shell(handoff, ui)
        report.outcome = report.outcome if report.applied else "handed_to_shell"
        return 0
    return 0 if report.applied else 1


async def _think(task: Task, workspace: Path, settings, progress, opts: agent.Options):  # noqa: ANN001
    engine = Engine(settings)
    engine.reuse_plans = not opts.no_cache
    try:
        return await engine.fix(task, workspace, progress=progress)
    finally:
        await engine.client.close()
