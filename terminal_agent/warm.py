"""qfix's warm process: the engine already imported and its tokenizer loaded, waiting on a unix socket,
so that a failed command's first model request is not held up by a second of imports.

    python -m terminal_agent.warm [--fingerprint CODE]     (qfix starts it; see warm_client.py)

The daemon stays single-threaded and opens nothing but its socket (no event loop, sqlite or cache) so
that it may fork. Each "think" connection gets a forked child: it takes on the client's environment,
cwd and umask, loads the workspace's settings and context while the client's command still runs, then
runs exactly agent.think on the failure and sends back progress and the FixResult. It then keeps the
engine (and so the fix's conversation) until qfix closes the connection: a "refine" message with the
user's note is answered as the fix was (Engine.refine: append-only, no new plan). The child writes
nothing: showing, consent, applying and re-running stay in qfix. EOF from qfix (Ctrl-C, qfix gone)
cancels the child's fix or refinement, and ends it.

Safety: the socket is in a 0700 folder of the user's, made 0600, and the peer's uid (SO_PEERCRED) must
be ours. Its name carries the code's fingerprint; a daemon whose code changed under it, or whose socket
was removed, exits; so does one with nothing to do for QFIX_WARM_IDLE seconds (default 15 minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import gc
import os
import selectors
import signal
import socket
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, NoReturn

from terminal_agent import warm_client
from terminal_agent.warm_client import Lines, peer_uid_pid, send

TICK_SECONDS = 2.0  # how often an idle daemon reaps children and checks its code and socket
LOG_MAX_BYTES = 1_000_000


def log(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} qfix-warm[{os.getpid()}]: {message}", file=sys.stderr, flush=True)


def threads() -> int:
    """Threads of this process, native ones included (a thread pool of some library would count)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        import threading

        return threading.active_count()


def warm_up() -> None:
    """What qfix would import and load before its first request."""
    import bashlex  # noqa: F401 - imported by the first risk check otherwise (~0.2 s of parser tables)
    import openai

    import qwen_lsp.context.preload  # noqa: F401
    import terminal_agent.agent  # noqa: F401
    import terminal_agent.warm_wire  # noqa: F401
    from qwen_lsp.llm.tokens import count_tokens

    count_tokens("warm up")
    # The SDK imports its chat resources on the first request (~30 ms): here instead, with no socket opened.
    openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused").chat.completions  # noqa: B018


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m terminal_agent.warm", description=__doc__.split("\n\n")[0])
    parser.add_argument("--fingerprint", help="the code fingerprint qfix expects; another one exits at once")
    args = parser.parse_args(argv)
    os.chdir("/")  # hold no folder of the user's; imports do not depend on it (-P)
    with contextlib.suppress(OSError):
        if os.fstat(2).st_size > LOG_MAX_BYTES:
            os.ftruncate(2, 0)
    folder = warm_client.private_dir(create=True)
    code = warm_client.fingerprint()
    if args.fingerprint and args.fingerprint != code:
        log(f"my code is {code}, qfix expected {args.fingerprint}: not starting")
        return 1
    lock = os.open(warm_client.lock_path(folder, code), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0  # another daemon for this code is starting or serving
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())  # who holds it, for `qfix --warm-stop` while warming up
    path = warm_client.socket_path(folder, code)
    if len(os.fsencode(path)) > warm_client.SUN_PATH_MAX:
        return broken(folder, code, f"{path} is too long for a unix socket")
    started = time.time()
    # numpy's OpenBLAS starts a thread pool when loaded: one thread, so that the daemon may fork.
    # (The ranking's numpy work is sparse, not BLAS: the children lose nothing by it.)
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        warm_up()
    except Exception as exc:  # noqa: BLE001 - e.g. a broken install: qfix thinks in-process, as it would anyway
        traceback.print_exc()
        return broken(folder, code, f"importing the engine failed: {type(exc).__name__}: {exc}")
    if threads() != 1:
        return broken(folder, code, f"{threads()} threads after importing the engine: forking could deadlock")
    # What the imports made stays out of the collector's reach: a child's collections would otherwise
    # touch (and so copy) every page of it, tokenizer tables included, on its way to the first request.
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path.unlink(missing_ok=True)  # a dead daemon's (we hold the lock)
    mask = os.umask(0o177)
    try:
        listener.bind(os.fspath(path))
    finally:
        os.umask(mask)
    listener.listen(16)
    daemon = Daemon(listener, lock, code, path, started)
    log(f"serving {path} (code {code}, idle limit {daemon.idle_limit:g} s, warm-up {time.time() - started:.2f} s)")
    try:
        daemon.serve()
    finally:
        if daemon.owns_socket():
            path.unlink(missing_ok=True)
        listener.close()
    return 0


