"""Runs an editor test suite as a child process group, so nothing it started outlives it."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TAIL = 12_000  # characters of output shown when a suite fails


def run_suite(args: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float) -> str:
    """Runs `args`; returns its output, or fails the test with the output's end."""
    proc = subprocess.Popen(
        args,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: killed as a whole below
    )
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        output, _ = proc.communicate()
        raise AssertionError(f"{' '.join(args)} timed out after {timeout:.0f} s\n{output[-TAIL:]}") from None
    finally:
        _kill_group(proc.pid)  # e.g. a vLLM double left behind by a crashed editor
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {proc.returncode}\n{output[-TAIL:]}")
    return output


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
