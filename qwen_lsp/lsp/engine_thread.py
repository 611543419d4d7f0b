"""A background thread with its own event loop, where every engine run happens.

Prompt assembly, tree-sitter and the disk cache are synchronous; on the
language server's loop they would hold up `didChange` while fixes run.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from qwen_lsp.heap import release_free_memory
from qwen_lsp.settings import Settings

if TYPE_CHECKING:  # the engine (openai, tree-sitter) loads on the engine thread, not before `initialize`
    from qwen_lsp.context.index import WorkspaceIndex
    from qwen_lsp.engine.loop import Engine

T = TypeVar("T")
CANCEL_GRACE_SECONDS = 10.0  # how long a cancelled request waits for the engine to close its stream


class ModelUnavailable(Exception):
    """The engine's ModelServerError, carried over from the engine thread; the message says what to do."""


class EngineThread:
    """A background thread running its own event loop, where every engine run happens."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="qwen-engine", daemon=True)
        self._thread.start()
        self._engines: dict[Path, tuple[Settings, Engine]] = {}  # touched on the engine thread only

    def engine(self, root: Path, settings: Settings, live_index: WorkspaceIndex | None = None) -> Engine:
        """The Engine for `root` (engine thread only): kept while its settings stay the same,
        so the model client's connections and the tool-support probe are reused."""
        from qwen_lsp.engine.loop import Engine

        current = self._engines.get(root)
        if current is None or current[0] != settings:
            current = (settings, Engine(settings, live_index=live_index))
            self._engines[root] = current
        current[1].live_index = live_index
        return current[1]

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await `coro` on the engine loop. Cancelling the caller cancels the engine task
        and waits (bounded) until it has really stopped, so its model stream is closed
        before the cancellation is reported."""
        main = asyncio.get_running_loop()
        outcome: asyncio.Future[T] = main.create_future()
        started: list[asyncio.Task[T]] = []

        def settle(task: asyncio.Task[T]) -> None:  # engine thread
            def copy() -> None:
                if outcome.done():
                    return
                if task.cancelled():
                    outcome.cancel()
                elif (exc := task.exception()) is not None:
                    outcome.set_exception(exc)
                else:
                    outcome.set_result(task.result())

            with contextlib.suppress(RuntimeError):  # the server loop is gone: nobody waits
                main.call_soon_threadsafe(copy)
            # A run frees what it assembled (parses, prompts, a new reference graph); glibc would
            # keep it, and the server's resident size would creep up fix after fix.
            release_free_memory()

        def start() -> None:  # engine thread
            task = self.loop.create_task(coro)
            task.add_done_callback(settle)
            started.append(task)

        self.loop.call_soon_threadsafe(start)
        try:
            return await asyncio.shield(outcome)
        except asyncio.CancelledError:
            # Runs after start() (same FIFO queue), so the task exists.
            self.loop.call_soon_threadsafe(lambda: started[0].cancel() if started else None)
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(outcome, CANCEL_GRACE_SECONDS)
            raise

    def preload(self) -> None:
        """Import the engine's heavy dependencies in the background, before the first request needs them."""

        def load() -> None:
            from qwen_lsp.context import frames  # noqa: F401  (the terminal output parsers)
            from qwen_lsp.engine import loop as engine  # noqa: F401
            from qwen_lsp.engine.risk import load_parser
            from qwen_lsp.llm.tokens import count_tokens

            # Building the tokenizer holds the GIL for ~0.5 s (tiktoken's constructor), bashlex's tables
            # ~0.3 s: do it now, not in the middle of the first fix while the user types.
            count_tokens("warm up")
            load_parser()
            release_free_memory()  # the vocabulary's Python copy, dropped once the encoder is built

        self.loop.call_soon_threadsafe(load)

    def stop(self, wait: bool = True) -> None:
        """Cancel what still runs (closing model streams), then end the thread."""

        async def drain() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=2)
            self.loop.stop()

        with contextlib.suppress(RuntimeError):
            asyncio.run_coroutine_threadsafe(drain(), self.loop)
        if wait:
            self._thread.join(timeout=3)
