"""Side channel for terminal tools: a running server listens on a Unix socket per
workspace so `qfix` (or a shell hook) can make the editor show the same
diagnostics it would show for `qwen/terminalOutput` from the editor's own terminal.

Socket: where qwen_lsp.runpaths says (under `<cache_dir>/run/`), mode 0600.
Its directory must be ours and private (0700): both ends check that on every use and refuse
otherwise, since a directory another local user created could hold their socket.
Messages: LSP-framed JSON-RPC notifications (`Content-Length: N\\r\\n\\r\\n{json}`);
only `qwen/terminalOutput` is accepted, nothing is ever answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from qwen_lsp.runpaths import socket_path
from qwen_lsp.wire import TERMINAL_OUTPUT, TerminalOutput

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 32 * 1024 * 1024  # terminal output is big at worst, never this big


class UnsafeSocketDir(PermissionError):
    """The socket's directory is not a private directory of this user."""


def private_dir(directory: Path, *, create: bool) -> bool:
    """Check (and with `create`, make) `directory` as a 0700 directory owned by us.

    False when it does not exist and `create` is off. Raises UnsafeSocketDir when it is a
    symlink, not a directory, someone else's, or open to group/others."""
    if create:
        directory.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=0o700)
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        return False
    problem = None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        problem = "not a plain directory"
    elif st.st_uid != os.getuid():
        problem = f"owned by uid {st.st_uid}, not by you (uid {os.getuid()})"
    elif stat.S_IMODE(st.st_mode) & 0o077:
        problem = f"mode {stat.S_IMODE(st.st_mode):04o}, open to other users (must be 0700)"
    if problem:
        raise UnsafeSocketDir(
            f"refusing the qwen-lsp socket directory {directory}: it is {problem}, so another user could "
            f"intercept what qfix sends. Remove it (or `chmod 700` it if it is yours) and try again."
        )
    return True


def frame(method: str, params: Any) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "method": method, "params": params}, ensure_ascii=False).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def notify_running_server(
    workspace: Path, cache_dir: Path, params: TerminalOutput | Mapping[str, Any], *, timeout: float = 1.0
) -> bool:
    """Send `qwen/terminalOutput` to the server running for `workspace` (or for the nearest
    enclosing directory that has one, since an editor may have opened a parent folder).

    `params` is a TerminalOutput or a dict with `command`, `exitCode` (or `exit_code`),
    `output`, `cwd` (absolute). Returns True once the notification was delivered to a
    listening server, False when none is running (nothing is raised for that)."""
    payload = params if isinstance(params, TerminalOutput) else TerminalOutput.model_validate(dict(params))
    data = frame(TERMINAL_OUTPUT, payload.dump())
    start = Path(os.path.abspath(workspace))
    for directory in (start, *start.parents):
        path = socket_path(directory, cache_dir)
        try:
            if not private_dir(path.parent, create=False) or not path.exists():
                continue
        except UnsafeSocketDir as exc:
            log.warning("%s", exc)
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(timeout)
                sock.connect(str(path))
                sock.sendall(data)
            return True
        except OSError:  # a stale socket left by a crashed server: keep looking
            continue
    return False


async def read_message(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """One LSP-framed JSON message; None at end of stream."""
    length: int | None = None
    while True:
        line = await reader.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    if length is None or not 0 <= length <= MAX_MESSAGE_BYTES:
        raise ValueError(f"bad Content-Length: {length}")
    message = json.loads(await reader.readexactly(length))
    if not isinstance(message, dict):
        raise ValueError("not a JSON-RPC message")
    return message


async def _alive(path: Path) -> bool:
    try:
        _reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(str(path)), 1.0)
    except (OSError, asyncio.TimeoutError):
        return False
    writer.close()
    return True


class Listener:
    """The server end for one workspace. `on_terminal_output` runs on the server's loop."""

    def __init__(self, path: Path, on_terminal_output: Callable[[TerminalOutput], None]) -> None:
        self.path = path
        self.on_terminal_output = on_terminal_output
        self._server: asyncio.AbstractServer | None = None
        self._inode: int | None = None

    async def start(self) -> bool:
        """Listen; False when another live server already owns the socket (first one wins)."""
        private_dir(self.path.parent, create=True)  # raises UnsafeSocketDir (an OSError)
        if self.path.exists() or self.path.is_symlink():
            if await _alive(self.path):
                log.info("another qwen-lsp already listens on %s", self.path)
                return False
            self.path.unlink(missing_ok=True)  # left behind by a server that crashed
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.path))
        os.chmod(self.path, 0o600)  # other users must not inject diagnostics
        self._inode = self.path.stat().st_ino
        return True

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while (message := await read_message(reader)) is not None:
                if message.get("method") != TERMINAL_OUTPUT or "id" in message:
                    log.warning("side channel: ignoring %r", message.get("method"))
                    continue
                try:
                    params = TerminalOutput.model_validate(message.get("params"))
                except ValueError as exc:
                    log.warning("side channel: bad params: %s", exc)
                    continue
                self.on_terminal_output(params)
        except (ValueError, asyncio.IncompleteReadError, ConnectionError) as exc:
            log.warning("side channel: dropped a connection: %s", exc)
        finally:
            writer.close()

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        # Only remove the socket if it is still ours (a newer server may have replaced it).
        with contextlib.suppress(OSError):
            if self._inode is not None and self.path.stat().st_ino == self._inode:
                self.path.unlink()
        self._inode = None
