"""The sandbox's resource limits, with real hostile commands in real bubblewrap: a memory bomb,
a fork bomb and a disk filler are each stopped by their limit within seconds and reported as
such; odd workspace contents (a FIFO, a socket, a huge file) do not break the copy; output is
kept as a bounded head and tail; qwen-lsp's cache and side-channel socket are hidden wherever
the cache directory is.

The limits are small (256 MiB of address space per process, 32 processes), so a test that went
wrong could not take the machine down."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

import pytest

from qwen_lsp.engine import sandbox, sandbox_limits
from qwen_lsp.engine.overlay import Overlay
from qwen_lsp.engine.sandbox_limits import SandboxLimits, process_limit_available
from qwen_lsp.engine.validate import HeadTail, run_verify
from qwen_lsp.runpaths import socket_path
from qwen_lsp.sidechannel import Listener, private_dir

SMALL = SandboxLimits(memory_mb=256, processes=32, file_size_mb=16, cpu_seconds=20)
PY = sys.executable


@pytest.fixture(params=["prlimit", "python"])
def launcher(request, monkeypatch):
    """Both launchers: util-linux's prlimit, and the Python one used where prlimit is missing."""
    if request.param == "python":
        monkeypatch.setattr(sandbox_limits.shutil, "which", lambda *_a, **_k: None)
    elif sandbox_limits.shutil.which("prlimit", path="/usr/bin:/bin") is None:
        pytest.skip("no prlimit here")
    return request.param


def workspace(tmp_path: Path) -> Overlay:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text("x = 1\n")
    return Overlay(root)


async def verify(overlay: Overlay, command: str, jail, limits: SandboxLimits = SMALL, **kw):
    started = time.perf_counter()
    outcome = await run_verify(overlay, command, None, 60, bwrap=jail.bwrap, limits=limits, **kw)
    return outcome, time.perf_counter() - started


async def test_a_memory_bomb_is_stopped_by_the_memory_limit(tmp_path, jail, launcher):
    bomb = f'{PY} -c "a = []\nwhile True: a.append(bytearray(16 << 20))"'
    outcome, seconds = await verify(workspace(tmp_path), bomb, jail)
    assert not outcome.ok and outcome.stopped_by == "memory", outcome.detail
    # Read from the MemoryError the limit causes (nothing else tells): said as "probably".
    assert outcome.detail.startswith("probably stopped by the sandbox's memory limit (256 MiB")
    assert seconds < 10


async def test_a_fork_bomb_is_stopped_by_the_process_limit(tmp_path, jail):
    if not process_limit_available():
        pytest.skip("running as root without a writable pids cgroup: the process limit cannot be enforced here")
    outcome, seconds = await verify(workspace(tmp_path), "bomb() { bomb | bomb & }; bomb; wait; sleep 30", jail)
    assert not outcome.ok and outcome.stopped_by == "processes", outcome.detail
    assert "process limit (32 processes)" in outcome.detail
    assert seconds < 20


async def test_as_root_the_sandbox_drops_to_a_uid_of_its_own_so_the_fork_bound_holds(tmp_path, jail, monkeypatch):
    """RLIMIT_NPROC never binds uid 0 (a user namespace mapping to it does not help): running as
    root where no pids cgroup is usable, the command runs as an unprivileged uid of that run, with
    no capability, so its forks stop at the bound; what it writes in the copy is its own."""
    if os.getuid() != 0:
        pytest.skip("not running as root: the rlimit path is tested below")
    if shutil.which("setpriv", path="/usr/bin:/bin") is None:
        pytest.skip("no setpriv here")
    monkeypatch.setattr(sandbox_limits.PidsCgroup, "create", classmethod(lambda cls, limit: None))
    count = (f"id -u > uid; grep CapEff /proc/self/status > caps; {PY} -c 'import os, time\nn = 0\n"
             "try:\n    while n < 200:\n        if os.fork() == 0: time.sleep(5); os._exit(0)\n        n += 1\n"
             "except OSError: pass\nprint(\"forked\", n)'; cat uid caps; exit 1")
    outcome, _ = await verify(workspace(tmp_path), count, jail)
    forked = int(outcome.detail.split("forked ")[1].split()[0])
    assert forked < 32, outcome.detail  # the bound (32 processes, the shell and python included)
    uid = int(outcome.detail.split("forked ")[1].split()[1])  # `cat uid` prints it after the count
    assert uid >= 1 << 30, outcome.detail
    assert "CapEff:\t0000000000000000" in outcome.detail


