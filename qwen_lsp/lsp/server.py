"""The language server: thin pygls handlers that translate LSP into engine calls.

State lives on one object, `QwenLanguageServer`: settings per workspace folder,
diagnostics from terminal runs, shell suggestions, in-flight requests. Engine
runs happen on a background event loop (`engine_thread.EngineThread`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pydantic import ValidationError
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, default_converter
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage, MsgId
from pygls.uris import from_fs_path, to_fs_path

from qwen_lsp import __version__, wire as protocol
from qwen_lsp.lsp import background_fix, fix_target, convert as lsp_convert
from qwen_lsp.apply import check_fresh
from qwen_lsp.context.frames import parse_output
from qwen_lsp.lsp.engine_thread import EngineThread, ModelUnavailable
from qwen_lsp.types import FixResult, ShellSuggestion, Task, TaskKind
from qwen_lsp.settings import Settings, load_settings
from qwen_lsp.sidechannel import Listener, socket_path

log = logging.getLogger(__name__)
PROGRESS_CREATE_TIMEOUT = 5.0
MAX_SUGGESTION_KEYS = 256


# --------------------------------------------------------------------------- state


@dataclass
class BufferSnapshot:
    text: str
    version: int | None


@dataclass
class TerminalRun:
    """The diagnostics one failing command produced, until it succeeds or the lines change."""

    key: str
    command: str
    cwd: str  # workspace-relative
    exit_code: int
    output: str
    diagnostics: dict[str, list[types.Diagnostic]] = field(default_factory=dict)  # by file system path


@dataclass
class EngineOutcome:
    result: FixResult
    versions: dict[str, int | None]  # workspace-relative path -> editor version the engine read
    stale: list[str]  # files that changed while the engine worked


class QwenProtocol(LanguageServerProtocol):
    """pygls's protocol, plus: `$/cancelRequest` also cancels our in-flight commands
    (pygls only cancels the future it keeps, which for `workspace/executeCommand` is not
    the task running the command)."""

    _server: QwenLanguageServer

    def _handle_cancel_notification(self, msg_id: MsgId) -> None:
        super()._handle_cancel_notification(msg_id)
        task = self._server.inflight.get(msg_id)
        if task is not None and not task.done() and not task.cancelling():
            task.cancel()


def _converter():
    """pygls's converter, except params of custom methods stay plain dicts (pygls turns
    them into namedtuples, which would lose keys that are not identifiers)."""
    converter = default_converter()
    for cls in (JsonRPCNotification, JsonRPCRequestMessage):
        converter.register_structure_hook(cls, lambda obj, c: c(**obj))
    return converter


class QwenLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "qwen-lsp",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=QwenProtocol,
            converter_factory=_converter,
        )
        self.init_options: dict[str, Any] = {}
        self.config: dict[str, dict[str, Any]] = {}  # `qwen` section by workspace folder path ("" global)
        self._settings: dict[Path, Settings] = {}
        self.runs: dict[str, TerminalRun] = {}
        self.review_diagnostics: dict[str, list[types.Diagnostic]] = {}  # by file system path
        self.suggestions: dict[tuple[str, int, str], list[ShellSuggestion]] = {}
        self.inflight: dict[MsgId, asyncio.Task[Any]] = {}
        self.pending_reviews: dict[str, asyncio.Task[Any]] = {}  # review-on-save, by file system path
        self.listeners: dict[Path, Listener] = {}
        self.busy = 0
        self.error_shown = False  # a model-server failure is shown once, until a run succeeds again
        self.worker: EngineThread | None = None
        self.background_fixes: set[asyncio.Task[Any]] = set()  # clients without resolve (lsp/background_fix.py)

    # -- workspace and settings --------------------------------------------------------------

    def roots(self) -> list[Path]:
        folders = [to_fs_path(f.uri) for f in self.workspace.folders.values()]
        roots = [Path(p) for p in folders if p]
        if not roots and self.workspace.root_path:
            roots = [Path(self.workspace.root_path)]
        return roots

    def root_for(self, path: Path) -> Path:
        """The innermost workspace folder holding `path` (else the first one, else its directory)."""
        inside = [r for r in self.roots() if path == r or r in path.parents]
        if inside:
            return max(inside, key=lambda r: len(r.parts))
        roots = self.roots()
        return roots[0] if roots else (path if path.is_dir() else path.parent)

    def settings_for(self, root: Path) -> Settings:
        if root not in self._settings:
            overrides = {**self.init_options, **self.config.get("", {}), **self.config.get(str(root), {})}
            try:
                self._settings[root] = load_settings(root, overrides)
            except ValidationError as exc:
                # One bad value must not take every feature down: drop the offending keys, say so once.
                bad = {str(e["loc"][0]) for e in exc.errors() if e.get("loc")}
                kept = {k: v for k, v in overrides.items() if _snake(k) not in bad}
                self.window_show_message(types.ShowMessageParams(
                    type=types.MessageType.Warning,
                    message=f"Qwen: ignoring invalid settings {', '.join(sorted(bad))}: {exc.errors()[0]['msg']}",
                ))
                self._settings[root] = load_settings(root, kept)
        return self._settings[root]

    async def refresh_configuration(self) -> None:
        """Re-read the `qwen` section (global and per folder) when the client can serve it."""
        caps = self.client_capabilities.workspace
        if caps is None or not caps.configuration:
            return
        roots = self.roots()
        items = [types.ConfigurationItem(section="qwen")]
        items += [types.ConfigurationItem(section="qwen", scope_uri=from_fs_path(str(r))) for r in roots]
        try:
            values = await self.workspace_configuration_async(types.ConfigurationParams(items=items))
        except Exception as exc:  # a client that advertises but fails: keep initializationOptions
            log.warning("workspace/configuration failed: %s", exc)
            return
        config: dict[str, dict[str, Any]] = {}
        for key, value in zip(["", *map(str, roots)], values or []):
            if isinstance(value, dict):
                config[key] = value
        self.config = config
        self._settings.clear()

    # -- buffers -------------------------------------------------------------------------------

    def snapshot(self, root: Path) -> dict[str, BufferSnapshot]:
        """Text and version of every open document under `root`, taken at once on the
        server loop: the engine thread reads this, never the live workspace."""
        out = {}
        for doc in list(self.workspace.text_documents.values()):
            path = Path(doc.path)
            if root in path.parents:
                out[path.relative_to(root).as_posix()] = BufferSnapshot(doc.source, doc.version)
        return out

    def open_document(self, path: Path):
        uri = from_fs_path(str(path))
        doc = self.workspace.text_documents.get(uri) if uri else None
        if doc is None:  # the client may spell the URI differently (percent-encoding)
            doc = next((d for d in self.workspace.text_documents.values() if Path(d.path) == path), None)
        return doc

    def read_text(self, path: Path) -> str | None:
        """Buffer text if open, else disk."""
        doc = self.open_document(path)
        if doc is not None:
            return doc.source
        try:
            return path.read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            return None

    # -- status, errors, progress ----------------------------------------------------------------

    def status(self, state: protocol.StatusState, message: str = "") -> None:
        self.protocol.notify(protocol.STATUS, protocol.Status(state=state, message=message).dump())

    def model_error(self, exc: ModelUnavailable) -> None:
        """Tell the user once (with the fix the error carries); the status bar always."""
        self.status("error", str(exc))
        if not self.error_shown:
            self.error_shown = True
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=f"Qwen: {exc}"))

    @contextlib.asynccontextmanager
    async def progress(self, title: str) -> AsyncIterator[Callable[[str], None]]:
        """Work-done progress (when the client supports it) and the busy status. Yields a
        report function that is safe to call from the engine thread. The progress is
        cancellable: `window/workDoneProgress/cancel` cancels the request like `$/cancelRequest`."""
        loop = asyncio.get_running_loop()
        current = asyncio.current_task()
        token: str | None = None
        window = self.client_capabilities.window
        if window is not None and window.work_done_progress:
            token = f"qwen-{uuid.uuid4().hex[:12]}"
            try:
                await asyncio.wait_for(self.work_done_progress.create_async(token), PROGRESS_CREATE_TIMEOUT)
            except Exception as exc:  # a client that does not answer must not stall the fix
                log.warning("workDoneProgress/create failed: %s", exc)
                token = None
        if token is not None:
            self.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, message="starting", cancellable=True))
            cancelled_by_client = self.work_done_progress.tokens.get(token)
            if cancelled_by_client is not None and current is not None:
                cancelled_by_client.add_done_callback(
                    lambda f: loop.call_soon_threadsafe(current.cancel) if f.cancelled() else None
                )
        self.busy += 1
        self.status("busy", title)
        ended = False

        def report(message: str) -> None:
            if ended:  # a late report from a cancelled run: the progress is over
                return
            if token is not None:
                self.work_done_progress.report(token, types.WorkDoneProgressReport(message=message))
            self.status("busy", f"{title}: {message}")

        end_message = "done"
        failed = False
        try:
            yield lambda message: loop.call_soon_threadsafe(report, message)
        except asyncio.CancelledError:
            end_message = "cancelled"
            raise
        except Exception as exc:
            end_message, failed = f"failed: {exc}", True
            if not isinstance(exc, ModelUnavailable):  # that one already set the status, with its fix
                log.exception("%s failed", title)
                self.status("error", f"{title} failed: {exc}")
            raise
        finally:
            ended = True
            self.busy -= 1
            if token is not None:
                self.work_done_progress.end(token, types.WorkDoneProgressEnd(message=end_message))
                self.work_done_progress.tokens.pop(token, None)
            if self.busy == 0 and not failed:
                self.status("idle", "ready")

    @contextlib.contextmanager
    def tracked(self):
        """Register the current request so `$/cancelRequest` reaches it."""
        msg_id = self.protocol.msg_id
        task = asyncio.current_task()
        if msg_id is not None and task is not None:
            self.inflight[msg_id] = task
        try:
            yield
        finally:
            if msg_id is not None:
                self.inflight.pop(msg_id, None)

    # -- running the engine ------------------------------------------------------------------------

    def engine_thread(self) -> EngineThread:
        if self.worker is None:
            self.worker = EngineThread()
        return self.worker

    async def run_engine(self, task: Task, root: Path, title: str) -> EngineOutcome:
        """Run one fix on the engine thread; raises ModelUnavailable (already reported)."""
        worker = self.engine_thread()
        settings = self.settings_for(root)
        snapshot = self.snapshot(root)
        versions: dict[str, int | None] = {}

        def read_buffer(rel: str) -> str | None:  # engine thread: reads the snapshot only
            entry = snapshot.get(rel)
            if entry is None:
                return None
            versions.setdefault(rel, entry.version)
            return entry.text

        async with self.progress(title) as report:

            async def fix() -> FixResult:
                from qwen_lsp.llm.client import ModelServerError

                engine = worker.engine(root, settings)
                try:
                    return await engine.fix(task, root, read_buffer=read_buffer, progress=report)
                except ModelServerError as exc:
                    raise ModelUnavailable(str(exc)) from exc

            try:
                result = await worker.run(fix())
            except ModelUnavailable as exc:
                self.model_error(exc)
                raise
        self.error_shown = False
        return EngineOutcome(result, dict(versions), self.stale_files(root, result, versions))

    def stale_files(self, root: Path, result: FixResult, versions: dict[str, int | None]) -> list[str]:
        """Files of the result whose buffer (or, when not open, disk) moved on since the engine read it."""
        stale = []
        for change in result.changes:
            doc = self.open_document(root / change.path)
            if change.path in versions:
                if doc is None or doc.version != versions[change.path]:
                    stale.append(change.path)
            elif doc is not None:  # read from disk, opened since: the buffer must still match
                if doc.source != (None if change.created else change.original):
                    stale.append(change.path)
            elif check_fresh(root, [change]):
                stale.append(change.path)
        return stale

    def edit_for(self, root: Path, outcome: EngineOutcome) -> types.WorkspaceEdit:
        caps = self.client_capabilities.workspace
        ws_edit = caps.workspace_edit if caps else None
        return lsp_convert.workspace_edit(
            outcome.result.changes,
            root,
            outcome.versions,
            codec=self.workspace.position_codec,
            document_changes=bool(ws_edit and ws_edit.document_changes),
            annotations=bool(ws_edit and ws_edit.change_annotation_support is not None),
        )

    # -- diagnostics ------------------------------------------------------------------------------

    def publish(self, path: str) -> None:
        diagnostics = [d for run in self.runs.values() for d in run.diagnostics.get(path, [])]
        diagnostics += self.review_diagnostics.get(path, [])
        uri = from_fs_path(path)
        if uri:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))

    def our_diagnostics(self, path: str) -> list[types.Diagnostic]:
        return [d for run in self.runs.values() for d in run.diagnostics.get(path, [])]

    async def terminal_output(self, params: protocol.TerminalOutput) -> None:
        cwd = Path(params.cwd) if os.path.isabs(params.cwd) else None
        root = self.root_for(cwd) if cwd else (self.roots() or [Path.cwd()])[0]
        cwd = cwd or (root / params.cwd)
        try:
            cwd_rel = cwd.relative_to(root).as_posix()
        except ValueError:
            cwd_rel = ""
        cwd_rel = "" if cwd_rel == "." else cwd_rel
        key = hashlib.sha256(f"{root}\0{cwd_rel}\0{params.command.strip()}".encode()).hexdigest()[:16]
        old = self.runs.pop(key, None)
        touched = set(old.diagnostics) if old else set()
        if params.exit_code != 0:
            buffers = {Path(d.path): d.source for d in list(self.workspace.text_documents.values())}

            def convert() -> dict[str, list[types.Diagnostic]]:  # a thread: parsing may walk the workspace
                frames = parse_output(params.output, cwd=cwd, workspace=root)
                data = protocol.DiagnosticData(run=key, command=params.command, exit_code=params.exit_code, cwd=cwd_rel)
                by_uri = lsp_convert.frames_to_diagnostics(
                    frames, root, lambda p: buffers[p] if p in buffers else _read_disk(p),
                    codec=self.workspace.position_codec, data=data.dump(),
                )
                return {to_fs_path(uri) or uri: diags for uri, diags in by_uri.items()}

            run = TerminalRun(key, params.command, cwd_rel, params.exit_code, params.output, await asyncio.to_thread(convert))
            if run.diagnostics:
                self.runs[key] = run
            touched |= set(run.diagnostics)
        for path in sorted(touched):
            self.publish(path)

    def did_change(self, params: types.DidChangeTextDocumentParams) -> None:
        path = to_fs_path(params.text_document.uri)
        if path is None:
            return
        changed = False
        stores = [run.diagnostics for run in self.runs.values()] + [self.review_diagnostics]
        for store in stores:
            before = store.get(path)
            if not before:
                continue
            after = before
            for change in params.content_changes:
                after = lsp_convert.adjust_for_change(after, change)
            if after != before:
                store[path] = after
                changed = True
        if changed:
            self.publish(path)

    # -- code actions -------------------------------------------------------------------------------

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        path = to_fs_path(uri) or uri
        doc = self.workspace.get_text_document(uri)
        only = params.context.only
        actions: list[types.CodeAction] = []
        if lsp_convert.kind_allowed(types.CodeActionKind.QuickFix, only):
            resolves = background_fix.resolves_edits(self.client_capabilities)
            for diagnostic in params.context.diagnostics:
                action = lsp_convert.fix_action(diagnostic, uri, doc.version)
                actions.append(action if resolves else background_fix.as_command(action))
                for suggestion in self.suggestions.get(_diag_key(path, diagnostic), []):
                    actions.append(lsp_convert.suggestion_action(suggestion, [diagnostic]))
        selection = params.range
        if selection.start != selection.end and lsp_convert.kind_allowed(types.CodeActionKind.RefactorRewrite, only):
            actions += lsp_convert.selection_actions(uri, selection)
        if lsp_convert.kind_allowed(types.CodeActionKind.Source, only):
            actions.append(lsp_convert.review_action(uri))
        return actions

    def task_for(self, diagnostic: types.Diagnostic, root: Path, rel: str) -> Task:
        """What to ask the engine for a diagnostic. Ours stand for a failing command: the task is
        "make that command pass" (verified by re-running it), the same task `qfix` builds, so
        every diagnostic of one run and a qfix run before share one cached plan. Any other
        server's diagnostic is fixed from its message, at its lines."""
        data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
        if diagnostic.source == protocol.SOURCE and "run" in data:
            with contextlib.suppress(ValueError):
                info = protocol.DiagnosticData.model_validate(data)
                run = self.runs.get(info.run)
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
        diagnostic = lsp_convert.CONVERTER.structure(data.diagnostic, types.Diagnostic)
        path = Path(to_fs_path(data.uri) or data.uri)
        root = self.root_for(path)
        rel = path.relative_to(root).as_posix() if root in path.parents else path.name
        task = self.task_for(diagnostic, root, rel)
        try:
            outcome = await self.run_engine(task, root, f"Qwen: fixing {lsp_convert.short_problem(diagnostic.message)}")
        except ModelUnavailable as exc:
            action.disabled = types.CodeActionDisabled(reason=f"model server error: {exc}")
            return action
        result = outcome.result
        if result.suggestions:
            self.remember_suggestions(str(path), diagnostic, result.suggestions)
        if outcome.stale:
            reason = f"{', '.join(outcome.stale)} changed while Qwen was working; ask again"
            action.title = f"{action.title} (stale: not applied)"
            action.disabled = types.CodeActionDisabled(reason=reason)
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=f"Qwen: {reason}."))
            return action
        action.title = lsp_convert.fix_title(diagnostic.message, result)
        if result.changes:
            action.edit = self.edit_for(root, outcome)
            action.is_preferred = result.outcome == "fixed"
        elif result.suggestions:
            action.command = lsp_convert.suggestion_action(result.suggestions[0]).command
        else:
            reason = (result.error or result.summary or "no change").strip()
            # Editors show this in a tooltip: the model's last words, not its whole essay.
            action.disabled = types.CodeActionDisabled(reason=reason if len(reason) <= 300 else reason[:299] + "…")
        return action

    def remember_suggestions(self, path: str, diagnostic: types.Diagnostic, suggestions: list[ShellSuggestion]) -> None:
        if len(self.suggestions) >= MAX_SUGGESTION_KEYS:
            self.suggestions.pop(next(iter(self.suggestions)))
        self.suggestions[_diag_key(path, diagnostic)] = list(suggestions)

    # -- commands --------------------------------------------------------------------------------------

    def _locate(self, uri: str) -> tuple[Path, Path, str]:
        path = Path(to_fs_path(uri) or uri)
        root = self.root_for(path)
        rel = path.relative_to(root).as_posix() if root in path.parents else path.name
        return path, root, rel

    async def apply(self, root: Path, outcome: EngineOutcome, label: str) -> protocol.ApplyOutcome:
        result = outcome.result
        if outcome.stale:
            return protocol.ApplyOutcome(applied=False, summary=f"not applied: {', '.join(outcome.stale)} changed meanwhile")
        if not result.changes:
            return protocol.ApplyOutcome(applied=False, summary=result.error or result.summary or "no change")
        answer = await self.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(edit=self.edit_for(root, outcome), label=label)
        )
        summary = result.summary if answer.applied else f"the editor refused the edit: {answer.failure_reason or 'stale'}"
        return protocol.ApplyOutcome(applied=bool(answer.applied), summary=summary, title=label)

    async def cmd_ask(self, args: protocol.AskArgs) -> protocol.ApplyOutcome:
        _path, root, rel = self._locate(args.uri)
        start, end = lsp_convert.lines_of_range(_lsp_range(args.range))
        task = Task(kind=TaskKind.instruction, description=args.instruction, path=rel, start_line=start, end_line=end)
        try:
            outcome = await self.run_engine(task, root, "Qwen: " + lsp_convert.short_problem(args.instruction))
        except ModelUnavailable as exc:
            return protocol.ApplyOutcome(applied=False, summary=str(exc))
        title = f"Qwen: {lsp_convert.short_problem(args.instruction)} ({lsp_convert.validation_summary(outcome.result.validation)})"
        return await self.apply(root, outcome, title)

    async def cmd_fix(self, args: protocol.FixArgs) -> protocol.ApplyOutcome:
        path, root, rel = self._locate(args.uri)
        if args.diagnostic is not None:
            diagnostic = lsp_convert.CONVERTER.structure(args.diagnostic, types.Diagnostic)
        else:
            first, last = args.range.start.line, args.range.end.line
            ours = [d for d in self.our_diagnostics(str(path)) if d.range.start.line <= last and d.range.end.line >= first]
            theirs = fix_target.overlapping(fix_target.editor_diagnostics(args.diagnostics, lsp_convert.CONVERTER), first, last)
            if not ours and not theirs:  # nothing reported there: fix the code itself
                return await self.cmd_fix_code(root, rel, first + 1, last + 1)
            diagnostic = (ours or theirs)[0]
        try:
            outcome = await self.run_engine(
                self.task_for(diagnostic, root, rel), root, f"Qwen: fixing {lsp_convert.short_problem(diagnostic.message)}"
            )
        except ModelUnavailable as exc:
            return protocol.ApplyOutcome(applied=False, summary=str(exc))
        if outcome.result.suggestions:
            self.remember_suggestions(str(path), diagnostic, outcome.result.suggestions)
        return await self.apply(root, outcome, lsp_convert.fix_title(diagnostic.message, outcome.result))

    async def cmd_fix_code(self, root: Path, rel: str, first: int, last: int) -> protocol.ApplyOutcome:
        task = fix_target.code_task(rel, first, last)
        try:
            outcome = await self.run_engine(task, root, f"Qwen: fixing {rel}:{first}")
        except ModelUnavailable as exc:
            return protocol.ApplyOutcome(applied=False, summary=str(exc))
        checks = lsp_convert.validation_summary(outcome.result.validation)
        return await self.apply(root, outcome, f"Fix {rel}:{first}" + (f" ({checks})" if checks else ""))

    async def cmd_explain(self, args: protocol.Selection) -> protocol.ExplainOutcome:
        _path, root, rel = self._locate(args.uri)
        start, end = lsp_convert.lines_of_range(_lsp_range(args.range))
        task = Task(kind=TaskKind.explain, description=f"Explain lines {start}-{end} of {rel}.", path=rel,
                    start_line=start, end_line=end)
        try:
            outcome = await self.run_engine(task, root, f"Qwen: explaining {rel}:{start}")
        except ModelUnavailable as exc:
            return protocol.ExplainOutcome(markdown=f"Qwen could not answer: {exc}")
        markdown = outcome.result.summary.strip() or "(no answer)"
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=markdown))
        return protocol.ExplainOutcome(markdown=markdown)

    # -- review ----------------------------------------------------------------------------------------

    async def review_file(self, path: Path, *, whole_file: bool) -> int | None:
        """Review the buffer of `path` (the whole file, or what changed since git HEAD) and
        publish the findings; None when no review happened (the model server was unavailable)."""
        root = self.root_for(path)
        rel = path.relative_to(root).as_posix() if root in path.parents else path.name
        doc = self.open_document(path)
        text = doc.source if doc is not None else _read_disk(path)
        version = doc.version if doc is not None else None
        if text is None:
            return 0
        worker = self.engine_thread()
        settings = self.settings_for(root)

        async def review() -> Any:
            from qwen_lsp.engine.edits import unified_diff
            from qwen_lsp.review.engine import review_diff

            engine = worker.engine(root, settings)
            base = "" if whole_file else await _git_head_text(root, rel)
            diff = unified_diff(rel, base, text)
            if not diff:
                return None
            return await review_diff(diff, root, settings, engine.client, think=False, cache=engine.cache,
                                     read_file=lambda r: text if r == rel else None)

        async with self.progress(f"Qwen: reviewing {rel}"):
            result = await worker.run(review())
        if result is None:  # nothing changed since HEAD: nothing to review, old findings no longer apply
            findings: list[Any] = []
        elif not result.available:
            self.model_error(ModelUnavailable(result.error or "the model server is unavailable"))
            return None
        elif result.error is not None:  # e.g. an answer that was not review JSON: say so, keep old findings
            self.status("error", f"review of {rel} failed: {result.error}")
            if whole_file:  # asked for explicitly: the user is waiting for an answer
                self.window_show_message(types.ShowMessageParams(
                    type=types.MessageType.Warning, message=f"Qwen: review of {rel} failed: {result.error}"))
            return None
        else:
            findings = result.findings
        now = self.open_document(path)
        if now is not None and version is not None and now.version != version:
            return None  # edited while reviewing: the lines moved; the next save reviews again
        self.error_shown = False
        self.review_diagnostics[str(path)] = lsp_convert.findings_to_diagnostics(
            findings, rel, text, codec=self.workspace.position_codec
        )
        self.publish(str(path))
        return len(findings)

    def did_save(self, params: types.DidSaveTextDocumentParams) -> None:
        """Review-on-save (opt-in): debounced, and a newer save replaces a pending or running review."""
        path = Path(to_fs_path(params.text_document.uri) or params.text_document.uri)
        settings = self.settings_for(self.root_for(path))
        if not settings.review_on_save:
            return
        key = str(path)
        if (previous := self.pending_reviews.pop(key, None)) is not None:
            previous.cancel()

        async def later() -> None:
            try:
                await asyncio.sleep(settings.review_debounce_seconds)
                await self.review_file(path, whole_file=False)
            finally:
                if self.pending_reviews.get(key) is task:
                    del self.pending_reviews[key]

        task = asyncio.ensure_future(later())
        task.add_done_callback(_log_failure)
        self.pending_reviews[key] = task

    async def cmd_review(self, args: protocol.ReviewArgs) -> protocol.ReviewOutcome:
        count = await self.review_file(Path(to_fs_path(args.uri) or args.uri), whole_file=True)
        return protocol.ReviewOutcome(findings=count or 0)

    # -- side channel and lifecycle ----------------------------------------------------------------

    async def start_listeners(self) -> None:
        wanted = {root: socket_path(root, self.settings_for(root).cache_dir) for root in self.roots()}
        for root, listener in list(self.listeners.items()):
            if wanted.get(root) != listener.path:
                listener.close()
                del self.listeners[root]
        for root, path in wanted.items():
            if root in self.listeners:
                continue
            listener = Listener(path, self.on_side_channel)
            try:
                if await listener.start():
                    self.listeners[root] = listener
            except OSError as exc:
                log.warning("side channel for %s not available: %s", root, exc)

    def on_side_channel(self, params: protocol.TerminalOutput) -> None:
        task = asyncio.ensure_future(self.terminal_output(params))
        task.add_done_callback(_log_failure)

    def close(self) -> None:
        """Stop listening and stop the engine thread (shutdown, or the client went away)."""
        for listener in self.listeners.values():
            listener.close()
        self.listeners.clear()
        for task in [*self.inflight.values(), *self.pending_reviews.values()]:
            task.cancel()
        if self.worker is not None:
            self.worker.stop(wait=self.busy > 0)  # only model streams need closing before we exit
            self.worker = None


