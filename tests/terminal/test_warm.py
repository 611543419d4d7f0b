"""qfix's warm process (terminal_agent/warm.py): real daemons on a real unix socket, qfix as a process,
the vLLM test double. Every test that starts a daemon kills it (and its children) afterwards."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.qfix.conftest import qfix_env, repo  # noqa: F401 - fixtures
from tests.qfix.helpers import PLAN, QFIX, finish, fix_replies, spawn
from tests.vllm_double import Reply, VLLMDouble
from terminal_agent import warm_client
from terminal_agent.warm import Child, Daemon
from terminal_agent.warm_wire import (ChildReply, ErrorReply, FailureMessage, Hello, ProgressReply, RefineMessage, Request,
                                      StatusReply)

STATUS_RE = re.compile(r"warm process: pid (\d+) \(this qfix's code\).*?served (\d+) qfix run")
SLOW_PLAN = Reply(reasoning="thinking " * 400, content=json.dumps(PLAN), chunk_delay=0.05)  # ~20 s of stream


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until(what, timeout: float = 30.0, every: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := what():
            return value
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


class Warm:
    """The warm processes of one qfix environment (its own short state dir: socket paths stay short)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.seen: set[int] = set()

    def qfix(self, cwd: Path, *args: str, env: dict[str, str] | None = None, script: str = "script.py"):
        return subprocess.run([QFIX, *args, "--", sys.executable, script], cwd=cwd, env=env or self.env,
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)

    def status(self, env: dict[str, str] | None = None) -> tuple[int, int] | None:
        """(pid, qfix runs served) of the daemon for this code, per `qfix --warm-status`."""
        out = subprocess.run([QFIX, "--warm-status"], env=env or self.env, capture_output=True, text=True,
                             timeout=30, check=True).stdout
        found = STATUS_RE.search(out)
        if not found:
            return None
        self.seen.add(int(found[1]))
        return int(found[1]), int(found[2])

    def ask(self) -> StatusReply | None:
        paths = [p for p in self.sockets() if (reply := warm_client.ask(p, "status"))]
        return warm_client.ask(paths[0], "status") if paths else None

    def sockets(self) -> list[Path]:
        return sorted((Path(self.env["QFIX_STATE_DIR"]) / "warm").glob("qfix-*.sock"))

    def stop_all(self) -> None:
        for path in self.sockets():
            if (reply := warm_client.ask(path, "stop")) is not None:
                self.seen.add(reply.pid)
        self.seen.update(warm_client.starting().values())  # still importing the engine
        for pid in self.seen:  # the daemon leads its process group: its children go with it
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


@pytest.fixture
def warm(qfix_env, monkeypatch) -> Iterator[Warm]:  # noqa: F811
    state = Path(tempfile.mkdtemp(prefix="qw-", dir="/tmp"))
    env = {**qfix_env, "QFIX_STATE_DIR": str(state), "QFIX_WARM_DIR": str(state / "warm"), "QFIX_WARM": "1",
           "QFIX_WARM_IDLE": "60"}
    monkeypatch.setenv("QFIX_STATE_DIR", str(state))  # warm_client.ask in this process looks there too
    monkeypatch.setenv("QFIX_WARM_DIR", str(state / "warm"))
    helper = Warm(env)
    yield helper
    helper.stop_all()
    shutil.rmtree(state, ignore_errors=True)


def report(run: subprocess.CompletedProcess[str]) -> dict:
    data = json.loads(run.stdout)
    data["model"].pop("wall_seconds")
    return data


def requests(double: VLLMDouble) -> str:
    """The chat requests, but for the double's own tool-call ids (its counter goes on across resets)."""
    return re.sub(r'"call_\d+"', '"call"', json.dumps(double.chat_requests()))


def test_the_first_qfix_starts_a_daemon_the_second_thinks_in_it_with_the_same_report(repo, warm, vllm):  # noqa: F811
    assert warm.status() is None and "none running" in subprocess.run(
        [QFIX, "--warm-status"], env=warm.env, capture_output=True, text=True).stdout
    vllm.script(*fix_replies())
    first = warm.qfix(repo, "--json")  # no daemon yet: thinks in-process, starts one for next time
    assert first.returncode == 0, first.stderr
    requests_here = requests(vllm)
    pid, served = wait_until(warm.status, timeout=90)  # a daemon starting on a busy machine
    assert served == 0

    vllm.reset()
    vllm.script(*fix_replies())
    fresh = {**warm.env, "QWEN_LSP_CACHE_DIR": warm.env["QWEN_LSP_CACHE_DIR"] + "-2"}  # no cached plan: think again
    second = warm.qfix(repo, "--json", env=fresh)
    assert second.returncode == 0, second.stderr
    assert "thinking here" not in second.stderr  # the daemon's answer was used
    assert warm.status() == (pid, 1)  # the same daemon served it
    assert report(second) == report(first)
    assert report(second)["outcome"] == "proposed" and report(second)["diffs"]
    assert requests(vllm) == requests_here  # the same requests: the same thinking


