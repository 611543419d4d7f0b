"""The qfix loop: one failed command in; at most one fix written, then re-run.

    failure = the command, its exit code, its output    (run now in a pty, or recorded by the shell)
    result  = engine.fix(failure)                        (plan + patch rounds; writes nothing)
    show the plan, a colored diff per file, risk-labelled shell suggestions
    ask     [a]pply / [s]kip / [e]dit command / [q]uit    (--yes: write files, never run commands)
    apply   save the undo entry, then apply_changes      (refuses files changed meanwhile)
    ask     about each suggested command: an accepted one goes to the user's command line
    verify  re-run the command for real: exit 0 only if it passes now

Shell suggestions are never run by qfix: an accepted one goes to the shell's
command line (via the qfix shell function) for the user to edit and run.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from qwen_lsp.apply import StaleFile, apply_changes
from qwen_lsp.llm.client import ModelServerError
from qwen_lsp.engine.loop import Engine
from qwen_lsp.gitio import GitError, repo_root
from qwen_lsp.types import FileChange, FixResult, Risk, Task
from qwen_lsp.wire import TerminalOutput
from qwen_lsp.engine.risk import classify
from qwen_lsp.engine.risk import suggestion as labelled
from qwen_lsp.settings import Settings, load_settings_lenient
from qwen_lsp.sidechannel import notify_running_server

from terminal_agent import undo
from terminal_agent.pty_run import Finished, nothing_to_fix, run_in_pty, run_shell_command
from terminal_agent.report import QfixReport, Verification
from terminal_agent.state import ShellRecord, last_record, tmux_output
from terminal_agent.ui import UI, Choice


@dataclass
class Options:
    yes: bool = False  # apply file changes and verify without asking
    dry_run: bool = False  # show the fix, change nothing
    json: bool = False  # machine-readable report on stdout


@dataclass
class Failure:
    command: str  # as the user would type it
    exit_code: int
    output: str | None  # None: not captured
    cwd: Path
    workspace: Path
    argv: list[str] | None = None  # `qfix -- CMD ARGS`: re-run exactly this argv
    shell: str | None = None  # a recorded command line re-runs with the user's shell

    def task(self) -> Task:
        cwd = self.cwd.resolve().relative_to(self.workspace.resolve()).as_posix()
        return Task.for_command(self.command, self.exit_code, self.output, cwd)

    def rerun(self, command: str | None, echo_fd: int) -> Finished:
        if command in (None, self.command) and self.argv:
            return run_in_pty(self.argv, self.cwd, echo_fd=echo_fd)
        return run_shell_command(command or self.command, self.cwd, self.shell, echo_fd=echo_fd)


def fix(failure: Failure, opts: Options, ui: UI, report: QfixReport) -> int:
    """The whole story of one failed command; returns qfix's exit code."""
    settings = settings_for(failure.workspace, ui)
    notify_editor(failure, settings)
    with ui.working() as progress:
        result = asyncio.run(think(failure, settings, progress))  # Ctrl-C here cancels the requests
    report.add_result(result)
    show(result, ui)
    if not result.changes and not result.suggestions:
        ui.fail(f"no fix found ({result.outcome})" + (f": {result.error}" if result.error else ""))
        return 1
    if opts.dry_run:
        ui.say("\nDry run: nothing was changed.", "bold")
        return 0

    choice, verify_command = ask_to_apply(result, failure, opts, ui)
    if choice == "apply":
        try:
            apply_with_undo(failure, result.changes)
        except StaleFile as exc:
            ui.fail(f"not applied: {exc}")
            return 1
        report.applied = True
        ui.ok(f"applied to {', '.join(c.path for c in result.changes)}  (qfix --undo puts it back)")
    handoff = ask_for_command(result, opts, ui) if choice != "quit" else None
    if handoff:
        hand_to_shell(handoff, ui)
        return 0  # the user's next step: their shell runs it, qfix never does
    if not report.applied:
        return 1

    command = verify_command or failure.command
    ui.say(f"\nRe-running: {command}", "bold")
    rerun = failure.rerun(verify_command, ui.fd)
    report.verification = Verification(command=command, exit_code=rerun.exit_code, passed=rerun.exit_code == 0)
    if rerun.exit_code == 0:
        ui.ok(f"fixed: `{command}` passes now")
        if verify_command is None:
            notify_editor(failure, settings, exit_code=0)
        return 0
    ui.fail(f"`{command}` still fails (exit {rerun.exit_code}); `qfix --undo` reverts the change")
    return 1


