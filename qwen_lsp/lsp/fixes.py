"""Fixes: code actions, resolving them through the engine, the ask/fix/explain commands,
and the shell suggestions a fix leaves behind."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from qwen_lsp import wire as protocol
from qwen_lsp.apply import check_fresh
from qwen_lsp.lsp import background_fix, convert as lsp_convert, fix_target
from qwen_lsp.lsp.engine_thread import ModelUnavailable
from qwen_lsp.types import FixResult, ShellSuggestion, Task, TaskKind

if TYPE_CHECKING:
    from collections.abc import Callable

    from qwen_lsp.lsp.server import QwenLanguageServer
    from qwen_lsp.lsp.workspace import BufferSnapshot

MAX_SUGGESTION_KEYS = 256
PREFETCH_DELAY_SECONDS = 0.25
APPLY = "Apply"  # cursor moves come in bursts: assemble for the last one only


NO_CACHE_HIT = ("Qwen: the model server reported 0 cached tokens for patch rounds that repeat the plan's prompt: its "
                "prefix cache is not hitting, so every round recomputes the whole prompt. Run `qwen-lsp doctor`.")


@dataclass
class EngineOutcome:
    result: FixResult
    versions: dict[str, int | None]  # workspace-relative path -> editor version the engine read
    stale: list[str]  # files that changed while the engine worked
    finish: Callable[[FixResult], None] | None = None  # what the feature did to the result (AI comments: strip)


class Fixes:
    """Code actions and commands that run the engine, and what their answers leave behind."""

    def __init__(self, server: QwenLanguageServer) -> None:
        self.server = server
        self.suggestions: dict[tuple[str, int, str], list[ShellSuggestion]] = {}
        self.refinable: dict[str, tuple[Path, EngineOutcome]] = {}  # file system path -> its last proposed result
        self._prefetching: dict[Path, concurrent.futures.Future[None]] = {}
        self.warned_no_cache_hit = False

    # -- running the engine ------------------------------------------------------------------------

    async def run_engine(self, task: Task, root: Path, title: str) -> EngineOutcome:
        """Run one fix on the engine thread; raises ModelUnavailable (already reported)."""
        server = self.server
        worker = server.engine_thread()
        settings = server.folders.settings_for(root)
        live_index = server.indexes.for_root(root)
        snapshot = server.folders.snapshot(root)
        versions: dict[str, int | None] = {}
        stamp = buffers_stamp(snapshot)
        read_buffer = snapshot_reader(snapshot, versions)

        async with server.activity.progress(title) as report:

            async def fix() -> FixResult:
                from qwen_lsp.llm.client import ModelServerError

                engine = worker.engine(root, settings, live_index)
                try:
                    return await engine.fix(task, root, read_buffer=read_buffer, progress=report, stamp=stamp)
                except ModelServerError as exc:
                    raise ModelUnavailable(str(exc)) from exc

            try:
                result = await worker.run(fix())
            except ModelUnavailable as exc:
                server.activity.model_error(exc)
                raise
        server.activity.model_ok()
        if result.accounting.prefix_cache_missed and not self.warned_no_cache_hit:  # once per server
            self.warned_no_cache_hit = True
            server.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=NO_CACHE_HIT))
        outcome = EngineOutcome(result, dict(versions), self.stale_files(root, result, versions))
        if result.fix_id and result.changes and task.path:
            self.remember_for_refine(root, task.path, outcome)
        return outcome

    def remember_for_refine(self, root: Path, rel: str, outcome: EngineOutcome) -> None:
        self.refinable[str(root / rel)] = (root, outcome)
        while len(self.refinable) > MAX_SUGGESTION_KEYS:
            self.refinable.pop(next(iter(self.refinable)))

    async def cmd_refine(self, args: protocol.RefineArgs) -> protocol.ApplyOutcome:
        """The user's follow-up on the last result proposed for the file: the engine goes on with the
        same conversation (Engine.refine); the edit applies to the buffer as it is now, whether the
        first result was applied or not (anything else is stale and refused)."""
        path, _root, _rel = self.server.folders.locate(args.uri)
        entry = self.refinable.get(str(path))
        if entry is None or not args.note.strip():
            why = "no note" if entry is not None else "no recent Qwen result for this file to refine"
            return protocol.ApplyOutcome(applied=False, summary=why)
        root, previous = entry
        server, worker = self.server, self.server.engine_thread()
        settings, live_index = server.folders.settings_for(root), server.indexes.for_root(root)
        fix_id = previous.result.fix_id or ""
        async with server.activity.progress("Qwen: refining") as report:

            async def refine() -> FixResult:
                from qwen_lsp.engine.loop import RunGone
                from qwen_lsp.llm.client import ModelServerError

                engine = worker.engine(root, settings, live_index)
                try:
                    return await engine.refine(fix_id, args.note, progress=report)
                except RunGone as exc:
                    raise ModelUnavailable(str(exc)) from exc
                except ModelServerError as exc:
                    raise ModelUnavailable(str(exc)) from exc

            try:
                result = await worker.run(refine())
            except ModelUnavailable as exc:
                return protocol.ApplyOutcome(applied=False, summary=str(exc))
        if previous.finish is not None:
            previous.finish(result)
        outcome = self.rebased(root, previous, result)
        self.remember_for_refine(root, str(path.relative_to(root)) if root in path.parents else path.name,
                                 EngineOutcome(result, outcome.versions, [], previous.finish))
        checks = lsp_convert.validation_summary(result.validation)
        return await self.apply(root, outcome, "Qwen: refined" + (f" ({checks})" if checks else ""))

    def rebased(self, root: Path, previous: EngineOutcome, result: FixResult) -> EngineOutcome:
        """`result`'s changes as edits of each file as it is now: the text the engine first read
        (the first result was not applied), or the first result's text (it was); else stale."""
        from qwen_lsp.engine.edits import unified_diff

        before = {c.path: c for c in previous.result.changes}
        changes, versions, stale = [], dict(previous.versions), []
        for change in result.changes:
            doc = self.server.folders.open_document(root / change.path)
            now = doc.source if doc is not None else _disk(root / change.path)
            versions[change.path] = doc.version if doc is not None else None
            applied = before.get(change.path)
            if now == (None if change.created else change.original):
                changes.append(change)
            elif applied is not None and now == applied.updated:
                changes.append(change.model_copy(update={
                    "original": now, "created": False, "diff": unified_diff(change.path, now, change.updated)}))
            else:
                stale.append(change.path)
        changes = [c for c in changes if c.created or c.original != c.updated]
        return EngineOutcome(result.model_copy(update={"changes": changes}), versions, stale)

    def prefetch(self, task: Task, root: Path, *, at_once: bool = False) -> None:
        """Assemble `task`'s prompt in the background: the user is looking at its diagnostic, and a
        fix of it started before anything changes finds its context ready (engine/prefetch.py).

        `at_once`: a failure a terminal run just published is a strong signal and a quick user
        picks its fix within 0.3 s, so its assembly starts now and nothing cancels it. Code action
        listings come with cursor moves, in bursts: theirs waits PREFETCH_DELAY_SECONDS and gives
        way to the next one."""
        server = self.server
        worker = server.engine_thread()
        settings = server.folders.settings_for(root)
        live_index = server.indexes.for_root(root)
        snapshot = server.folders.snapshot(root)

        async def assemble() -> None:  # engine thread
            if not at_once:
                await asyncio.sleep(PREFETCH_DELAY_SECONDS)
            engine = worker.engine(root, settings, live_index)
            await engine.prefetch(task, root, snapshot_reader(snapshot, {}), buffers_stamp(snapshot))

        future = asyncio.run_coroutine_threadsafe(assemble(), worker.loop)
        if at_once:
            return  # not superseded by a cursor move: it is the one the user is about to ask for
        previous = self._prefetching.pop(root, None)
        if previous is not None:
            previous.cancel()  # superseded; an assembly already under way still finishes for its key
        self._prefetching[root] = future

    async def attempt(self, task: Task, root: Path, title: str) -> EngineOutcome | ModelUnavailable:
        """`run_engine`, with the unavailable model server as a value: every caller answers it
        in its own form (a summary, a disabled action, an explanation), none lets it escape."""
        try:
            return await self.run_engine(task, root, title)
        except ModelUnavailable as exc:
            return exc

    def stale_files(self, root: Path, result: FixResult, versions: dict[str, int | None]) -> list[str]:
        """Files of the result whose buffer (or, when not open, disk) moved on since the engine read it."""
        stale = []
        for change in result.changes:
            doc = self.server.folders.open_document(root / change.path)
            if change.path in versions:
                if doc is None or doc.version != versions[change.path]:
                    stale.append(change.path)
            elif doc is not None:  # read from disk, opened since: the buffer must still match
                if doc.source != (None if change.created else change.original):
                    stale.append(change.path)
            elif check_fresh(root, [change]):
                stale.append(change.path)
        return stale

    def edit_for(self, root: Path, outcome: EngineOutcome, *, confirm: bool = True) -> types.WorkspaceEdit:
        """`confirm`: the files that run later or git ignores carry annotations that ask the user."""
        server = self.server
        caps = server.client_capabilities.workspace
        ws_edit = caps.workspace_edit if caps else None
        result = outcome.result
        return lsp_convert.workspace_edit(
            result.changes,
            root,
            outcome.versions,
            codec=server.workspace.position_codec,
            document_changes=bool(ws_edit and ws_edit.document_changes),
            annotations=bool(ws_edit and ws_edit.change_annotation_support is not None),
            confirm=[*(r.split(" (")[0] for r in [*result.runs_later, *result.in_submodule]), *result.not_tracked]
            if confirm else (),
        )

    # -- code actions -------------------------------------------------------------------------------

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        path, root, rel = self.server.folders.locate(uri)
        doc = self.server.workspace.get_text_document(uri)
        only = params.context.only
        actions: list[types.CodeAction] = []
        if lsp_convert.kind_allowed(types.CodeActionKind.QuickFix, only):
            theirs = [d for d in params.context.diagnostics if d.code != protocol.COMMENT_CODE]
            if theirs and not self.server.folders.outside(path):
                self.prefetch(self.task_for(theirs[0], root, rel), root)
            resolves = background_fix.resolves_edits(self.server.client_capabilities)
            for diagnostic in params.context.diagnostics:
                if diagnostic.code == protocol.COMMENT_CODE:  # an AI comment: lsp/comments.py offers its action
                    continue
                action = lsp_convert.fix_action(diagnostic, uri, doc.version)
                actions.append(action if resolves else background_fix.as_command(action))
                for suggestion in self.suggestions.get(_diag_key(str(path), diagnostic), []):
                    actions.append(lsp_convert.suggestion_action(suggestion, [diagnostic]))
        selection = params.range
        if selection.start != selection.end and lsp_convert.kind_allowed(types.CodeActionKind.RefactorRewrite, only):
            actions += lsp_convert.selection_actions(uri, selection)
        if lsp_convert.kind_allowed(types.CodeActionKind.RefactorRewrite, only) and self.fresh_change_at(path, doc.source, selection):
            command = types.Command(title="Refine Qwen's change…", command=protocol.CLIENT_REFINE, arguments=[{"uri": uri}])
            actions.append(types.CodeAction(title=command.title, kind=types.CodeActionKind.RefactorRewrite, command=command))
        if lsp_convert.kind_allowed(types.CodeActionKind.Source, only):
            actions.append(lsp_convert.review_action(uri))
        return actions

    def fresh_change_at(self, path: Path, text: str, selection: types.Range) -> bool:
        """Whether the last result proposed for `path` can still be refined (the buffer holds its
        original or its change) and changed lines in `selection` (0-based LSP lines)."""
        entry = self.refinable.get(str(path))
        if entry is None:
            return False
        root, outcome = entry
        rel = path.relative_to(root).as_posix() if root in path.parents else path.name
        change = next((c for c in outcome.result.changes if c.path == rel), None)
        if change is None or text not in (change.original, change.updated):
            return False
        new_side = text == change.updated
        for hunk in lsp_convert.hunks(change.original, change.updated):
            first = hunk.start
            last = hunk.end if not new_side else hunk.start + max(1, len(lsp_convert.split_lines(hunk.new)))
            if selection.start.line <= last and selection.end.line >= first:
                return True
        return False

    def task_for(self, diagnostic: types.Diagnostic, root: Path, rel: str) -> Task:
        """What to ask the engine for a diagnostic. Ours stand for a failing command: the task is
        "make that command pass" (verified by re-running it), the same task `qfix` builds, so
        every diagnostic of one run and a qfix run before share one cached plan. Any other
        server's diagnostic is fixed from its message, at its lines."""
        data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
        if diagnostic.source == protocol.SOURCE and "run" in data:
            with contextlib.suppress(ValueError):
                info = protocol.DiagnosticData.model_validate(data)
                run = self.server.diagnostics.runs.get(info.run)
                return Task.for_command(info.command, info.exit_code, run.output if run else None, info.cwd)
        start, end = diagnostic.range.start.line + 1, diagnostic.range.end.line + 1
        code = f"[{diagnostic.code}] " if diagnostic.code is not None else ""
        source = f"{diagnostic.source}: " if diagnostic.source else ""
        return Task(kind=TaskKind.diagnostic, description=f"{source}{code}{diagnostic.message}", path=rel,
                    start_line=start, end_line=end)

    async def resolve_fix(self, action: types.CodeAction) -> types.CodeAction:
        try:
            data = protocol.ActionData.model_validate(action.data)
        except ValueError:
            return action  # not one of ours
        diagnostic = lsp_convert.converter().structure(data.diagnostic, types.Diagnostic)
        path, root, rel = self.server.folders.locate(data.uri)
        if refused := self.server.folders.outside(path):
            action.disabled = types.CodeActionDisabled(reason=refused)
            return action
        task = self.task_for(diagnostic, root, rel)
        outcome = await self.attempt(task, root, f"Qwen: fixing {lsp_convert.short_problem(diagnostic.message)}")
        if isinstance(outcome, ModelUnavailable):
            action.disabled = types.CodeActionDisabled(reason=f"model server error: {outcome}")
            return action
        result = outcome.result
        if result.suggestions:
            self.remember_suggestions(str(path), diagnostic, result.suggestions)
        if outcome.stale:
            reason = f"{', '.join(outcome.stale)} changed while Qwen was working; ask again"
            action.title = f"{action.title} (stale: not applied)"
            action.disabled = types.CodeActionDisabled(reason=reason)
            self.server.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=f"Qwen: {reason}."))
            return action
        action.title = lsp_convert.fix_title(diagnostic.message, result)
        if result.changes:
            action.edit = self.edit_for(root, outcome)
            # A preferred fix may be applied without a look (auto fix, fix on save): never one that
            # changes what runs later or what git does not track.
            action.is_preferred = result.outcome == "fixed" and not lsp_convert.consent_note(result)
        elif result.suggestions:
            action.command = lsp_convert.suggestion_action(result.suggestions[0]).command
        else:
            # A client applies a resolved action without an edit by doing nothing, silently (Neovim's
            # `gra`, VS Code's quick fix): the message is what tells the user the fix has ended, and why.
            message = lsp_convert.no_change_message(diagnostic.message, result)
            action.disabled = types.CodeActionDisabled(reason=message)
            self.server.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=message))
        return action

    def remember_suggestions(self, path: str, diagnostic: types.Diagnostic, suggestions: list[ShellSuggestion]) -> None:
        if len(self.suggestions) >= MAX_SUGGESTION_KEYS:
            self.suggestions.pop(next(iter(self.suggestions)))
        self.suggestions[_diag_key(path, diagnostic)] = list(suggestions)

    # -- commands --------------------------------------------------------------------------------------

    async def apply(self, root: Path, outcome: EngineOutcome, label: str) -> protocol.ApplyOutcome:
        result = outcome.result
        if outcome.stale:
            return protocol.ApplyOutcome(applied=False, summary=f"not applied: {', '.join(outcome.stale)} changed meanwhile")
        if not result.changes:
            return protocol.ApplyOutcome(applied=False, summary=lsp_convert.no_change_reason(result))
        if (note := lsp_convert.consent_note(result)) and not await self.consented(note):
            return protocol.ApplyOutcome(applied=False, summary=f"not applied: {note.rstrip('; ')}", title=label)
        answer = await self.server.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(edit=self.edit_for(root, outcome, confirm=False), label=label)
        )
        summary = lsp_convert.said(result) if answer.applied else f"the editor refused the edit: {answer.failure_reason or 'stale'}"
        return protocol.ApplyOutcome(applied=bool(answer.applied), summary=summary, title=label)

    async def consented(self, note: str) -> bool:
        """The user's explicit yes to a fix that changes what runs later or what git ignores: a
        command applies its fix without showing it first, so it asks (every client has this request)."""
        question = f"Qwen's fix changes files that need your explicit yes: {note.rstrip('; ')}. Apply it?"
        try:
            answer = await self.server.window_show_message_request_async(types.ShowMessageRequestParams(
                type=types.MessageType.Warning, message=question,
                actions=[types.MessageActionItem(title=APPLY), types.MessageActionItem(title="Cancel")],
            ))
        except Exception:  # noqa: BLE001 - no answer is no consent
            return False
        return answer is not None and answer.title == APPLY

    async def cmd_ask(self, args: protocol.AskArgs) -> protocol.ApplyOutcome:
        path, root, rel = self.server.folders.locate(args.uri)
        if refused := self.server.folders.outside(path):
            return protocol.ApplyOutcome(applied=False, summary=f"not applied: {refused}")
        start, end = lsp_convert.lines_of_range(_lsp_range(args.range))
        task = Task(kind=TaskKind.instruction, description=args.instruction, path=rel, start_line=start, end_line=end)
        outcome = await self.attempt(task, root, "Qwen: " + lsp_convert.short_problem(args.instruction))
        if isinstance(outcome, ModelUnavailable):
            return protocol.ApplyOutcome(applied=False, summary=str(outcome))
        title = f"Qwen: {lsp_convert.short_problem(args.instruction)} ({lsp_convert.validation_summary(outcome.result.validation)})"
        return await self.apply(root, outcome, title)

    async def cmd_fix(self, args: protocol.FixArgs) -> protocol.ApplyOutcome:
        path, root, rel = self.server.folders.locate(args.uri)
        if refused := self.server.folders.outside(path):
            return protocol.ApplyOutcome(applied=False, summary=f"not applied: {refused}")
        if args.diagnostic is not None:
            diagnostic = lsp_convert.converter().structure(args.diagnostic, types.Diagnostic)
        else:
            first, last = args.range.start.line, args.range.end.line
            ours = [d for d in self.server.diagnostics.of_runs(str(path))
                    if d.range.start.line <= last and d.range.end.line >= first]
            theirs = fix_target.overlapping(fix_target.editor_diagnostics(args.diagnostics, lsp_convert.converter()), first, last)
            if not ours and not theirs:  # nothing reported there: fix the code itself
                return await self.cmd_fix_code(root, rel, first + 1, last + 1)
            diagnostic = (ours or theirs)[0]
        outcome = await self.attempt(
            self.task_for(diagnostic, root, rel), root, f"Qwen: fixing {lsp_convert.short_problem(diagnostic.message)}"
        )
        if isinstance(outcome, ModelUnavailable):
            return protocol.ApplyOutcome(applied=False, summary=str(outcome))
        if outcome.result.suggestions:
            self.remember_suggestions(str(path), diagnostic, outcome.result.suggestions)
        return await self.apply(root, outcome, lsp_convert.fix_title(diagnostic.message, outcome.result))

    async def cmd_fix_code(self, root: Path, rel: str, first: int, last: int) -> protocol.ApplyOutcome:
        """Fix the code at lines first..last when nothing is reported there."""
        outcome = await self.attempt(fix_target.code_task(rel, first, last), root, f"Qwen: fixing {rel}:{first}")
        if isinstance(outcome, ModelUnavailable):
            return protocol.ApplyOutcome(applied=False, summary=str(outcome))
        checks = lsp_convert.validation_summary(outcome.result.validation)
        return await self.apply(root, outcome, f"Fix {rel}:{first}" + (f" ({checks})" if checks else ""))

    async def cmd_explain(self, args: protocol.Selection) -> protocol.ExplainOutcome:
        path, root, rel = self.server.folders.locate(args.uri)
        if refused := self.server.folders.outside(path):
            return protocol.ExplainOutcome(markdown=f"Qwen could not answer: {refused}")
        start, end = lsp_convert.lines_of_range(_lsp_range(args.range))
        task = Task(kind=TaskKind.explain, description=f"Explain lines {start}-{end} of {rel}.", path=rel,
                    start_line=start, end_line=end)
        outcome = await self.attempt(task, root, f"Qwen: explaining {rel}:{start}")
        if isinstance(outcome, ModelUnavailable):
            return protocol.ExplainOutcome(markdown=f"Qwen could not answer: {outcome}")
        markdown = outcome.result.summary.strip() or "(no answer)"
        self.server.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=markdown))
        return protocol.ExplainOutcome(markdown=markdown)


def _disk(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _diag_key(path: str, diagnostic: types.Diagnostic) -> tuple[str, int, str]:
    return (path, diagnostic.range.start.line, diagnostic.message)


def _lsp_range(r: protocol.Range) -> types.Range:
    return types.Range(types.Position(r.start.line, r.start.character), types.Position(r.end.line, r.end.character))


def snapshot_reader(snapshot: dict[str, BufferSnapshot], versions: dict[str, int | None]) -> Callable[[str], str | None]:
    """Reads open buffers from `snapshot` (on the engine thread, never the live workspace), noting
    in `versions` the version of each buffer read."""

    def read(rel: str) -> str | None:
        entry = snapshot.get(rel)
        if entry is None:
            return None
        versions.setdefault(rel, entry.version)
        return entry.text

    return read


def buffers_stamp(snapshot: dict[str, BufferSnapshot]) -> tuple[tuple[str, int | None], ...]:
    """The open buffers' versions: with the index's version, what a prefetched prompt was built from."""
    return tuple(sorted((rel, entry.version) for rel, entry in snapshot.items()))