def broken(folder: Path, code: str, why: str) -> int:
    """This code cannot be served: say so once, for the log and for qfix (which stops starting daemons)."""
    log(f"not serving: {why}")
    warm_client.broken_path(folder, code).write_text(why + "\n")
    return 1


class Daemon:
    def __init__(self, listener: socket.socket, lock: int, code: str, path: Path, started: float) -> None:
        self.listener, self.lock, self.code, self.path, self.started = listener, lock, code, path, started
        self.inode = os.stat(path).st_ino
        self.idle_limit = warm_client.idle_seconds()
        self.children: set[int] = set()
        self.served = 0
        self.stopping = False
        self.quiet_since = time.monotonic()

    def owns_socket(self) -> bool:
        try:
            return os.stat(self.path).st_ino == self.inode
        except OSError:
            return False

    def serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self.listener, selectors.EVENT_READ)
        while not self.stopping:
            if selector.select(TICK_SECONDS):
                try:
                    conn, _ = self.listener.accept()
                except OSError as exc:  # e.g. out of file descriptors: the client thinks in-process
                    log(f"accept failed: {exc}")
                    time.sleep(0.1)
                    continue
                try:
                    self.handle(conn)
                except (OSError, ValueError) as exc:
                    log(f"connection dropped: {exc}")
                finally:
                    conn.close()
                self.quiet_since = time.monotonic()
            self.reap()
            if self.children:
                self.quiet_since = time.monotonic()
            if time.monotonic() - self.quiet_since > self.idle_limit:
                log("idle: exiting")
                return
            if not self.owns_socket():
                log("my socket was removed or replaced: exiting")
                return
            if warm_client.fingerprint() != self.code:
                log("the code changed since I imported it: exiting (the next qfix starts a new daemon)")
                return

    def reap(self) -> None:
        for pid in list(self.children):
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG)[0] == 0:
                    continue
            self.children.discard(pid)

    def status(self) -> dict[str, Any]:
        return {"kind": "status", "pid": os.getpid(), "fingerprint": self.code, "started": self.started,
                "idle_seconds": round(time.monotonic() - self.quiet_since, 3), "idle_limit": self.idle_limit,
                "served": self.served, "thinking": sorted(self.children), "stopping": self.stopping}

    def handle(self, conn: socket.socket) -> None:
        from pydantic import ValidationError

        from terminal_agent.warm_wire import Hello, Request

        conn.settimeout(2.0)  # a client says what it wants at once; a silent one must not stall the daemon
        uid, _pid = peer_uid_pid(conn)
        if uid != os.getuid():
            log(f"refused a connection from uid {uid}")
            return
        lines = Lines(conn)
        try:
            request = Request.validate_python(lines.next())
        except ValidationError as exc:
            log(f"malformed request: {exc.error_count()} errors")
            return
        if not isinstance(request, Hello):
            self.stopping = request.kind == "stop"
            send(conn, self.status())
            return
        self.reap()
        if threads() != 1:  # never fork with threads running
            log("refused to fork: more than one thread")
            return
        pid = os.fork()
        if pid == 0:  # the child: never returns into the daemon's loop or its cleanup
            code = 1
            try:
                self.listener.close()
                os.close(self.lock)
                code = Child(conn, lines, request).run()
            except BaseException:  # noqa: BLE001 - logged; the client falls back to thinking itself
                traceback.print_exc()
            finally:
                os._exit(code)
        self.children.add(pid)
        self.served += 1


