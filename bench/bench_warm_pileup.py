"""How many warm processes `qfix` leaves behind when run many times with a fresh state folder each
time (issue 35, item 10): as a script runs it (no terminal), and in a terminal (a pty on stdin and
stderr). Each run is `qfix --yes -- python -c pass` (the warm process is started, or not, at qfix's
start, before the command runs). Figures only, no pass/fail; every warm process found is killed.

    python bench/bench_warm_pileup.py [--runs 50] [--tty-runs 5] [--qfix PATH]

Warm processes are counted by a tag in their environment (they inherit qfix's) and by their memory.
"""

from __future__ import annotations

import argparse
import os
import pty
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from figures import figure  # bench/figures.py


def warm_processes(tag: str) -> dict[int, int]:
    """pid -> resident KiB of every live warm process started with `tag` in its environment."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if b"terminal_agent.warm" not in (proc / "cmdline").read_bytes() or tag.encode() not in (proc / "environ").read_bytes():
                continue
            status = (proc / "status").read_text()
        except OSError:
            continue
        if "\nState:\tZ" in status:
            continue
        rss = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
        found[int(proc.name)] = rss
    return found


def in_pty(argv: list[str], env: dict[str, str], cwd: Path) -> int:
    """Run `argv` with a pty as its stdin, stdout and stderr (as in a terminal); its exit code."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        os.execve(argv[0], argv, env)
    while True:
        try:
            if not os.read(fd, 65536):
                break
        except OSError:
            break
    os.close(fd)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="script runs (no terminal)")
    parser.add_argument("--tty-runs", type=int, default=5, help="runs in a terminal (pty)")
    parser.add_argument("--qfix", default=str(Path(sys.executable).parent / "qfix"))
    args = parser.parse_args()
    tag = "qwen-bench-pileup-" + uuid.uuid4().hex
    with tempfile.TemporaryDirectory(prefix="qwp-", dir="/tmp") as tmp:
        root = Path(tmp)
        work = root / "work"
        work.mkdir()
        base = {k: v for k, v in os.environ.items() if k not in ("QFIX_WARM", "QFIX_STATE_DIR", "QFIX_WARM_DIR")}
        # The warm sockets' folder: the real per-user default, but a fresh one, so that this counts only ours.
        base |= {"QFIX_WARM_DIR": str(root / "warm"), "QFIX_WARM_IDLE": "120", "QFIX_TEST_TAG": tag,
                 "QWEN_LSP_CACHE_DIR": str(root / "cache"), "QWEN_LSP_BASE_URL": "http://127.0.0.1:9/v1"}
        try:
            for mode, runs in (("script", args.runs), ("terminal", args.tty_runs)):
                started = time.perf_counter()
                for n in range(runs):
                    env = {**base, "QFIX_STATE_DIR": str(root / f"{mode}-state-{n}")}
                    argv = [args.qfix, "--yes", "--", sys.executable, "-c", "pass"]
                    if mode == "script":
                        subprocess.run(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
                    else:
                        in_pty(argv, env, work)
                seconds = time.perf_counter() - started
                time.sleep(5)  # a duplicate started meanwhile gives way; one warming up finishes
                found = warm_processes(tag)
                mib = sum(found.values()) / 1024
                print(f"{mode}: {runs} runs of `qfix --yes` with fresh state folders ({seconds:.1f} s): "
                      f"{len(found)} warm process(es) left, {mib:.0f} MiB resident")
                figure(f"warm processes left after {runs} {mode} runs", len(found), "processes")
        finally:
            for pid in warm_processes(tag):
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


if __name__ == "__main__":
    main()
