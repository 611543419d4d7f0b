"""The qfix loop: one failed command in; at most one fix written, then re-run.

    failure = the command, its exit code, its output    (run now in a pty, or recorded by the shell)
    result  = engine.fix(failure)                        (plan + patch rounds; writes nothing)
    show the plan, a colored diff per file, risk-labelled shell suggestions
    ask     [a]pply / [s]kip / [e]dit command / [q]uit    (--yes: write verified fixes only, never run commands,
                                                         never write a file that runs later or git ignores)
    apply   the changes and their undo entry, journaled  (refuses files changed meanwhile)
    ask     about each suggested command: an accepted one goes to the user's command line
    verify  re-run the command for real: exit 0 only if it passes now

Shell suggestions are never run by qfix: an accepted one goes to the shell's
command line (via the qfix shell function) for the user to edit and run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from qwen_lsp.apply import ApplyError, RollbackFailed
from qwen_lsp.context import preload
from qwen_lsp.journal import JournalError
from qwen_lsp.engine.protected import ProtectedPath
from qwen_lsp.llm.client import ModelClient, ModelServerError, RequestRejected, ServerBusy, StreamBroken
from qwen_lsp.engine.loop import Engine
from qwen_lsp.gitio import GitError, repo_root
from qwen_lsp.types import FileChange, FixResult, Risk, Task
from qwen_lsp.wire import TerminalOutput
from qwen_lsp.engine.risk import classify
from qwen_lsp.engine.risk import suggestion as labelled
from qwen_lsp.sanitize import json_safe
from qwen_lsp.settings import Settings, describe_invalid, load_settings, load_settings_lenient
from qwen_lsp.sidechannel import notify_running_server

from terminal_agent import same_line, undo
from terminal_agent.preflight import ServerCheck
from terminal_agent.pty_run import Finished, nothing_to_fix, run_in_pty, run_shell_command
from terminal_agent.report import QfixReport, Verification
from terminal_agent.state import ShellRecord, last_record, tmux_output, write_record
from terminal_agent.ui import UI, Choice
from terminal_agent.warm_client import Session, WarmLost

# qfix's exit code when the model server is up but did not finish: busy (429/503/408) for longer than
# the fix could wait, or its answer broke off twice (qfix.EXIT_CODES).
BUSY_EXIT = 3
# The warm process's error kinds (warm_wire.ErrorReply), raised here as the in-process fix raises them.
WARM_ERRORS: dict[str, type[ModelServerError]] = {"rejected": RequestRejected, "busy": ServerBusy,
                                                  "stream_broken": StreamBroken}


INDEXED_SAY = 2.0  # an index build longer than this (seconds) leaves a line saying so, on a terminal

# Why no fix came back, in the user's words (the engine's outcome names are for programs).
NO_FIX = {
    "no_change": "the model proposed no change",
    "failed": "the model's change did not pass its checks, so it was dropped",
    "changed_unverified": "the model's change could not be checked",
    "repeated": "the model kept repeating the same call, so the fix was stopped",
    "gave_up": "the model gave up without making the edits its plan named",
}


@dataclass
class Options:
    yes: bool = False  # apply file changes and verify without asking
    dry_run: bool = False  # show the fix, change nothing
    json: bool = False  # machine-readable report on stdout
    no_cache: bool = False  # think afresh: no plan restored from the disk cache
    traceback: bool = False  # an internal error prints its traceback


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


def fix(failure: Failure, opts: Options, ui: UI, report: QfixReport, warm: Session | None = None) -> int:
    """The whole story of one failed command; returns qfix's exit code. `warm`: a warm process
    (warm_client.py) that thinks instead of this process; everything else happens here all the same.
    Its child keeps the fix's conversation for [r]efine until the connection closes here."""
    try:
        return _fix(failure, opts, ui, report, warm)
    finally:
        if warm is not None:
            warm.close()


