"""Warm processes do not pile up (issue 35, item 10): scripts that run qfix with fresh state each time
start none; runs in a terminal share one per user and code whatever their state folder; and a user
has at most QFIX_WARM_MAX of them. Every daemon a test starts is found by a tag in its environment
(it inherits qfix's) and killed afterwards."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.qfix.conftest import qfix_env, repo  # noqa: F401 - fixtures
from tests.qfix.helpers import QFIX, finish, spawn


def daemons(tag: str) -> list[int]:
    """Live warm processes started with `tag` in their environment."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if b"terminal_agent.warm" in (proc / "cmdline").read_bytes() and tag.encode() in (proc / "environ").read_bytes():
                if (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    found.append(int(proc.name))
        except OSError:
            continue
    return found


def settled(tag: str, seconds: float = 4.0) -> list[int]:
    """The daemons once those still starting have served or given way (a duplicate for a code whose lock
    is taken exits at once)."""
    time.sleep(seconds)
    return daemons(tag)


@pytest.fixture
def env(qfix_env, tmp_path) -> Iterator[dict[str, str]]:  # noqa: F811
    """qfix's environment with the warm process left to its default (no QFIX_WARM), a short warm folder
    of this test's own, and a tag to find the daemons by."""
    warm_dir = Path(tempfile.mkdtemp(prefix="qp-", dir="/tmp"))
    tag = "qwen-pileup-" + uuid.uuid4().hex
    env = {k: v for k, v in qfix_env.items() if k != "QFIX_WARM"}
    env |= {"QFIX_WARM_DIR": str(warm_dir / "warm"), "QFIX_WARM_IDLE": "60", "QFIX_TEST_TAG": tag}
    yield env
    for pid in daemons(tag):
        try:
            os.killpg(pid, signal.SIGKILL)  # the daemon leads its session: its children go with it
        except (ProcessLookupError, PermissionError):
            pass
    shutil.rmtree(warm_dir, ignore_errors=True)


def fresh_state(env: dict[str, str], tmp_path: Path, n: int) -> dict[str, str]:
    return {**env, "QFIX_STATE_DIR": str(tmp_path / f"state-{n}")}


def test_scripts_with_fresh_state_start_no_warm_process(repo, env, tmp_path):  # noqa: F811
    for n in range(5):  # as CI or an editor integration runs it: no terminal, a new state folder each time
        run = subprocess.run([QFIX, "--yes", "--", "python", "-c", "pass"], cwd=repo, env=fresh_state(env, tmp_path, n),
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert run.returncode == 0, run.stderr
    assert settled(env["QFIX_TEST_TAG"]) == []


def test_terminal_runs_with_fresh_state_share_one_warm_process(repo, env, tmp_path):  # noqa: F811
    for n in range(3):  # in a terminal (stdin and stderr a tty), each with a state folder of its own
        child = spawn(["--", "python", "-c", "pass"], fresh_state(env, tmp_path, n), repo)
        assert finish(child) == 0
        time.sleep(1.0)
    assert len(settled(env["QFIX_TEST_TAG"])) == 1
    status = subprocess.run([QFIX, "--warm-status"], env=fresh_state(env, tmp_path, 9), capture_output=True, text=True,
                            timeout=30).stdout
    assert "(this qfix's code)" in status, status  # another state folder finds the same one


def test_a_user_has_at_most_warm_max_of_them(repo, env, tmp_path):  # noqa: F811
    folder = Path(env["QFIX_WARM_DIR"])
    folder.mkdir(mode=0o700, parents=True)
    held = []
    for code in ("0000000000000000", "1111111111111111"):  # two live daemons of other checkouts, as their locks say
        fd = os.open(folder / f"qfix-{code}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, f"{os.getpid()}\n".encode())
        held.append(fd)
    try:
        child = spawn(["--", "python", "-c", "pass"], {**env, "QFIX_WARM_MAX": "2"}, repo)
        assert finish(child) == 0
        assert settled(env["QFIX_TEST_TAG"]) == []
        child = spawn(["--", "python", "-c", "pass"], {**env, "QFIX_WARM_MAX": "3"}, repo)
        assert finish(child) == 0
        assert len(settled(env["QFIX_TEST_TAG"])) == 1
    finally:
        for fd in held:
            os.close(fd)