async def think(failure: Failure, settings: Settings, progress: Callable[[str], None]) -> FixResult:
    engine = Engine(settings)
    try:
        return await engine.fix(failure.task(), failure.workspace, progress=progress)
    finally:
        await engine.client.close()


def show(result: FixResult, ui: UI) -> None:
    ui.show_plan(result.plan, result.summary)
    ui.show_changes(result.changes)
    if result.changes:
        ui.show_checks(result.validation)
    for suggestion in result.suggestions:
        ui.show_suggestion(suggestion)


def ask_to_apply(result: FixResult, failure: Failure, opts: Options, ui: UI) -> tuple[Choice, str | None]:
    """apply / skip / quit for the file changes, and the command that verifies them (None: the failed one)."""
    if not result.changes:
        return "skip", None
    if opts.yes:
        return "apply", None
    if not ui.interactive:
        ui.say("Not applied: no terminal to ask on (use --yes to apply).")
        return "quit", None
    verify_command = None
    while (choice := ui.choose(f"Apply the changes to {len(result.changes)} file(s)?")) == "edit":
        verify_command = ui.edit("Re-run to verify: ", verify_command or failure.command)
    return choice, verify_command


def ask_for_command(result: FixResult, opts: Options, ui: UI) -> str | None:
    """The suggested shell command the user accepts (possibly edited), if any."""
    if result.suggestions and opts.yes:
        ui.say("Suggested commands are never run with --yes: run them yourself if you agree.")
    if not result.suggestions or opts.yes or not ui.interactive:
        return None
    for suggestion in result.suggestions:
        while (choice := ui.choose(f"Use `{suggestion.command}`?")) == "edit":
            suggestion = labelled(ui.edit("Command: ", suggestion.command), suggestion.reason)
            ui.show_suggestion(suggestion)  # an edit can make it dangerous: label it again
        if choice == "quit":
            return None
        dangerous = suggestion.risk == Risk.destructive
        if choice == "apply" and (not dangerous or ui.confirm("Type 'yes' to accept it:", word="yes")):
            return suggestion.command
    return None


def apply_with_undo(failure: Failure, changes: list[FileChange]) -> None:
    """The undo entry is saved first: a fix on disk can always be taken back."""
    entry = undo.remember(failure.workspace, failure.command, changes)
    try:
        apply_changes(failure.workspace, changes)
    except BaseException:
        entry.unlink()
        raise


def hand_to_shell(command: str, ui: UI) -> None:
    """Into the shell's command line buffer when the qfix shell function runs us; never run here."""
    buffer = os.environ.get("QFIX_BUFFER_FILE")
    if buffer:
        Path(buffer).write_text(command, encoding="utf-8")
        ui.say("The command is on your command line: edit it if needed, Enter runs it.", "bold")
    else:
        ui.say(f"Run it yourself:  {command}", "bold")
        ui.say('(with eval "$(qfix init bash)" in your shell rc, qfix puts it on your command line)', "dim")