def _fix(failure: Failure, opts: Options, ui: UI, report: QfixReport, warm: Session | None) -> int:
    settings = settings_for(failure.workspace, ui)
    notify_editor(failure, settings)
    engines: list[Engine] = []  # the engine that thought here (not the warm process): [r]efine goes on with it
    # A first index build of a big workspace (here, not in a warm process) shows its counts; not with --json.
    indexing = None if opts.json else lambda: preload.building(failure.workspace, settings.cache_dir)
    with ui.working(indexing) as progress:
        result = think_warm(failure, settings, progress, warm, ui) if warm else None
        if result is None:
            result = asyncio.run(think(failure, settings, progress, kept=engines,
                                       reuse_plans=not opts.no_cache))  # Ctrl-C here cancels the requests
    if not opts.json and (built := preload.last_build(failure.workspace, settings.cache_dir)) and built[1] >= INDEXED_SAY:
        ui.indexed(*built)
    report.add_result(result)
    if not result.changes and not result.suggestions:
        report.outcome = result.outcome
        ui.show_checks(result.validation)  # what the rejected attempt failed, if it got that far
        ui.fail(f"no fix found: {NO_FIX[result.outcome] if result.outcome in NO_FIX else result.outcome}")
        return 1
    show(result, ui)
    if opts.dry_run:  # a dry run applies nothing: "fixed" would overstate it; a failed or unverified change says so
        report.outcome = "proposed" if result.outcome == "fixed" else result.outcome
        ui.say("\nDry run: nothing was changed.", "bold")
        return 0
    report.outcome = "not_applied"

    refused = (unverified(result) or needs_consent(result)) if opts.yes else None
    if refused:  # --yes is consent to a verified fix of ordinary files only; anything else needs an explicit yes
        ui.fail(f"not applied: {refused}; run qfix without --yes to review it and decide")
        report.not_applied = refused
    # [r]efine goes on with the engine that thought: this process's, or the warm child's (still connected)
    def refinable() -> bool:
        return bool(engines) or (warm is not None and not warm.closed)

    choice, verify_command = ("skip", None) if refused else ask_to_apply(result, failure, opts, ui, refinable())
    while choice == "refine":  # the user's note on the change shown: the same conversation goes on
        note = ui.edit("Your note for Qwen: ", "")
        if engines:
            refined = refine(engines[0], result, note, settings, ui)
        else:
            refined = refine_warm(warm, result, note, failure, settings, ui) if warm is not None else None
        if refined is not None and refined.changes:
            result = refined
            report.add_result(result)
            show(result, ui)
        elif refinable():  # (a warm child lost on the way has said so)
            ui.fail("the refinement proposed no change: the change above stands")
        choice, verify_command = ask_to_apply(result, failure, opts, ui, refinable())
    if warm is not None:
        warm.close()  # no more follow-ups: the child and its engine go
    if choice == "apply" and not apply_reported(failure.workspace, failure.command, result.changes, ui, report):
        return 1
    handoff = ask_for_command(result, opts, ui) if choice != "quit" else None
    if handoff:
        hand_to_shell(handoff, ui)
        report.outcome = "handed_to_shell" if not report.applied else report.outcome
        return 0  # the user's next step: their shell runs it, qfix never does
    if not report.applied:
        return 1

    command = verify_command or failure.command
    ui.say(f"\nRe-running: {command}", "bold")
    rerun = failure.rerun(verify_command, ui.fd)
    report.verification = Verification(command=command, exit_code=rerun.exit_code, passed=rerun.exit_code == 0)
    report.outcome = "fixed" if rerun.exit_code == 0 else "still_failing"
    if rerun.exit_code == 0:
        ui.ok(f"fixed: `{command}` passes now")
        if verify_command is None:
            notify_editor(failure, settings, exit_code=0)
        return 0
    ui.fail(f"`{command}` still fails (exit {rerun.exit_code}); `qfix --undo` reverts the change")
    return 1


async def think(failure: Failure, settings: Settings, progress: Callable[[str], None],
                engine: Engine | None = None, kept: list[Engine] | None = None,
                reuse_plans: bool = True) -> FixResult:
    """The engine's fix of `failure`. `engine`: one made for these `settings` ahead of the failure
    (the warm process's child); closed here all the same. `kept`: gets the engine, for `refine`.
    `reuse_plans=False`: no cached plan."""
    engine = engine or Engine(settings)
    engine.reuse_plans = reuse_plans
    if kept is not None:
        kept.append(engine)
    try:
        return await engine.fix(failure.task(), failure.workspace, progress=progress)
    finally:
        await engine.client.close()


