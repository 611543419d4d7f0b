"""Fixtures for qfix: a temp git repo with a failing script, an environment that points
qfix at the vLLM test double, and the shells a test opens (closed after it). The editor
tests also use the language-server fixtures (the tests.lsp.fixtures plugin)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.qfix.helpers import BIN, BUGGY, Shell, git
from tests.vllm_double import VLLMDouble


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository whose script.py fails with a NameError."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "script.py").write_text(BUGGY)
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-qm", "init")
    return root


@pytest.fixture
def qfix_env(tmp_path: Path, vllm: VLLMDouble) -> dict[str, str]:
    """The environment of a qfix process: the double's URL, temp cache and state dirs."""
    home = tmp_path / "home"
    home.mkdir()
    return {
        "PATH": f"{BIN}{os.pathsep}/usr/bin:/bin",
        "HOME": str(home),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "QWEN_LSP_BASE_URL": vllm.base_url,
        "QWEN_LSP_CACHE_DIR": str(tmp_path / "cache"),
        "QWEN_LSP_MAX_RETRIES": "0",
        "QFIX_STATE_DIR": str(tmp_path / "state"),
        "PYTHONDONTWRITEBYTECODE": "1",
        # A worktree's tests run that tree's code in qfix processes too, not the venv's install.
        **{k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "QFIX_WARM", "QFIX_WARM_DIR")},
    }


@pytest.fixture
def shells() -> Iterator[list[Shell]]:
    """Shells started by a test are closed after it."""
    opened: list[Shell] = []
    yield opened
    for shell in opened:
        try:
            shell.close()
        except Exception:  # noqa: BLE001 - a test failure may leave it mid-command
            shell.child.terminate(force=True)
