"""Review in the editor: a file on request, or what changed since HEAD on save (opt-in);
the findings become diagnostics."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from qwen_lsp import gitio, wire as protocol
from qwen_lsp.files import text_of
from qwen_lsp.lsp import convert as lsp_convert
from qwen_lsp.lsp.engine_thread import ModelUnavailable
from qwen_lsp.lsp.progress import log_failure

if TYPE_CHECKING:
    from qwen_lsp.lsp.server import QwenLanguageServer


class Reviews:
    """Reviews of open files, and the pending review-on-save of each."""

    def __init__(self, server: QwenLanguageServer) -> None:
        self.server = server
        self.pending: dict[str, asyncio.Task[Any]] = {}  # review-on-save, by file system path

    async def review_file(self, path: Path, *, whole_file: bool) -> int | None:
        """Review the buffer of `path` (the whole file, or what changed since git HEAD) and
        publish the findings; None when no review happened (the model server was unavailable)."""
        server = self.server
        root, rel = server.folders.place(path)
        doc = server.folders.open_document(path)
        text = doc.source if doc is not None else text_of(path)
        version = doc.version if doc is not None else None
        if text is None:
            return 0
        worker = server.engine_thread()
        settings = server.folders.settings_for(root)
        live_index = server.indexes.for_root(root)

        async def review() -> Any:
            from qwen_lsp.engine.edits import unified_diff
            from qwen_lsp.review.engine import review_diff

            engine = worker.engine(root, settings, live_index)
            base = "" if whole_file else await _git_head_text(root, rel)
            diff = unified_diff(rel, base, text)
            if not diff:
                return None
            return await review_diff(diff, root, settings, engine.client, think=False, cache=engine.cache,
                                     read_file=lambda r: text if r == rel else None,
                                     background=not whole_file)  # on save: yields to the fixes

        async with server.activity.progress(f"Qwen: reviewing {rel}"):
            result = await worker.run(review())
        if result is None:  # nothing changed since HEAD: nothing to review, old findings no longer apply
            findings: list[Any] = []
        elif not result.available:
            server.activity.model_error(ModelUnavailable(result.error or "the model server is unavailable"))
            return None
        elif result.error is not None:  # e.g. an answer that was not review JSON: say so, keep old findings
            server.activity.status("error", f"review of {rel} failed: {result.error}")
            if whole_file:  # asked for explicitly: the user is waiting for an answer
                server.window_show_message(types.ShowMessageParams(
                    type=types.MessageType.Warning, message=f"Qwen: review of {rel} failed: {result.error}"))
            return None
        else:
            findings = result.findings
        now = server.folders.open_document(path)
        if now is not None and version is not None and now.version != version:
            return None  # edited while reviewing: the lines moved; the next save reviews again
        server.activity.model_ok()
        server.diagnostics.set_review(str(path), lsp_convert.findings_to_diagnostics(
            findings, rel, text, codec=server.workspace.position_codec
        ))
        return len(findings)

    def did_save(self, params: types.DidSaveTextDocumentParams) -> None:
        """Review-on-save (opt-in): debounced, and a newer save replaces a pending or running review."""
        path, root, _rel = self.server.folders.locate(params.text_document.uri)
        settings = self.server.folders.settings_for(root)
        if not settings.review_on_save or self.server.folders.outside(path):
            return
        key = str(path)
        if (previous := self.pending.pop(key, None)) is not None:
            previous.cancel()

        async def later() -> None:
            try:
                await asyncio.sleep(settings.review_debounce_seconds)
                await self.review_file(path, whole_file=False)
            finally:
                if self.pending.get(key) is task:
                    del self.pending[key]

        task = asyncio.ensure_future(later())
        task.add_done_callback(log_failure)
        self.pending[key] = task

    async def cmd_review(self, args: protocol.ReviewArgs) -> protocol.ReviewOutcome:
        path, _root, _rel = self.server.folders.locate(args.uri)
        if refused := self.server.folders.outside(path):  # its git history would be another file's
            self.server.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning,
                                                                    message=f"Qwen: {refused}"))
            return protocol.ReviewOutcome(findings=0, reviewed=False)
        count = await self.review_file(path, whole_file=True)
        return protocol.ReviewOutcome(findings=count or 0, reviewed=count is not None)


async def _git_head_text(root: Path, rel: str) -> str:
    """The file as committed at HEAD; "" when untracked or outside git (then all of it is new)."""
    return await asyncio.to_thread(gitio.show, root, f"HEAD:./{rel}") or ""
