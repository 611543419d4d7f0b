"""Prompts assembled ahead of the fix that will need them.

Context assembly is the slow part before the first model request (a repo map, git history,
parsing). The language server knows which fix is likely next (the user is looking at a
diagnostic), so it asks for that prompt in the background; the fix then finds it ready, or
awaits the assembly already under way instead of starting a second one.

A prompt is reused only under the key it was built for, and the key names everything it read:
the task, the open buffers' versions, the live index's version (files changed on disk) and git's
HEAD and index. Anything that moved means a different key, so a stale prompt is never used. (The
working tree's diff in the prompt, context/changes.py, shows only source files, the ones the live
index watches, so an edit on disk there moves the index's version.)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable

from qwen_lsp.context.prompt import Prompt

log = logging.getLogger(__name__)

MAX_ENTRIES = 8  # a few diagnostics in view at once; old keys are unreachable anyway


class PromptCache:
    """Prompt assemblies by key, on one event loop (the engine thread's)."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._entries: dict[Hashable, asyncio.Future[Prompt]] = {}
        self._max = max_entries

    def get(self, key: Hashable, build: Callable[[], Prompt]) -> asyncio.Future[Prompt]:
        """The assembly for `key`: the one under way or done, else `build` started on a thread.
        A failed assembly is dropped, so the next caller builds again (and sees the error)."""
        entry = self._entries.get(key)
        if entry is not None and not (entry.done() and (entry.cancelled() or entry.exception() is not None)):
            return entry
        entry = asyncio.ensure_future(asyncio.to_thread(build))
        while len(self._entries) >= self._max:
            self._entries.pop(next(iter(self._entries)))
        self._entries[key] = entry
        entry.add_done_callback(_log_failure)
        return entry


def _log_failure(entry: asyncio.Future[Prompt]) -> None:
    if not entry.cancelled() and (exc := entry.exception()) is not None:
        log.debug("prompt assembly failed", exc_info=exc)
