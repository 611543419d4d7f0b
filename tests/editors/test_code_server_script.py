"""scripts/code-server keeps the machine's npm configuration: its `npm install --prefix DIR` would
otherwise read the global npmrc from DIR/etc/npmrc and lose the machine's (cafile, strict-ssl, registry:
behind a TLS-intercepting proxy, SELF_SIGNED_CERT_IN_CHAIN and the real-VS-Code tier skipped)."""

from __future__ import annotations

import http.server
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from tests.editors._run import REPO

pytestmark = pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")


class _Registry(http.server.BaseHTTPRequestHandler):
    """An npm registry that knows no package, and remembers what it was asked."""

    asked: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        self.asked.append(self.path)
        body = b'{"error":"Not found"}'
        self.send_response(404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_the_install_uses_the_registry_set_in_the_machines_global_npmrc(tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    prefix = tmp_path / "global"  # where this machine's npm keeps its global config (PREFIX/etc/npmrc)
    (prefix / "etc").mkdir(parents=True)
    (prefix / "etc" / "npmrc").write_text(f"registry=http://127.0.0.1:{server.server_port}/\n")
    (tmp_path / "home").mkdir()
    dead = "http://127.0.0.1:9"  # without the global npmrc npm goes to registry.npmjs.org: refused at once here
    env = {**os.environ, "PREFIX": str(prefix), "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "https_proxy": dead, "HTTPS_PROXY": dead, "http_proxy": dead, "HTTP_PROXY": dead, "NO_PROXY": "127.0.0.1",
           "no_proxy": "127.0.0.1", "npm_config_fetch_retries": "0"}
    try:
        run = subprocess.run(["bash", str(REPO / "scripts" / "code-server")], env=env, capture_output=True,
                             text=True, timeout=180)
    finally:
        server.shutdown()
    if "installing code-server" not in run.stderr:
        pytest.skip(f"scripts/code-server stops before installing here: {run.stderr.strip()}")
    assert run.returncode != 0  # this registry has no code-server
    assert any(path.lstrip("/").startswith("code-server") for path in _Registry.asked), (_Registry.asked, run.stderr[-2000:])