class Child:
    """One fix, in a forked child, for one client."""

    def __init__(self, conn: socket.socket, lines: Lines, hello: Any) -> None:
        self.conn, self.lines, self.hello = conn, lines, hello

    def run(self) -> int:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)
        os.environ.clear()
        os.environ.update(self.hello.env)
        os.umask(self.hello.umask)
        tempfile.tempdir = None  # found again from the client's TMPDIR
        try:
            os.chdir(self.hello.cwd)
        except OSError as exc:
            return self.reply_error("failed", f"cannot enter {self.hello.cwd}: {exc}")
        return asyncio.run(self.serve())

    async def serve(self) -> int:
        from qwen_lsp.context.preload import preload
        from qwen_lsp.engine.loop import Engine
        from qwen_lsp.journal import JOURNAL
        from qwen_lsp.settings import load_settings_lenient
        from terminal_agent import agent, undo
        from terminal_agent.warm_wire import FailureMessage

        # While the client's command runs, what does not depend on the failure: the workspace's
        # context (on a thread) and the engine with the server's model info.
        early = agent.find_workspace(Path(self.hello.cwd))
        early_settings = load_settings_lenient(early)[0]
        preloaded = asyncio.ensure_future(asyncio.to_thread(preload, early, early_settings))
        engine = Engine(early_settings)
        asked = asyncio.ensure_future(quietly(engine.client.info()))  # think asks again if this failed

        raw = await self.next_message()
        if raw is None:  # the command passed, or qfix stopped: nothing to think about
            gone()
        message = FailureMessage.model_validate(raw)
        cwd = Path(message.cwd)
        workspace = Path(message.workspace) if message.workspace else agent.find_workspace(cwd)
        settings = load_settings_lenient(workspace)[0]  # as qfix loads them (it compares them with its own)
        await asyncio.gather(preloaded, asked)
        if (workspace, settings) != (early, early_settings):
            await engine.client.close()
            engine = Engine(settings)
        if (undo.journal_dir(workspace) / JOURNAL).exists():
            # A killed qfix left a write half done: qfix rolls it back before any fix reads the files.
            await engine.client.close()
            return self.reply_error("failed", "an interrupted write is pending in this workspace")
        failure = agent.Failure(command=message.command, exit_code=message.exit_code, output=message.output,
                                cwd=cwd, workspace=workspace)
        kept: list[Any] = []  # the engine that thought: a refine goes on with it
        code = await self.think(agent.think(failure, settings, self.progress, engine, kept=kept), failure, settings)
        while code is None:  # a result was sent: qfix may follow it up with a note, or close
            code = await self.follow_up(kept[0], failure, settings)
        return code

    async def follow_up(self, engine: Any, failure: Any, settings: Any) -> int | None:
        """qfix's next message after a result: a note to refine it with (Engine.refine, append-only,
        answered as the fix was), or EOF once qfix needs this fix no more."""
        from qwen_lsp.llm.client import ModelClient
        from terminal_agent.warm_wire import RefineMessage

        raw = await self.next_message()
        if raw is None:
            return 0
        message = RefineMessage.model_validate(raw)

        async def refining() -> Any:
            engine.client = ModelClient(settings)  # the fix's client closed with it (agent.think)
            try:
                return await engine.refine(message.fix_id, message.note, progress=self.progress)
            finally:
                await engine.client.close()

        return await self.think(refining(), failure, settings)

    async def next_message(self) -> dict[str, Any] | None:
        """The client's next line, read without blocking the loop; the socket is blocking again after."""
        loop = asyncio.get_running_loop()
        self.conn.setblocking(False)
        try:
            while b"\n" not in self.lines.buffer:
                chunk = await loop.sock_recv(self.conn, 1 << 16)
                if not chunk:
                    return None
                self.lines.buffer += chunk
            return self.lines.next()
        finally:
            self.conn.setblocking(True)

    async def think(self, thinking: Any, failure: Any, settings: Any) -> int | None:
        """Run `thinking` (a fix or a refine) and send its result: None then (the connection stays open
        for a follow-up), else the child's exit code once an error was sent."""
        from qwen_lsp.llm.client import ModelServerError, RequestRejected, ServerBusy, StreamBroken

        task = asyncio.ensure_future(thinking)
        loop = asyncio.get_running_loop()

        # qfix sends nothing more until it has the answer: the socket turns readable only at EOF (Ctrl-C, qfix gone).
        def client_left() -> None:
            loop.remove_reader(self.conn.fileno())
            task.cancel()

        loop.add_reader(self.conn.fileno(), client_left)
        try:
            result = await task
        except asyncio.CancelledError:  # the fix's requests and sandboxed runs are stopped by now
            log(f"client {self.hello.client_pid} left: fix cancelled")
            gone()
        except RequestRejected as exc:
            return self.reply_error("rejected", str(exc))
        except ServerBusy as exc:
            return self.reply_error("busy", str(exc))
        except StreamBroken as exc:
            return self.reply_error("stream_broken", str(exc))
        except ModelServerError as exc:
            return self.reply_error("model_server", str(exc))
        except Exception as exc:  # noqa: BLE001 - qfix thinks again itself and reports it as it would
            traceback.print_exc()
            return self.reply_error("failed", f"{type(exc).__name__}: {exc}")
        finally:
            loop.remove_reader(self.conn.fileno())
        send(self.conn, {"kind": "result", "result": result.model_dump(mode="json"),
                         "workspace": str(failure.workspace), "settings": settings.model_dump(mode="json")})
        return None

    def progress(self, phase: str) -> None:
        with contextlib.suppress(OSError):  # a client gone is seen as EOF by the reader
            send(self.conn, {"kind": "progress", "phase": phase})

    def reply_error(self, kind: str, message: str) -> int:
        with contextlib.suppress(OSError):
            send(self.conn, {"kind": "error", "error": kind, "message": message})
        return 0 if kind != "failed" else 1


def gone() -> NoReturn:
    """The client left: end at once, without waiting for a preload or an assembly still on its thread
    (a snapshot half written there is swept by context/snapshot.py)."""
    os._exit(0)


async def quietly(work: Any) -> None:
    with contextlib.suppress(Exception):
        await work


if __name__ == "__main__":
    sys.exit(main())
