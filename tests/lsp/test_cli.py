"""`qwen-lsp` command line: --version, and --tcp for debugging."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

from qwen_lsp import __version__
from qwen_lsp.cli import build_parser
from tests.net import free_port

SERVER = [sys.executable, "-m", "qwen_lsp.cli"]


def test_version():
    out = subprocess.run([*SERVER, "--version"], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"qwen-lsp {__version__}"


def test_no_arguments_means_stdio():
    args = build_parser().parse_args([])
    assert args.tcp is False and args.handler.__name__ == "serve"


def rpc(sock: socket.socket, message: dict) -> None:
    body = json.dumps(message).encode()
    sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)


def read_message(stream) -> dict:
    length = 0
    while (line := stream.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(stream.read(length))


def test_tcp_serves_lsp_on_localhost(tmp_path):
    port = free_port()
    proc = subprocess.Popen([*SERVER, "--tcp", "--port", str(port)], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=30)
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.1)
        with sock, sock.makefile("rb") as stream:
            rpc(sock, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {},
                "initializationOptions": {"cacheDir": str(tmp_path / "c")}}})
            reply = read_message(stream)
            caps = reply["result"]["capabilities"]
            assert reply["result"]["serverInfo"] == {"name": "qwen-lsp", "version": __version__}
            assert caps["codeActionProvider"]["resolveProvider"] is True
            assert caps["textDocumentSync"]["change"] == 2  # incremental
            assert caps["workspace"]["workspaceFolders"] == {"supported": True, "changeNotifications": True}
            assert set(caps["executeCommandProvider"]["commands"]) == {
                "qwen.server.ask", "qwen.server.explain", "qwen.server.fix", "qwen.server.review",
                "qwen.server.fixInBackground", "qwen.server.refine", "qwen.server.doComments"}
            rpc(sock, {"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
            assert read_message(stream)["id"] == 2
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _stopped_by_one_ctrl_c(args: list[str], ready: str) -> str:
    """`qwen-lsp ARGS` started by hand in a terminal: its banner, then one Ctrl-C once it serves."""
    import pexpect

    child = pexpect.spawn(SERVER[0], [*SERVER[1:], "--log-level", "INFO", *args], encoding="utf-8", timeout=60)
    child.expect("qwen-lsp .*: the Qwen language server")
    child.expect(ready)
    child.sendintr()
    child.expect(pexpect.EOF, timeout=20)  # the first Ctrl-C is enough
    child.close()
    assert child.exitstatus == 130 and child.signalstatus is None
    return child.before


def test_stdio_by_hand_says_what_it_is_and_stops_on_the_first_ctrl_c():
    out = _stopped_by_one_ctrl_c([], "Starting async IO server")
    assert "qwen-lsp: stopped" in out and "Traceback" not in out and "Fatal Python error" not in out


def test_tcp_by_hand_says_where_it_listens_and_stops_on_the_first_ctrl_c():
    port = free_port()
    out = _stopped_by_one_ctrl_c(["--tcp", "--port", str(port)], "Starting TCP server|Serving")
    assert "qwen-lsp: stopped" in out and "Traceback" not in out


def test_an_editor_on_stdio_gets_no_banner():
    run = subprocess.run([*SERVER], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert "the Qwen language server" not in run.stderr
