"""The live index of each workspace folder, fed by the editor's change events.

Open buffers reach the index from didOpen/didChange (their text, tagged lazily at the next fix),
files on disk from didSave, didClose and workspace/didChangeWatchedFiles. The watcher is registered
dynamically when the client can; without that, a cheap mtime scan runs off the event loop every
RESCAN_SECONDS. Indexing starts in the background once the server has said it is ready (the
index's modules are imported off the event loop too), so the first fix finds it warm, and while
a folder's first index is built its progress shows in the status ("indexing 1,200/25,000 files"). The same disk events drop terminal diagnostics of closed files that changed on disk:
their lines may no longer be the lines the command complained about.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:  # imported off the event loop after `initialized` (tree-sitter, numpy: most of a second)
    from qwen_lsp.context.index import WorkspaceIndex
    from qwen_lsp.lsp.server import QwenLanguageServer

log = logging.getLogger(__name__)

RESCAN_SECONDS = 10.0
PROGRESS_MIN = 200  # a first build parsing fewer files is over too soon to show
WATCHER_ID = "qwen-lsp-watch-files"


class Indexes:
    """One `WorkspaceIndex` per workspace folder."""

    def __init__(self, server: QwenLanguageServer) -> None:
        self.server = server
        self.by_root: dict[Path, WorkspaceIndex] = {}
        self._rescanner: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the server's, for the loader threads' progress

    def for_root(self, root: Path) -> WorkspaceIndex:
        """The folder's index, created (and loading in the background) on first use."""
        index = self.by_root.get(root)
        if index is None:
            from qwen_lsp.context.index import WorkspaceIndex

            if self._loop is None:
                with contextlib.suppress(RuntimeError):  # off the loop: no progress shown
                    self._loop = asyncio.get_running_loop()

            cache_dir = self.server.folders.settings_for(root).cache_dir
            index = self.by_root[root] = WorkspaceIndex(root, cache_dir=cache_dir)
            index.start_loading(progress=lambda done, total: self._progress(root, done, total))
        return index

    async def watch(self) -> None:
        """At `initialized`: watch the disk (file watching registered with the client, else a rescan)."""
        if await self._register_watcher():
            return
        if self._rescanner is None:
            self._rescanner = asyncio.ensure_future(self._rescan_forever())

    async def start(self) -> None:
        """After `initialized`: index every folder in the background."""
        await asyncio.to_thread(importlib.import_module, "qwen_lsp.context.index")
        for root in self.server.folders.roots():
            self.for_root(root)

    def _progress(self, root: Path, done: int, total: int) -> None:
        """From the loader thread: how far the folder's first index build is, in the status."""
        loop = self._loop
        if loop is None or total < PROGRESS_MIN:
            return
        if done < total:
            message = f"indexing {root.name}: {done:,}/{total:,} files"
        else:
            message = f"indexed {total:,} files in {root.name}"
        with contextlib.suppress(RuntimeError):  # the loop is closed: the server is going away
            loop.call_soon_threadsafe(self._show_progress, message, done >= total)

    def _show_progress(self, message: str, finished: bool) -> None:
        activity = self.server.activity
        if activity.busy:  # a fix's own progress is in the status: leave it
            return
        if not finished:
            activity.status("busy", message)
        elif activity.last_status is not None and activity.last_status[1].startswith("indexing "):
            activity.status("idle", "ready")  # unless a fix said something since (an error stays)

    def close(self) -> None:
        if self._rescanner is not None:
            self._rescanner.cancel()
            self._rescanner = None

    # -- events ----------------------------------------------------------------------------------

    def buffer_changed(self, uri: str) -> None:
        """didOpen / didChange: the buffer's current text (pygls has applied the change already)."""
        path, root, rel = self.server.folders.locate(uri)
        if root not in path.parents:
            return
        doc = self.server.workspace.get_text_document(uri)
        self.for_root(root).set_text(rel, doc.source)

    def disk_changed(self, uri: str) -> None:
        """didSave / didClose / a watched file: read the file from disk again."""
        path, root, rel = self.server.folders.locate(uri)
        if root not in path.parents:
            return
        self.for_root(root).file_changed(rel)

    def watched_files(self, params: types.DidChangeWatchedFilesParams) -> None:
        for change in params.changes:
            self.disk_changed(change.uri)
            path, _, _ = self.server.folders.locate(change.uri)
            self._changed_on_disk(path)

    def _changed_on_disk(self, path: Path) -> None:
        # An open buffer's diagnostics move with its edits (DiagnosticStore.did_change); a closed
        # file's cannot, so they go.
        if self.server.folders.open_document(path) is None:
            self.server.diagnostics.forget_file(str(path))

    # -- without client file watching -------------------------------------------------------------

    async def _register_watcher(self) -> bool:
        caps = self.server.client_capabilities
        watched = caps.workspace.did_change_watched_files if caps and caps.workspace else None
        if watched is None or not watched.dynamic_registration:
            return False
        options = types.DidChangeWatchedFilesRegistrationOptions(watchers=[types.FileSystemWatcher(glob_pattern="**/*")])
        registration = types.Registration(id=WATCHER_ID, method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                          register_options=options)
        try:
            await self.server.client_register_capability_async(types.RegistrationParams(registrations=[registration]))
        except Exception:
            log.debug("the client refused file watching; scanning mtimes instead", exc_info=True)
            return False
        return True

    async def _rescan_forever(self) -> None:
        while True:
            await asyncio.sleep(RESCAN_SECONDS)
            for root, index in list(self.by_root.items()):
                if not index.loaded:
                    continue
                try:
                    changed = await asyncio.to_thread(index.rescan)
                except Exception:
                    log.debug("rescanning %s failed", root, exc_info=True)
                    continue
                for rel in changed:
                    self._changed_on_disk(root / rel)
