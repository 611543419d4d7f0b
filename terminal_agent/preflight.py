"""Is the model server up? Asked on a thread while the user's command runs, so a server
that is down is said at once, not after a long test suite has failed."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path


class ServerCheck:
    """GET /v1/models with no retries, started at construction."""

    def __init__(self, cwd: Path, *, announce: bool) -> None:
        self.cwd = cwd
        self.announce = announce  # print the one-line error as soon as it is known
        self.announced = False
        self.kind: str | None = None  # None: down or unreachable; "rejected": up, but refused us (a key)
        self._error: str | None = None
        self._thread = threading.Thread(target=self._run, name="qfix-server-check", daemon=True)
        self._thread.start()

    def error(self) -> str | None:
        """The server's problem in one line, or None when it answered (waits for the check)."""
        self._thread.join()
        return self._error

    def _run(self) -> None:
        from qwen_lsp.llm.client import ModelClient, ModelServerError, RequestRejected, ServerBusy
        from qwen_lsp.settings import load_settings

        async def probe() -> None:
            settings = load_settings(self.cwd)
            client = ModelClient(settings.model_copy(update={"max_retries": 0, "busy_wait_seconds": 0}))
            try:
                await client.info()
            finally:
                await client.close()

        try:
            asyncio.run(probe())
        except ServerBusy:  # up: the fix waits for its turn itself
            return
        except ModelServerError as exc:
            self.kind = "rejected" if isinstance(exc, RequestRejected) else None
            self._error = " ".join(str(exc).split())
            if self.announce:
                print(f"qfix: {self._error}", file=sys.stderr, flush=True)
                self.announced = True
        except Exception:  # noqa: BLE001 - bad settings and the like: the engine reports them properly later
            return
