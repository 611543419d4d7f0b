"""What the user sees of work in progress: the status notification, work-done progress,
model-server errors, and which requests `$/cancelRequest` can reach."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from qwen_lsp import wire as protocol
from qwen_lsp.engine.thinking import decode as decode_thought
from qwen_lsp.lsp.engine_thread import ModelUnavailable
from qwen_lsp.sanitize import one_line
from qwen_lsp.types import NOTICE

if TYPE_CHECKING:
    from qwen_lsp.lsp.server import QwenLanguageServer

log = logging.getLogger(__name__)
# In an editor the server's address is its `baseUrl` setting (the environment variable is the terminal's way).
EDITOR_BASE_URL = "set the editor's Qwen baseUrl setting (qwen.baseUrl in VS Code; settings.baseUrl in Neovim)"


def for_the_editor(message: str) -> str:
    """Pure: a model-server error's advice worded for an editor user."""
    return message.replace("or set QWEN_LSP_BASE_URL", f"or {EDITOR_BASE_URL}").replace(
        "set QWEN_LSP_BASE_URL", EDITOR_BASE_URL)
PROGRESS_CREATE_TIMEOUT = 5.0


class Activity:
    """The status bar, progress reports and the once-shown model error."""

    def __init__(self, server: QwenLanguageServer) -> None:
        self.server = server
        self.busy = 0
        self.error_shown = False  # a model-server failure is shown once, until a run succeeds again
        self.last_status: tuple[str, str] | None = None

    def status(self, state: protocol.StatusState, message: str = "") -> None:
        self.last_status = (state, message)
        self.server.protocol.notify(protocol.STATUS, protocol.Status(state=state, message=message).dump())

    def model_error(self, exc: ModelUnavailable) -> None:
        """Tell the user once (with the fix the error carries); the status bar always."""
        message = for_the_editor(str(exc))
        self.status("error", message)
        if not self.error_shown:
            self.error_shown = True
            self.server.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=f"Qwen: {message}"))

    def model_ok(self) -> None:
        """A run reached the model: the next failure is news again."""
        self.error_shown = False

    @contextlib.asynccontextmanager
    async def progress(self, title: str) -> AsyncIterator[Callable[[str], None]]:
        """Work-done progress (when the client supports it) and the busy status. Yields a
        report function that is safe to call from the engine thread. The progress is
        cancellable: `window/workDoneProgress/cancel` cancels the request like `$/cancelRequest`."""
        server = self.server
        loop = asyncio.get_running_loop()
        current = asyncio.current_task()
        token: str | None = None
        window = server.client_capabilities.window
        if window is not None and window.work_done_progress:
            token = f"qwen-{uuid.uuid4().hex[:12]}"
            try:
                await asyncio.wait_for(server.work_done_progress.create_async(token), PROGRESS_CREATE_TIMEOUT)
            except Exception as exc:  # a client that does not answer must not stall the fix
                log.warning("workDoneProgress/create failed: %s", exc, exc_info=True)
                token = None
        if token is not None:
            server.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, message="starting", cancellable=True))
            cancelled_by_client = server.work_done_progress.tokens.get(token)
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
            if (thought := decode_thought(message)) is not None:  # live thinking: the progress only
                if token is not None:
                    server.work_done_progress.report(token, types.WorkDoneProgressReport(message=thought.line()))
                return
            # A retry (busy server, broken stream) is shown as it comes; a phase may quote the model: one visible line.
            message = one_line(message.removeprefix(NOTICE))
            if token is not None:
                server.work_done_progress.report(token, types.WorkDoneProgressReport(message=message))
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
                server.work_done_progress.end(token, types.WorkDoneProgressEnd(message=end_message))
                server.work_done_progress.tokens.pop(token, None)
            if self.busy == 0 and not failed:
                self.status("idle", "ready")

    @contextlib.contextmanager
    def tracked(self):
        """Register the current request so `$/cancelRequest` reaches it."""
        inflight = self.server.inflight
        msg_id = self.server.protocol.msg_id
        task = asyncio.current_task()
        if msg_id is not None and task is not None:
            inflight[msg_id] = task
        try:
            yield
        finally:
            if msg_id is not None:
                inflight.pop(msg_id, None)


def log_failure(task: asyncio.Future[Any]) -> None:
    """Done-callback for background tasks nobody awaits: their failure reaches the log."""
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.error("background task failed", exc_info=exc)