def think_warm(failure: Failure, settings: Settings, progress: Callable[[str], None], warm: Session,
               ui: UI) -> FixResult | None:
    """`think` in the warm process: its FixResult, or None (after one dim line) when this process must
    think itself. Its answer counts only if it thought about this workspace with these settings.
    Ctrl-C closes the connection, which cancels the child's fix. Once its result is used the
    connection stays open: the child keeps the conversation for `refine_warm`."""
    answered = False
    try:
        if not warm.failure_sent and not warm.send_failure(failure.command, failure.exit_code, failure.output,
                                                            failure.cwd, failure.workspace):
            raise WarmLost("it was gone before the failure reached it")
        reply = warm.think(progress)
        if reply.kind == "error":
            raise WARM_ERRORS.get(reply.error, ModelServerError)(reply.message)
        if reply.workspace != str(failure.workspace) or reply.settings != settings.model_dump(mode="json"):
            raise WarmLost("it saw another workspace or other settings")
        answered = True
        return reply.result
    except WarmLost as exc:
        ui.say(f"qfix: the warm process failed ({exc}); thinking here", "dim")
        return None
    finally:
        if not answered:
            warm.close()


def refine_warm(warm: Session, result: FixResult, note: str, failure: Failure, settings: Settings,
                ui: UI) -> FixResult | None:
    """`refine` in the warm child that thought `result`: its refined FixResult, or None without a note
    or when the child is gone (a line says so; [r]efine is then no longer offered)."""
    if not note.strip() or not result.fix_id:
        return None
    try:
        with ui.working() as progress:
            if not warm.send_refine(result.fix_id, note):
                raise WarmLost("it was gone before the note reached it")
            reply = warm.think(progress)
        if reply.kind == "error":
            warm.close()  # the child ends after an error
            raise WARM_ERRORS.get(reply.error, ModelServerError)(reply.message)
        if reply.workspace != str(failure.workspace) or reply.settings != settings.model_dump(mode="json"):
            raise WarmLost("it saw another workspace or other settings")
        return reply.result
    except WarmLost as exc:
        warm.close()
        ui.fail(f"the warm process could not refine the fix ({exc}): the change above stands")
        return None


def show(result: FixResult, ui: UI) -> None:
    ui.show_plan(result.plan, result.summary, by_model=result.summary_by == "model")
    ui.show_changes(result.changes)
    if result.changes or result.outcome == "failed":  # a failed check says what ran, sandboxed
        ui.show_checks(result.validation)
    for path in result.refused_writes:
        ui.say(f"✗ refused: the model tried to change {path} (protected; never written)", "bold red")
    for item in result.runs_later:
        ui.say(f"⚠ runs later: {item}", "bold yellow")
    for path in result.not_tracked:
        ui.say(f"⚠ not tracked by git: {path} (git ignores it: git status will not show this change)", "bold yellow")
    for item in result.in_submodule:
        ui.say(f"⚠ another repository: {item}; git status here will not show this change", "bold yellow")
    for suggestion in result.suggestions:
        ui.show_suggestion(suggestion)


def refine(engine: Engine, result: FixResult, note: str, settings: Settings, ui: UI) -> FixResult | None:
    """`result` followed up with the user's `note` (Engine.refine: append-only, no new plan); None
    without a note. The engine's first client closed with its event loop: the follow-up gets its own."""
    if not note.strip() or not result.fix_id:
        return None

    async def go(progress: Callable[[str], None]) -> FixResult:
        engine.client = ModelClient(settings)
        try:
            return await engine.refine(result.fix_id or "", note, progress=progress)
        finally:
            await engine.client.close()

    with ui.working() as progress:
        return asyncio.run(go(progress))


