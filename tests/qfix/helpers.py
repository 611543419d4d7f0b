"""Helpers for qfix's tests: the buggy script and the model's scripted answers, real shells
driven in a pty (pexpect), and the shell record qfix reads."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from tests.vllm_double import Reply

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


def record_of(state_dir: Path) -> dict:
    """The one shell record written under `state_dir`."""
    files = sorted((state_dir / "sessions").glob("*.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text(), strict=False)


def spawn(args: list[str], env: dict[str, str], cwd) -> pexpect.spawn:
    child = pexpect.spawn(QFIX, args, cwd=str(cwd), env=env, encoding="utf-8", timeout=90, dimensions=(40, 200))
    return child


def finish(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus if child.exitstatus is not None else 128 + child.signalstatus


def write_record(repo, env, command: str, exit_code: int, pid: int = 4242) -> dict[str, str]:
    sessions = repo.parent / "state" / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    record = {"shell": "bash", "pid": pid, "command": command, "exit_code": exit_code, "cwd": str(repo)}
    (sessions / f"{pid}.json").write_text(json.dumps(record))
    return {**env, "QFIX_SHELL_PID": str(pid), "SHELL": "/bin/bash"}