def _snake(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in key)


def _diag_key(path: str, diagnostic: types.Diagnostic) -> tuple[str, int, str]:
    return (path, diagnostic.range.start.line, diagnostic.message)


def _lsp_range(r: protocol.Range) -> types.Range:
    return types.Range(types.Position(r.start.line, r.start.character), types.Position(r.end.line, r.end.character))


def _read_disk(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="surrogateescape")
    except (OSError, ValueError):
        return None


async def _git_head_text(root: Path, rel: str) -> str:
    """The file as committed at HEAD; "" when untracked or outside git (then all of it is new)."""
    try:
        proc = await asyncio.create_subprocess_exec(
            "git", "show", f"HEAD:./{rel}", cwd=root,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        )
        out, _ = await proc.communicate()
    except OSError:
        return ""
    return out.decode("utf-8", "surrogateescape") if proc.returncode == 0 else ""


def _log_failure(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.error("background task failed", exc_info=exc)


# --------------------------------------------------------------------------- handlers


def create_server() -> QwenLanguageServer:
    """A server with every feature registered; handlers only translate and delegate."""
    server = QwenLanguageServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: QwenLanguageServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        ls.init_options = dict(options) if isinstance(options, dict) else {}

    @server.feature(types.INITIALIZED)
    async def initialized(ls: QwenLanguageServer, params: types.InitializedParams) -> None:
        ls.engine_thread().preload()
        await ls.refresh_configuration()
        await ls.start_listeners()
        ls.status("idle", "ready")

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: QwenLanguageServer, params: types.DidChangeConfigurationParams) -> None:
        pushed = params.settings.get("qwen") if isinstance(params.settings, dict) else None
        if isinstance(pushed, dict):  # clients without workspace/configuration push the section
            ls.config[""] = pushed
            ls._settings.clear()
        await ls.refresh_configuration()
        await ls.start_listeners()

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_folders(ls: QwenLanguageServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        await ls.refresh_configuration()
        await ls.start_listeners()

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: QwenLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.did_change(params)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: QwenLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.did_save(params)

    @server.feature(protocol.TERMINAL_OUTPUT)
    async def terminal_output(ls: QwenLanguageServer, params: Any) -> None:
        await ls.terminal_output(protocol.TerminalOutput.model_validate(params))

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[
                types.CodeActionKind.QuickFix, types.CodeActionKind.RefactorRewrite, types.CodeActionKind.Source,
            ],
            resolve_provider=True,
        ),
    )
    def code_action(ls: QwenLanguageServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return ls.code_actions(params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: QwenLanguageServer, action: types.CodeAction) -> types.CodeAction:
        with ls.tracked():
            return await ls.resolve_fix(action)

    @server.command(protocol.SERVER_ASK)
    async def ask(ls: QwenLanguageServer, *args: Any) -> dict[str, Any]:
        with ls.tracked():
            return (await ls.cmd_ask(protocol.AskArgs.model_validate(_first(args)))).dump()

    @server.command(protocol.SERVER_FIX)
    async def fix(ls: QwenLanguageServer, *args: Any) -> dict[str, Any]:
        with ls.tracked():
            return (await ls.cmd_fix(protocol.FixArgs.model_validate(_first(args)))).dump()

    @server.command(background_fix.SERVER_FIX_IN_BACKGROUND)
    def fix_in_background(ls: QwenLanguageServer, *args: Any) -> dict[str, Any]:
        return background_fix.start(ls, _first(args))

    @server.command(protocol.SERVER_EXPLAIN)
    async def explain(ls: QwenLanguageServer, *args: Any) -> dict[str, Any]:
        with ls.tracked():
            return (await ls.cmd_explain(protocol.Selection.model_validate(_first(args)))).dump()

    @server.command(protocol.SERVER_REVIEW)
    async def review(ls: QwenLanguageServer, *args: Any) -> dict[str, Any]:
        with ls.tracked():
            return (await ls.cmd_review(protocol.ReviewArgs.model_validate(_first(args)))).dump()

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: QwenLanguageServer, params: Any) -> None:
        ls.close()

    return server


def _first(args: tuple[Any, ...]) -> Any:
    if not args:
        raise ValueError("missing argument")
    return args[0]