def ask_to_apply(result: FixResult, failure: Failure, opts: Options, ui: UI,
                 refinable: bool = False) -> tuple[Choice, str | None]:
    """apply / skip / quit (/ refine) for the file changes, and the command that verifies them (None: the failed one)."""
    if not result.changes:
        return "skip", None
    if opts.yes:
        return "apply", None
    if not ui.interactive:
        ui.say("Not applied: no terminal to ask on (use --yes to apply).")
        return "quit", None
    verify_command = None
    question = f"Apply the changes to {len(result.changes)} file(s)?"
    if result.runs_later or result.not_tracked or result.in_submodule:
        question = f"Apply the changes to {len(result.changes)} file(s), including the ones marked ⚠ above?"
    while (choice := ui.choose(question, refine=refinable)) == "edit":
        verify_command = ui.edit("Re-run to verify: ", verify_command or failure.command)
    return choice, verify_command


def unverified(result: FixResult) -> str | None:
    """Why `result`'s changes were not verified by a command that passed, or None when they were."""
    if not result.changes or result.outcome == "fixed":
        return None
    why = result.validation.not_verified or "no command verified it"
    return f"the change was not verified ({why})"


def needs_consent(result: FixResult) -> str | None:
    """Why `result` needs the user's explicit [a]pply whatever --yes says, or None: it changes a
    file some tool runs later without the user reading it, or one git does not track."""
    if not result.changes:
        return None
    why = []
    if result.runs_later:
        why.append("it changes files that run later (" + ", ".join(r.split(" (")[0] for r in result.runs_later) + ")")
    if result.not_tracked:
        why.append("it changes files git does not track (" + ", ".join(result.not_tracked) + ")")
    if result.in_submodule:
        why.append("it changes files of another repository (" + ", ".join(result.in_submodule) + ")")
    return " and ".join(why) + ", which needs an explicit [a]pply" if why else None


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
    """The fix and its undo entry in one journaled transaction (undo.apply_with_undo): a fix
    on disk can always be taken back, and a failed or interrupted one leaves no entry."""
    undo.apply_with_undo(failure.workspace, failure.command, changes)


def apply_reported(workspace: Path, command: str, changes: list[FileChange], ui: UI, report: QfixReport) -> bool:
    """The changes and their undo entry in one journaled transaction (undo.apply_with_undo): a fix
    on disk can always be taken back, and a failed or interrupted one leaves no entry. Whether it
    was applied; either way the user and the report are told."""
    try:
        undo.apply_with_undo(workspace, command, changes)
    except RollbackFailed as exc:
        ui.fail(f"{exc}; the next qfix or `qfix --undo` puts them back" if exc.failed else str(exc))
        return False
    except (ApplyError, ProtectedPath) as exc:
        ui.fail(f"not applied: {exc}")
        return False
    report.applied, report.outcome = True, "applied"
    ui.ok(f"applied to {', '.join(c.path for c in changes)}  (qfix --undo puts it back)")
    return True


def recover_interrupted(workspace: Path, ui: UI) -> bool | None:
    """Roll back a write a killed qfix left half done here (journal.py): None when there was
    none, else whether everything it had replaced is back."""
    try:
        rollback = undo.recover(workspace)
    except JournalError as exc:
        ui.fail(str(exc))
        return False
    finally:
        with contextlib.suppress(OSError):  # a read-only state folder: nothing to sweep
            undo.sweep_stray_temps()  # other workspaces' leftovers of a killed write
    if rollback is None:
        return None
    clean = not (rollback.changed or rollback.failed)
    (ui.say if clean else ui.fail)(rollback.message())
    return clean


def hand_to_shell(command: str, ui: UI) -> None:
    """Into the shell's command line buffer when the qfix shell function runs us; never run here."""
    buffer = os.environ.get("QFIX_BUFFER_FILE")
    if buffer:
        Path(buffer).write_text(command, encoding="utf-8")
        ui.say("The command is on your command line: edit it if needed, Enter runs it.", "bold")
    else:
        ui.say(f"Run it yourself:  {command}", "bold")
        ui.say("(with the shell hook, `qfix init bash --install`, qfix puts it on your command line)", "dim")


