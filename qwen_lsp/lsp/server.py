"""The language server: thin pygls handlers that translate LSP into feature calls.

`QwenLanguageServer` holds what the features share (the engine thread, in-flight
requests, side-channel listeners) and one object per feature, each holding a
reference back to it (as esbonio's `LanguageFeature`s do):

    folders      workspace.py    roots, settings per folder, open buffers
    activity     progress.py     status, work-done progress, model errors, cancellable requests
    diagnostics  diagnostics.py  terminal runs and review findings, published and moved on edits
    fixes        fixes.py        code actions, resolve, ask/fix/explain, shell suggestions
    reviews      review.py       review on request and on save
    indexes      indexing.py     the live tag index of each folder, fed by change events

Engine runs happen on a background event loop (`engine_thread.EngineThread`).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, default_converter
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage, MsgId

from qwen_lsp import __version__, wire as protocol
from qwen_lsp.lsp import background_fix
from qwen_lsp.lsp.comments import Comments
from qwen_lsp.lsp.diagnostics import DiagnosticStore
from qwen_lsp.lsp.engine_thread import EngineThread
from qwen_lsp.lsp.fixes import Fixes
from qwen_lsp.lsp.indexing import Indexes
from qwen_lsp.lsp.progress import Activity, log_failure
from qwen_lsp.lsp.review import Reviews
from qwen_lsp.lsp.workspace import Folders
from qwen_lsp.sidechannel import Listener, socket_path

log = logging.getLogger(__name__)


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
        self.inflight: dict[MsgId, asyncio.Task[Any]] = {}
        self.listeners: dict[Path, Listener] = {}
        self.worker: EngineThread | None = None
        self.folders = Folders(self)
        self.activity = Activity(self)
        self.diagnostics = DiagnosticStore(self)
        self.fixes = Fixes(self)
        self.reviews = Reviews(self)
        self.indexes = Indexes(self)
        self.comments = Comments(self)
        self.background_fixes: set[asyncio.Task[Any]] = set()  # clients without resolve (lsp/background_fix.py)

    def engine_thread(self) -> EngineThread:
        if self.worker is None:
            self.worker = EngineThread()
        return self.worker

    # -- side channel and lifecycle ----------------------------------------------------------------

    async def start_listeners(self) -> None:
        folders = self.folders
        wanted = {root: socket_path(root, folders.settings_for(root).cache_dir) for root in folders.roots()}
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
        task = asyncio.ensure_future(self.diagnostics.terminal_output(params))
        task.add_done_callback(log_failure)

    def close(self) -> None:
        """Stop listening and stop the engine thread (shutdown, or the client went away)."""
        for listener in self.listeners.values():
            listener.close()
        self.listeners.clear()
        self.indexes.close()
        for task in [*self.inflight.values(), *self.reviews.pending.values()]:
            task.cancel()
        if self.worker is not None:
            self.worker.stop(wait=self.activity.busy > 0)  # only model streams need closing before we exit
            self.worker = None


# --------------------------------------------------------------------------- handlers


def create_server() -> QwenLanguageServer:
    """A server with every feature registered; handlers only translate and delegate."""
    server = QwenLanguageServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: QwenLanguageServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        ls.folders.init_options = dict(options) if isinstance(options, dict) else {}

    @server.feature(types.INITIALIZED)
    async def initialized(ls: QwenLanguageServer, params: types.InitializedParams) -> None:
        await ls.folders.refresh_configuration()
        await ls.start_listeners()
        await ls.indexes.watch()
        ls.activity.status("idle", "ready")
        # The heavy part after "ready": the engine's imports on its thread, each folder's index on its own.
        ls.engine_thread().preload()
        await ls.indexes.start()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: QwenLanguageServer, params: types.DidChangeConfigurationParams) -> None:
        pushed = params.settings.get("qwen") if isinstance(params.settings, dict) else None
        if isinstance(pushed, dict):  # clients without workspace/configuration push the section
            ls.folders.push_config(pushed)
        await ls.folders.refresh_configuration()
        await ls.start_listeners()

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_folders(ls: QwenLanguageServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        await ls.folders.refresh_configuration()
        await ls.start_listeners()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: QwenLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.indexes.buffer_changed(params.text_document.uri)
        ls.comments.refresh(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: QwenLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.diagnostics.did_change(params)
        ls.indexes.buffer_changed(params.text_document.uri)
        ls.comments.refresh(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: QwenLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.reviews.did_save(params)
        ls.indexes.disk_changed(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: QwenLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.indexes.disk_changed(params.text_document.uri)  # the buffer's unsaved text is gone
        ls.comments.forget(params.text_document.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: QwenLanguageServer, params: types.DidChangeWatchedFilesParams) -> None:
        ls.indexes.watched_files(params)

    @server.feature(protocol.TERMINAL_OUTPUT)
    async def terminal_output(ls: QwenLanguageServer, params: Any) -> None:
        await ls.diagnostics.terminal_output(protocol.TerminalOutput.model_validate(params))

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
        return ls.comments.code_actions(params) + ls.fixes.code_actions(params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: QwenLanguageServer, action: types.CodeAction) -> types.CodeAction:
        with ls.activity.tracked():
            if isinstance(action.data, dict) and action.data.get("qwen") == "comments":
                return await ls.comments.resolve(action)
            return await ls.fixes.resolve_fix(action)

    @server.command(protocol.SERVER_ASK)
    async def ask(ls: QwenLanguageServer, *args: Any) -> dict[str, Any]:
        with ls.activity.tracked():
            return (await ls.fixes.cmd_ask(protocol.AskArgs.model_validate(_first(args)))).dump()

    @server.command(protocol.SERVER_FIX)
    async def fix(ls: QwenLanguageServer, *args: Any) -> dict[str, Any]:
        with ls.activity.tracked():
            return (await ls.fixes.cmd_fix(protocol.FixArgs.model_validate(_first(args)))).dump()

    @server.command(background_fix.SERVER_FIX_IN_BACKGROUND)
    def fix_in_background(ls: QwenLanguageServer, *args: Any) -> dict[str, Any]:
        return background_fix.start(ls, _first(args))

    @server.command(protocol.SERVER_DO_COMMENTS)
    async def do_comments(ls: QwenLanguageServer, *args: Any) -> dict[str, Any]:
        with ls.activity.tracked():
            return (await ls.comments.cmd_do_comments(protocol.DoCommentsArgs.model_validate(_first(args)))).dump()

    @server.command(protocol.SERVER_REFINE)
    async def refine(ls: QwenLanguageServer, *args: Any) -> dict[str, Any]:
        with ls.activity.tracked():
            return (await ls.fixes.cmd_refine(protocol.RefineArgs.model_validate(_first(args)))).dump()

    @server.command(protocol.SERVER_EXPLAIN)
    async def explain(ls: QwenLanguageServer, *args: Any) -> dict[str, Any]:
        with ls.activity.tracked():
            return (await ls.fixes.cmd_explain(protocol.Selection.model_validate(_first(args)))).dump()

    @server.command(protocol.SERVER_REVIEW)
    async def review(ls: QwenLanguageServer, *args: Any) -> dict[str, Any]:
        with ls.activity.tracked():
            return (await ls.reviews.cmd_review(protocol.ReviewArgs.model_validate(_first(args)))).dump()

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: QwenLanguageServer, params: Any) -> None:
        ls.close()

    return server


def _first(args: tuple[Any, ...]) -> Any:
    if not args:
        raise ValueError("missing argument")
    return args[0]
