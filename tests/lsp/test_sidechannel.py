"""The Unix-socket side channel: `qfix` -> running server -> editor diagnostics."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from qwen_lsp.lsp.convert import file_uri
from qwen_lsp.wire import TerminalOutput
from qwen_lsp.sidechannel import Listener, UnsafeSocketDir, frame, notify_running_server, socket_path
from tests.lsp.helpers import name_error_output, wait_until


@pytest.fixture
def tmp_path():
    """A short folder instead of pytest's: a socket's path must fit AF_UNIX's 108 bytes, and these
    tests build theirs under it (pytest-xdist's folders are ~20 characters longer)."""
    folder = Path(tempfile.mkdtemp(prefix="qsc-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


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


def _fallback_socket(tmp_path: Path, monkeypatch) -> Path:
    """A socket path in the per-user temp directory (the cache dir is too deep for a socket address)."""
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    path = socket_path(tmp_path / "ws", tmp_path / ("d" * 120))
    assert path.parent == tmp_path / "tmp" / f"qwen-lsp-{os.getuid()}"
    return path


async def _squatter(path: Path) -> tuple[asyncio.AbstractServer, list[bytes]]:
    """Another user's listener waiting in a directory they pre-created."""
    received: list[bytes] = []

    async def take(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.append(await reader.read())
        writer.close()

    return await asyncio.start_unix_server(take, path=str(path)), received


async def test_a_fallback_directory_open_to_others_is_refused_by_both_ends(tmp_path, monkeypatch, caplog):
    path = _fallback_socket(tmp_path, monkeypatch)
    path.parent.mkdir(mode=0o777)
    os.chmod(path.parent, 0o777)  # pre-created by someone else, world-writable
    squatter, received = await _squatter(path)
    try:
        sent = await asyncio.to_thread(notify_running_server, tmp_path / "ws", tmp_path / ("d" * 120), params(tmp_path))
        assert sent is False and "mode 0777" in caplog.text and "refusing" in caplog.text
        await asyncio.sleep(0.2)
        assert received == []  # the command and its output never reached the other socket
        with pytest.raises(UnsafeSocketDir, match="must be 0700"):
            await Listener(tmp_path / "tmp" / f"qwen-lsp-{os.getuid()}" / "x.sock", lambda _p: None).start()
    finally:
        squatter.close()


@pytest.mark.skipif(os.getuid() != 0, reason="changing a directory's owner needs root")
async def test_a_fallback_directory_owned_by_another_user_is_refused(tmp_path, monkeypatch, caplog):
    path = _fallback_socket(tmp_path, monkeypatch)
    path.parent.mkdir(mode=0o700)
    squatter, received = await _squatter(path)
    os.chown(path.parent, 65534, 65534)  # nobody's directory, with nobody's socket in it
    try:
        sent = await asyncio.to_thread(notify_running_server, tmp_path / "ws", tmp_path / ("d" * 120), params(tmp_path))
        assert sent is False and "owned by uid 65534" in caplog.text
        await asyncio.sleep(0.2)
        assert received == []
    finally:
        squatter.close()


async def test_the_fallback_directory_is_created_private_and_used(tmp_path, monkeypatch):
    path = _fallback_socket(tmp_path, monkeypatch)
    got: list[TerminalOutput] = []
    listener = Listener(path, got.append)
    assert await listener.start()
    try:
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        sent = await asyncio.to_thread(notify_running_server, tmp_path / "ws", tmp_path / ("d" * 120), params(tmp_path))
        assert sent is True
        await wait_until(lambda: got, what="the notification")
    finally:
        listener.close()


def test_xdg_runtime_dir_comes_first(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    assert socket_path(tmp_path / "ws", tmp_path / ("d" * 120)).parent == tmp_path / "run" / "qwen-lsp"