def run(opts: Options, ran: tuple[list[str], Finished] | None = None, server: ServerCheck | None = None,
        warm: Session | None = None) -> int:
    """`qfix -- CMD ARGS` once CMD `ran`, or `qfix` on what the shell recorded: fix, report; the exit code.
    `server` is the model-server check started while CMD ran (a recorded command gets one here);
    `warm` the warm process qfix connected to at its start, if any."""
    ui = UI(to_stderr=opts.json)
    report: QfixReport | None = None
    try:
        if ran:
            failure = failure_from_run(*ran)
        else:
            on_line = same_line.from_environment()  # `cmd || qfix`: the shell has not recorded `cmd` yet
            if isinstance(on_line, same_line.Refused):
                print(f"qfix: {on_line.reason}. Run qfix on a line of its own after the failure, "
                      "or `qfix -- COMMAND`.", file=sys.stderr)
                return 2
            record = record_of_line(on_line) if on_line else last_record()
            if record is None:
                from terminal_agent.shell_init import no_record_advice

                print(no_record_advice(dict(os.environ), Path.home()), file=sys.stderr)
                return 2
            if not nothing_to_fix(record.exit_code):  # ask the server before offering to re-run anything
                server = ServerCheck(Path(record.cwd) if Path(record.cwd).is_dir() else Path.cwd(), announce=False)
                if server.error():
                    failure = Failure(command=record.command, exit_code=record.exit_code, output=record.output,
                                      cwd=Path.cwd(), workspace=Path.cwd(), shell=record.shell)
                    return _finish(_unavailable(_new_report(failure), server), opts)
            failure = failure_from_record(record, opts, ui)

        report = _new_report(failure)
        recover_interrupted(failure.workspace, ui)  # before the engine reads the files
        if nothing_to_fix(failure.exit_code):  # mirror its exit code
            report.outcome = "passed" if failure.exit_code == 0 else "interrupted"
            report.exit_status = failure.exit_code
        elif server is not None and server.error():
            _unavailable(report, server)
        else:
            report.exit_status = fix(failure, opts, ui, report, warm)
    except RequestRejected as exc:  # the server is up: not "unavailable"
        error = " ".join(str(exc).split())
        print(f"qfix: request error: {error}", file=sys.stderr)
        if report is None:
            return 4
        report.error, report.outcome, report.exit_status = error, "error", 4
    except (ServerBusy, StreamBroken) as exc:  # the server is up and did not finish: not "unavailable"
        error = " ".join(str(exc).split())
        print(f"qfix: {error}", file=sys.stderr)
        if report is None:
            return BUSY_EXIT
        report.error, report.exit_status = error, BUSY_EXIT
        report.outcome = "busy" if isinstance(exc, ServerBusy) else "stream_broken"
    except ModelServerError as exc:
        error = " ".join(str(exc).split())  # ONE line: what failed and how to fix it
        print(f"qfix: {error}", file=sys.stderr)
        if report is None:
            return 2
        report.error, report.outcome, report.exit_status = error, "error", 2
    except ValidationError as exc:  # the user's own settings: say which value, and why
        error = f"invalid settings: {describe_invalid(exc)}"
        print(f"qfix: {error}", file=sys.stderr)
        if report is None:
            return 2
        report.error, report.outcome, report.exit_status = error, "error", 2
    except KeyboardInterrupt:
        kept = "the applied fix stays (`qfix --undo` reverts it)" if report and report.applied else "nothing was changed"
        ui.fail(f"cancelled: {kept}")
        if report is None:
            return 130
        report.outcome, report.exit_status = "cancelled", 130
    except Exception as exc:  # noqa: BLE001 - whatever failed, the user gets one line and --json its report
        kept = "the applied fix stays (`qfix --undo` reverts it)" if report and report.applied else "nothing was changed"
        error = " ".join(f"{type(exc).__name__}: {exc}".split())
        if opts.traceback or os.environ.get("QFIX_TRACEBACK") == "1":
            traceback.print_exc()
            print(f"qfix: internal error, {kept}: {error}", file=sys.stderr)
        else:
            print(f"qfix: internal error, {kept}: {error} (`qfix --traceback ...` or QFIX_TRACEBACK=1 shows where)",
                  file=sys.stderr)
        if report is None:
            return 2
        report.error, report.outcome, report.exit_status = error, "error", 2
    return _finish(report, opts)


def _new_report(failure: Failure) -> QfixReport:
    return QfixReport(command=failure.command, exit_code=failure.exit_code, workspace=str(failure.workspace),
                      cwd=str(failure.cwd), outcome="failed")