def test_each_client_s_environment_and_cwd_reach_its_child(repo, warm, vllm, tmp_path):  # noqa: F811
    other_repo = tmp_path / "other"
    shutil.copytree(repo, other_repo)
    (other_repo / "sub").mkdir()
    subprocess.Popen([sys.executable, "-P", "-m", "terminal_agent.warm"], env=warm.env, start_new_session=True,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid, _ = wait_until(warm.status, timeout=90)  # a daemon starting on a busy machine
    with VLLMDouble() as other:
        vllm.script(*fix_replies())
        other.script(*fix_replies())
        first = warm.qfix(repo, "--json")
        second = warm.qfix(other_repo / "sub", "--json", env={**warm.env, "QWEN_LSP_BASE_URL": other.base_url},
                           script="../script.py")
        assert first.returncode == second.returncode == 0, first.stderr + second.stderr
        assert "thinking here" not in first.stderr + second.stderr
        assert warm.status() == (pid, 2)  # both thought in the daemon's children
        assert len(vllm.chat_requests()) == len(other.chat_requests()) == 4  # each at its own server
    assert report(first)["workspace"] == str(repo) and report(second)["workspace"] == str(other_repo)
    assert report(second)["cwd"] == str(other_repo / "sub")
    task = vllm.chat_requests()[0]["messages"][-1]["content"]
    other_task = json.dumps(other.chat_requests()[0]["messages"])
    assert "../script.py" not in task and "../script.py" in other_task  # the failure as each client ran it
    stopped = subprocess.run([QFIX, "--warm-stop"], env=warm.env, capture_output=True, text=True).stdout
    assert f"stopped pid {pid}" in stopped
    wait_until(lambda: not alive(pid), timeout=10)


def test_a_changed_code_fingerprint_starts_a_new_daemon_and_the_stale_one_exits(repo, warm, vllm, tmp_path):  # noqa: F811
    code = tmp_path / "code"  # a checkout of our own to edit
    for package in ("qwen_lsp", "terminal_agent"):
        shutil.copytree(Path(warm_client.__file__).parents[1] / package, code / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    env = {**warm.env, "PYTHONPATH": str(code)}
    vllm.script(*fix_replies())
    assert warm.qfix(repo, "--json", env=env).returncode == 0
    old, _ = wait_until(lambda: warm.status(env))

    edited = code / "terminal_agent" / "ui.py"
    os.utime(edited, ns=(edited.stat().st_atime_ns, edited.stat().st_mtime_ns + 10**9))
    assert warm.status(env) is None  # this qfix's code has no daemon now
    wait_until(lambda: not alive(old), timeout=15)  # the stale one noticed and left
    vllm.script(*fix_replies())
    run = warm.qfix(repo, "--json", env=env)
    assert run.returncode == 0 and "thinking here" not in run.stderr
    new, served = wait_until(lambda: warm.status(env))
    assert new != old and served == 0


def test_ctrl_c_in_qfix_cancels_the_child_s_fix(repo, warm, vllm):  # noqa: F811
    subprocess.Popen([sys.executable, "-P", "-m", "terminal_agent.warm"], env=warm.env, start_new_session=True,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid, _ = wait_until(warm.status, timeout=90)  # a daemon starting on a busy machine
    vllm.script(SLOW_PLAN)
    qfix = spawn(["--", sys.executable, "script.py"], warm.env, repo)  # in a terminal, as the user runs it
    qfix.expect("Ctrl-C cancels")  # qfix waits for the child
    wait_until(vllm.chat_requests)  # which is streaming the plan
    child = wait_until(lambda: (s := warm.ask()) and s.thinking)[0]
    qfix.sendintr()
    qfix.expect("cancelled: nothing was changed")
    assert finish(qfix) == 130
    wait_until(lambda: not alive(child), timeout=10)  # the child stopped its fix
    wait_until(lambda: vllm.aborted_streams == 1, timeout=10)  # and hung up on the model server
    assert alive(pid) and warm.ask().thinking == []  # the daemon goes on
    assert len(vllm.chat_requests()) == 1


def test_a_daemon_killed_mid_fix_leaves_the_fix_to_qfix(repo, warm, vllm):  # noqa: F811
    subprocess.Popen([sys.executable, "-P", "-m", "terminal_agent.warm"], env=warm.env, start_new_session=True,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid, _ = wait_until(warm.status, timeout=90)  # a daemon starting on a busy machine
    vllm.script(SLOW_PLAN, *fix_replies())
    qfix = subprocess.Popen([QFIX, "--json", "--", sys.executable, "script.py"], cwd=repo, env=warm.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    wait_until(vllm.chat_requests)
    os.killpg(pid, signal.SIGKILL)  # the daemon and the child thinking for qfix
    out, err = qfix.communicate(timeout=90)
    assert qfix.returncode == 0, err
    assert "the warm process failed (it ended without an answer); thinking here" in err
    assert json.loads(out)["outcome"] == "proposed"  # the fix was not lost
    assert len(vllm.chat_requests()) == 5  # the killed child's plan request, then the in-process fix


def test_qfix_warm_0_never_starts_or_asks_a_daemon(repo, warm, vllm):  # noqa: F811
    env = {**warm.env, "QFIX_WARM": "0"}
    vllm.script(*fix_replies())
    run = warm.qfix(repo, "--json", env=env)
    assert run.returncode == 0 and json.loads(run.stdout)["outcome"] == "proposed"
    time.sleep(1)  # a daemon started would have made its folder and log by now
    state = Path(env["QFIX_STATE_DIR"])
    assert not (state / "warm").exists() and not (state / "warm.log").exists()
    status = subprocess.run([QFIX, "--warm-status"], env=env, capture_output=True, text=True).stdout
    assert "off (QFIX_WARM=0" in status


def test_the_plain_dicts_qfix_sends_validate_as_the_daemon_s_models(tmp_path, monkeypatch):
    monkeypatch.setenv("QFIX_WARM", "1")
    monkeypatch.setenv("QFIX_WARM_IDLE", "5")  # if this test's socket were missed, the daemon started goes soon
    monkeypatch.setenv("TMPDIR", "/tmp/undecodable-\udcff")  # an environment value that is not UTF-8
    folder = warm_client.private_dir(create=True)
    path = warm_client.socket_path(folder, warm_client.fingerprint())
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)
    try:
        session = warm_client.open_session(tmp_path)
        assert session is not None
        conn, _ = listener.accept()
        lines = warm_client.Lines(conn)
        hello = Request.validate_python(lines.next())
        assert isinstance(hello, Hello)
        assert hello.env == dict(os.environ) and hello.cwd == str(tmp_path) and hello.client_pid == os.getpid()
        mask = os.umask(0)
        os.umask(mask)
        assert hello.umask == mask
        assert session.send_failure("make test", 2, "boom \x1b[31m", tmp_path, tmp_path)
        failure = FailureMessage.model_validate(lines.next())
        assert (failure.command, failure.exit_code, failure.output, failure.workspace) == (
            "make test", 2, "boom \x1b[31m", str(tmp_path))
        assert session.send_refine("fix-1", "keep the old signature")  # after a result: the user's note
        refine = RefineMessage.model_validate(lines.next())
        assert (refine.fix_id, refine.note) == ("fix-1", "keep the old signature")
        session.close()
        assert lines.next() is None  # the child's cue to stop
        assert not session.send_refine("fix-1", "again")  # a closed session sends nothing
        conn.close()
        status = Daemon(listener, -1, "abc", path, time.time()).status()
        assert StatusReply.model_validate(status).served == 0
    finally:
        listener.close()
    child_end, client_end = socket.socketpair()
    with child_end, client_end:  # what a child sends back, as qfix reads it
        child = Child(child_end, warm_client.Lines(child_end), hello)
        child.progress("patch round 1")
        child.reply_error("rejected", "HTTP 400: bad model")
        replies = warm_client.Lines(client_end)
        assert ChildReply.validate_python(replies.next()) == ProgressReply(kind="progress", phase="patch round 1")
        error = ChildReply.validate_python(replies.next())
        assert isinstance(error, ErrorReply) and (error.error, error.message) == ("rejected", "HTTP 400: bad model")


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to listen as another user")
def test_a_socket_served_by_another_user_is_never_used(tmp_path, monkeypatch):
    monkeypatch.setenv("QFIX_WARM", "1")
    path = warm_client.socket_path(warm_client.private_dir(create=True), warm_client.fingerprint())
    server = subprocess.Popen([sys.executable, "-c", (
        "import os, socket, sys, time\n"
        "s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666)\n"
        "os.setgid(65534); os.setuid(65534); s.listen(1); print('READY', flush=True); time.sleep(60)\n"),
        str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "READY"
        assert warm_client.connect(path) is None
    finally:
        server.kill()
        server.wait()