def run(opts: Options, ran: tuple[list[str], Finished] | None = None) -> int:
    """`qfix -- CMD ARGS` once CMD `ran`, or `qfix` on what the shell recorded: fix, report; the exit code."""
    ui = UI(to_stderr=opts.json)
    if ran:
        failure = failure_from_run(*ran)
    else:
        record = last_record()
        if record is None:
            print('qfix: no command given and none recorded: run `qfix -- CMD`, or add eval "$(qfix init bash)" '
                  "to your shell's rc file", file=sys.stderr)
            return 2
        failure = failure_from_record(record, opts, ui)

    report = QfixReport(command=failure.command, exit_code=failure.exit_code, workspace=str(failure.workspace),
                        cwd=str(failure.cwd), outcome="failed")
    try:
        if nothing_to_fix(failure.exit_code):  # mirror its exit code
            report.outcome = "passed" if failure.exit_code == 0 else "interrupted"
            report.exit_status = failure.exit_code
        else:
            report.exit_status = fix(failure, opts, ui, report)
    except ModelServerError as exc:
        report.error = " ".join(str(exc).split())  # ONE line: what failed and how to fix it
        print(f"qfix: {report.error}", file=sys.stderr)
        report.outcome, report.exit_status = "error", 2
    except KeyboardInterrupt:
        kept = "the applied fix stays (`qfix --undo` reverts it)" if report.applied else "nothing was changed"
        ui.fail(f"cancelled: {kept}")
        report.outcome, report.exit_status = "cancelled", 130
    if opts.json:
        print(report.model_dump_json(indent=2))
    return report.exit_status


def undo_last_fix() -> int:
    """`qfix --undo`."""
    ui = UI(to_stderr=False)
    try:
        entry = undo.undo_last(find_workspace(Path.cwd()))
    except undo.UndoRefused as exc:
        ui.fail(str(exc))
        return 1
    ui.ok(f"restored {', '.join(f.path for f in entry.files)} as before the fix for `{entry.command}`")
    return 0


def failure_from_run(argv: list[str], finished: Finished) -> Failure:
    cwd = Path.cwd()
    return Failure(command=shlex.join(argv), exit_code=finished.exit_code, output=finished.output, cwd=cwd,
                   workspace=find_workspace(cwd), argv=list(argv))


def failure_from_record(record: ShellRecord, opts: Options, ui: UI) -> Failure:
    """The command the shell recorded. Its output comes from the record or the tmux
    screen, else from running it again: only after asking, never when it looks destructive."""
    cwd = Path(record.cwd) if Path(record.cwd).is_dir() else Path.cwd()
    exit_code, output = record.exit_code, record.output
    if nothing_to_fix(exit_code):
        ui.say(f"`{record.command}` {'succeeded' if exit_code == 0 else 'was stopped'}: nothing to fix")
        return Failure(command=record.command, exit_code=exit_code, output=output, cwd=cwd, workspace=cwd)
    if output is None:
        output = tmux_output(record.command)
    if output is None:
        risk, dangers = classify(record.command)
        if risk == Risk.destructive:
            ui.say(f"The output of `{record.command}` was not captured, and qfix will not re-run it: "
                   + "; ".join(dangers), "yellow")
        elif opts.yes or (ui.interactive and ui.confirm(f"Re-run `{record.command}` to see its output? [y/N]")):
            finished = run_shell_command(record.command, cwd, record.shell, echo_fd=ui.fd)
            exit_code, output = finished.exit_code, finished.output
            if nothing_to_fix(exit_code):
                ui.say(f"`{record.command}` {'passes now' if exit_code == 0 else 'was stopped'}: nothing to fix")
    return Failure(command=record.command, exit_code=exit_code, output=output, cwd=cwd,
                   workspace=find_workspace(cwd), shell=record.shell)


def settings_for(workspace: Path, ui: UI) -> Settings:
    """The workspace's settings; a bad value is ignored with a warning rather than ending the fix."""
    settings, dropped = load_settings_lenient(workspace)
    for bad in dropped:
        ui.say(f"qfix: ignoring invalid setting {bad}", "yellow")
    return settings


def notify_editor(failure: Failure, settings: Settings, exit_code: int | None = None) -> None:
    """Tell a qwen-lsp running for this workspace (if any) what the command did: a failure
    shows as diagnostics in the editor, a passing re-run (exit 0) clears them."""
    code = failure.exit_code if exit_code is None else exit_code
    notify_running_server(failure.workspace, settings.cache_dir, TerminalOutput(
        command=failure.command, exit_code=code, output=(failure.output or "") if code else "", cwd=str(failure.cwd),
    ))


def find_workspace(cwd: Path) -> Path:
    """The git top-level of `cwd`, else `cwd` itself."""
    try:
        return repo_root(cwd)
    except GitError:
        return cwd