async def test_a_disk_filler_is_stopped_by_the_file_size_limit(tmp_path, jail, launcher):
    overlay = workspace(tmp_path)
    for filler in ("cat /dev/zero > filler", f"{PY} -c \"f = open('filler', 'wb')\nwhile True: f.write(bytes(1 << 20))\""):
        outcome, seconds = await verify(overlay, filler, jail)
        assert not outcome.ok and outcome.stopped_by == "file size", outcome.detail
        assert "file size limit (16 MiB per file)" in outcome.detail and seconds < 10
    assert not (overlay.root / "filler").exists()


async def test_cpu_time_is_limited(tmp_path, jail, launcher):
    limits = SandboxLimits(memory_mb=256, processes=32, file_size_mb=16, cpu_seconds=1)
    outcome, seconds = await verify(workspace(tmp_path), f'{PY} -c "while True: pass"', jail, limits)
    assert not outcome.ok and outcome.stopped_by == "cpu time", outcome.detail
    assert seconds < 10


async def test_ordinary_commands_still_work_under_the_limits(tmp_path, jail, launcher):
    # Pipes end as usual (the launcher gives back the SIGPIPE Python ignores), and a few processes are fine.
    outcome, _ = await verify(workspace(tmp_path), "yes | head -n 3 && sh -c 'sh -c true' && grep -q 1 calc.py", jail)
    assert outcome.ok, outcome.detail


async def test_a_fifo_a_socket_and_a_huge_file_do_not_break_verification(tmp_path, jail):
    overlay = workspace(tmp_path)
    os.mkfifo(overlay.root / "pipe")
    (overlay.root / "sub").mkdir()
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(overlay.root / "sub" / "daemon.sock"))
    with open(overlay.root / "data.bin", "wb") as big:
        big.truncate(5_000_000)  # sparse: big to the copy, nothing on disk
    try:
        outcome, seconds = await verify(overlay, "test -f calc.py && ! test -e data.bin && ! test -e pipe", jail,
                                        copy_file_max_bytes=1_000_000)
    finally:
        listening.close()
    assert outcome.ok, outcome.detail
    assert outcome.not_copied == ["data.bin (5 MB, over the copy limit)", "pipe (a FIFO)", "sub/daemon.sock (a socket)"]
    assert seconds < 10


async def test_output_is_kept_as_a_bounded_head_and_tail(tmp_path, jail):
    command = f"echo FIRST-LINE; {PY} -c \"import sys; sys.stdout.write('x' * 30_000_000)\"; echo; echo LAST-LINE; false"
    outcome, _ = await verify(workspace(tmp_path), command, jail)
    assert not outcome.ok and outcome.detail.startswith("FIRST-LINE")
    assert outcome.detail.rstrip().endswith("LAST-LINE") and "bytes of output left out" in outcome.detail
    assert len(outcome.detail) < 6_000


def test_head_tail_keeps_only_its_bounds():
    kept = HeadTail(10, 20)
    for n in range(10_000):
        kept.feed(b"%08d\n" % n)
    assert len(kept.head) == 10 and len(kept.tail) == 20 and kept.dropped == 90_000 - 30
    assert kept.text().startswith("00000000\n0") and kept.text().endswith("09998\n00009999\n")


