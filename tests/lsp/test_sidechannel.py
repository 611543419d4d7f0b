"""The Unix-socket side channel: `qfix` -> running server -> editor diagnostics."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

from qwen_lsp.lsp.convert import file_uri
from qwen_lsp.wire import TerminalOutput
from qwen_lsp.sidechannel import Listener, frame, notify_running_server, socket_path
from tests.lsp.helpers import name_error_output, wait_until


def params(root: Path) -> dict:
    return {"command": "python main.py", "exitCode": 1, "output": name_error_output(root), "cwd": str(root)}


async def test_qfix_output_reaches_the_editor_through_the_running_server(lsp, project, cache_dir):
    path = socket_path(project, cache_dir)
    await wait_until(path.exists, what="the socket")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    sub = project / "pkg"
    sub.mkdir()
    sent = await asyncio.to_thread(notify_running_server, sub, cache_dir, params(project))  # found from a subdirectory
    assert sent is True
    (diag,) = await wait_until(lambda: lsp.diagnostics.get(file_uri(project, "main.py")))
    assert diag.range.start.line == 2 and diag.source == "qwen"


def test_no_running_server_is_not_an_error(tmp_path):
    assert notify_running_server(tmp_path, tmp_path / "cache", params(tmp_path)) is False


def test_socket_paths_are_per_workspace_and_fit_the_address_limit(tmp_path):
    a, b = socket_path(tmp_path / "a", tmp_path), socket_path(tmp_path / "b", tmp_path)
    assert a != b and a.parent == tmp_path / "run" and a.suffix == ".sock"
    deep = tmp_path / ("d" * 120)
    long = socket_path(tmp_path / "a", deep)
    assert len(str(long)) <= 103 and long != socket_path(tmp_path / "a", deep / "x")


async def test_the_listener_takes_terminal_output_only(tmp_path):
    got: list[TerminalOutput] = []
    listener = Listener(socket_path(tmp_path, tmp_path / "c"), got.append)
    assert await listener.start()
    try:
        _reader, writer = await asyncio.open_unix_connection(str(listener.path))
        writer.write(frame("qwen/other", {"x": 1}))
        writer.write(frame("qwen/terminalOutput", {"command": "make", "exitCode": 2, "output": "boom", "cwd": "/w"}))
        await writer.drain()
        writer.close()
        await wait_until(lambda: got, what="the notification")
        assert got == [TerminalOutput(command="make", exit_code=2, output="boom", cwd="/w")]
        assert not await Listener(listener.path, got.append).start()  # a second server does not steal it
    finally:
        listener.close()
    assert not listener.path.exists()