def _unavailable(report: QfixReport, server: ServerCheck) -> QfixReport:
    """The model server did not answer the check: one line saying so (unless already said while the
    command ran); exit 2 when it is down, 4 when it is up but rejected us (a key)."""
    report.error = server.error()
    if not server.announced:
        print(f"qfix: {report.error}", file=sys.stderr)
    report.outcome, report.exit_status = "error", 4 if server.kind == "rejected" else 2
    return report


def _finish(report: QfixReport, opts: Options) -> int:
    if opts.json:
        print(json_safe(report.model_dump_json(indent=2)))  # same data; no raw control characters
    return report.exit_status


def undo_last_fix() -> int:
    """`qfix --undo`."""
    ui = UI(to_stderr=False)
    workspace = find_workspace(Path.cwd())
    recovered = recover_interrupted(workspace, ui)
    if recovered is not None:  # that was the undo asked for (or what stands in its way): nothing more
        return 0 if recovered else 1
    try:
        entry = undo.undo_last(workspace)
    except undo.UndoRefused as exc:
        ui.fail(str(exc))
        return 1
    ui.ok(f"restored {', '.join(f.path for f in entry.files)} as before the fix for `{entry.command}`")
    return 0


def record_of_line(on_line: same_line.SameLine) -> ShellRecord:
    """The command before qfix on the line qfix runs on, as the shell's record (saved as one)."""
    pid = os.environ.get("QFIX_SHELL_PID", "")
    record = ShellRecord(shell=os.environ.get("QFIX_SHELL", "bash"), pid=int(pid) if pid.isdigit() else os.getppid(),
                         command=on_line.command, exit_code=on_line.exit_code, cwd=str(Path.cwd()))
    write_record(record)
    if not nothing_to_fix(record.exit_code):
        record.output = tmux_output(record.command, running_line=os.environ.get("QFIX_LINE"))
    return record


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
        elif (gone := redirected_away(record.command)) == {1, 2}:
            ui.say(f"`{record.command}` sends its output elsewhere, so running it again would not show it either: "
                   "run it without the redirection, or `qfix -- COMMAND`", "yellow")
        elif opts.yes or (ui.interactive and _explain_rerun(ui) and ui.confirm(
                f"Re-run `{record.command}` to see its {'error ' if 1 in gone else ''}output? [y/N]")):
            finished = run_shell_command(record.command, cwd, record.shell, echo_fd=ui.fd)
            exit_code, output = finished.exit_code, finished.output
            if nothing_to_fix(exit_code):
                ui.say(f"`{record.command}` {'passes now' if exit_code == 0 else 'was stopped'}: nothing to fix")
    return Failure(command=record.command, exit_code=exit_code, output=output, cwd=cwd,
                   workspace=find_workspace(cwd), shell=record.shell)


def redirected_away(command: str) -> set[int]:
    """Pure: which of stdout (1) and stderr (2) a simple command line sends away from the terminal
    (`cmd >/dev/null`: {1}; `cmd &>log`, `cmd >/dev/null 2>&1`: {1, 2}); empty when unsure."""
    import bashlex

    try:
        (tree,) = bashlex.parse(command)
    except Exception:  # noqa: BLE001 - bashlex raises its own errors, and NotImplementedError
        return set()
    if tree.kind != "command":
        return set()
    away: set[int] = set()
    for node in tree.parts:
        if node.kind != "redirect" or node.type not in (">", ">>", "&>", ">&", ">|"):
            continue
        fd = node.input if isinstance(getattr(node, "input", None), int) else 1
        target = node.output
        if node.type == "&>":
            away |= {1, 2}
        elif isinstance(target, int):  # 2>&1: stderr goes where stdout goes now
            if target in (1, 2) and target in away:
                away.add(fd)
        else:
            away.add(fd)
    return away


def _explain_rerun(ui: UI) -> bool:
    """Why qfix wants to run the command again: the shell records a command, not its output."""
    why = ("The shell recorded the command but not its output" +
           ("; inside tmux qfix reads it from the pane, but this pane no longer shows it." if os.environ.get("TMUX")
            else " (inside tmux, qfix would read it from the screen)."))
    ui.say(why, "dim")
    return True


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