@pytest.fixture
def outside_cache():
    """A cache directory outside every path the sandbox hides by default (not under /tmp or a home)."""
    for parent in ("/var/cache", "/var/lib", "/srv", "/opt"):
        try:
            path = Path(tempfile.mkdtemp(prefix="qwen-lsp-test-cache-", dir=parent))
        except OSError:
            continue
        yield path
        shutil.rmtree(path, ignore_errors=True)
        return
    pytest.skip("no writable directory outside the sandbox's hidden paths")


async def test_the_cache_and_the_side_channel_are_hidden_wherever_the_cache_is(tmp_path, jail, outside_cache):
    overlay = workspace(tmp_path)
    (outside_cache / "state").mkdir()
    (outside_cache / "state" / "plan.json").write_text("{}")
    path = socket_path(overlay.root, outside_cache)
    assert outside_cache in path.parents  # short enough: the socket is in the cache directory itself
    private_dir(path.parent, create=True)
    listener = Listener(path, lambda _params: None)
    assert await listener.start()
    # Open to every uid (root's sandbox runs as a uid of its own): only hiding keeps the probe out.
    for opened, mode in ((outside_cache, 0o755), (path.parent, 0o755), (path, 0o777)):
        os.chmod(opened, mode)
    probe = (f"import os, socket; s = socket.socket(socket.AF_UNIX); print('LISTING', os.listdir({str(outside_cache)!r}));"
             f" s.connect({str(path)!r}); print('CONNECTED')")
    try:
        exposed, _ = await verify(overlay, f'{PY} -c "{probe}"; false', jail)
        hidden, _ = await verify(overlay, f'{PY} -c "{probe}"; false', jail, hide=sandbox.own_dirs(outside_cache))
    finally:
        listener.close()
    assert "CONNECTED" in exposed.detail  # without hiding it the socket is reachable: the test can tell
    assert "LISTING []" in hidden.detail and "CONNECTED" not in hidden.detail, hidden.detail
    assert "plan.json" not in hidden.detail


def test_a_repository_cannot_loosen_the_sandbox(tmp_path):
    from qwen_lsp.settings import load_settings

    (tmp_path / "pyproject.toml").write_text(
        "[tool.qwen-lsp.limits]\nsandbox_memory_mb = 0\nsandbox_processes = 100000\ncopy_file_max_bytes = 5\n")
    limits = load_settings(tmp_path).limits
    assert (limits.sandbox_memory_mb, limits.sandbox_processes) == (8192, 512)  # the defaults: ignored
    assert limits.copy_file_max_bytes == 5  # not a sandbox bound: a repository may set it


def test_as_an_ordinary_user_the_process_limit_counts_only_the_sandbox(jail):
    """The rlimit path (what every non-root user gets): RLIMIT_NPROC set by the launcher inside the
    user namespace bounds the sandbox's processes, however many the user runs outside it."""
    import subprocess

    from qwen_lsp.engine.sandbox_limits import _LAUNCHER, _kernel_version

    if _kernel_version() < (5, 14):
        pytest.skip("RLIMIT_NPROC counts per user namespace only from Linux 5.14")
    drop = [] if os.getuid() != 0 else ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    if drop and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv to become an ordinary user")
    outside = [subprocess.Popen([*drop, "sleep", "30"]) for _ in range(20)]  # the user's other processes
    try:
        argv = [*drop, jail.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-user",
                "--unshare-pid", "--die-with-parent", "--", "/usr/bin/python3", "-I", "-S", "-c", _LAUNCHER,
                "0:0", "16:16", "0:0", "0:0", "/bin/sh", "-c",
                "/usr/bin/python3 -c 'import os\nn = 0\ntry:\n    while os.fork(): n += 1\nexcept OSError: print(\"forked\", n)'"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    finally:
        for sleeper in outside:
            sleeper.kill()
            sleeper.wait()
    # 16 processes of that user in the namespace (the shell, python, its children, which stay as
    # zombies), although the user already runs 20 outside it.
    forked = int(done.stdout.split("forked ")[1])
    assert 8 <= forked < 16, (done.stdout, done.stderr)
