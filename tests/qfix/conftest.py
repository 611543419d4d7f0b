"""Fixtures for qfix: a temp git repo with a failing script, an environment that
points qfix at the vLLM test double, and real shells driven in a pty (pexpect)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from tests.lsp.conftest import cache_dir, client_config, lsp, project, server_options  # noqa: F401 - test_editor.py
from tests.vllm_double import Reply, VLLMDouble

BIN = Path(sys.executable).parent  # the venv's bin: python, pytest and the qfix console script
QFIX = str(BIN / "qfix")
PROMPT = "QFIX-PROMPT$ "
PROMPT_RE = re.escape(PROMPT)

BUGGY = 'def greet(name):\n    return "Hello, " + nme\n\n\nprint(greet("world"))\n'
FIXED = BUGGY.replace("+ nme", "+ name")
PLAN = {"hypotheses": ["greet() uses the undefined name nme"], "evidence": [], "steps": ["use name in greet"],
        "verify_command": None}


def fix_replies(path: str = "script.py", old: str = '"Hello, " + nme', new: str = '"Hello, " + name',
                *, with_plan: bool = True) -> list[Reply]:
    """What Qwen would answer for the typo: a thinking plan, then read, edit, finish."""
    replies = [Reply(reasoning="nme is a typo of the parameter name", content=json.dumps(PLAN))] if with_plan else []
    return replies + [
        Reply(tool_calls=[("read_file", {"path": path})]),
        Reply(tool_calls=[("edit_file", {"path": path, "old_string": old, "new_string": new})]),
        Reply(tool_calls=[("finish", {"summary": "greet() now uses its parameter"})]),
    ]


def suggestion_replies(command: str, reason: str = "needed") -> list[Reply]:
    return [
        Reply(reasoning="a shell command is needed", content=json.dumps(PLAN)),
        Reply(tool_calls=[("suggest_command", {"command": command, "reason": reason})]),
        Reply(tool_calls=[("finish", {"summary": "run the suggested command"})]),
    ]


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


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
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),  # the tree under test
    }


class Shell:
    """An interactive shell in a pty with a known prompt."""

    def __init__(self, name: str, env: dict[str, str], cwd: Path, *, integrate: bool = True) -> None:
        if shutil.which(name) is None:
            pytest.skip(f"{name} is not installed")
        self.name = name
        argv = {
            "bash": ["bash", "--norc", "--noprofile", "-i"],
            "zsh": ["zsh", "-f", "-i"],
            "fish": ["fish", "--no-config", "-i", "-C", f"function fish_prompt; printf '%s' '{PROMPT}'; end"],
        }[name]
        env = {**env, "PS1": PROMPT, "PROMPT": PROMPT, "SHELL": shutil.which(name) or name}
        self.child = pexpect.spawn(argv[0], argv[1:], cwd=str(cwd), env=env, encoding="utf-8", timeout=60,
                                   dimensions=(40, 200))
        self.expect_prompt()
        if integrate:
            self.run(f"{QFIX} init fish | source" if name == "fish" else f'eval "$({QFIX} init {name})"')

    def expect_prompt(self, timeout: float = 60) -> str:
        self.child.expect(PROMPT_RE, timeout=timeout)
        return self.child.before

    def run(self, line: str, timeout: float = 60) -> str:
        """Type `line`, wait for the next prompt; what was printed in between."""
        self.child.sendline(line)
        return self.expect_prompt(timeout)

    def status(self) -> int:
        out = self.run("echo status=$status" if self.name == "fish" else "echo status=$?")
        return int(re.search(r"status=(\d+)", out).group(1))

    def close(self) -> None:
        self.child.sendline("exit")
        self.child.expect(pexpect.EOF, timeout=10)
        self.child.close()


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


def record_of(state_dir: Path) -> dict:
    """The one shell record written under `state_dir`."""
    files = sorted((state_dir / "sessions").glob("*.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text(), strict=False)
