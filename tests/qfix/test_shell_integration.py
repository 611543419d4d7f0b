"""The shell integration in real bash, zsh and fish: what the hook records, and the
qfix function handing a suggested command to the command line (never running it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pexpect
import pytest

from tests.qfix.helpers import PROMPT_RE, QFIX, Shell, record_of, suggestion_replies

SHELLS = ["bash", "zsh", "fish"]


@pytest.mark.parametrize("shell_name", SHELLS)
def test_the_hook_records_command_exit_status_and_cwd(shell_name, tmp_path, qfix_env, shells):
    state = tmp_path / "state"
    (tmp_path / "sub").mkdir()
    sh = Shell(shell_name, qfix_env, tmp_path)
    shells.append(sh)
    assert not (state / "sessions").exists() or not list((state / "sessions").glob("*.json"))  # init: no record

    tricky = r"""echo "say \"hi\" \\ there" 'it''s' ; cd sub ; false"""
    sh.run(tricky)
    record = record_of(state)
    assert record == {"shell": shell_name, "pid": sh.child.pid, "command": tricky, "exit_code": 1,
                      "cwd": str(tmp_path)}  # the directory the command was typed in

    sh.run("")  # an empty line runs nothing: the record stays
    assert record_of(state)["command"] == tricky

    sh.run(f"{QFIX} --undo")  # qfix itself is never the command to fix
    assert record_of(state)["command"] == tricky

    sh.run("echo ok")
    assert record_of(state) | {"cwd": ""} == {"shell": shell_name, "pid": sh.child.pid, "command": "echo ok",
                                             "exit_code": 0, "cwd": ""}
    assert record_of(state)["cwd"] == str(tmp_path / "sub")


@pytest.mark.parametrize("shell_name", SHELLS)
def test_a_repeat_kept_out_of_history_still_updates_the_record(shell_name, tmp_path, qfix_env, shells):
    """HISTCONTROL=ignoredups (Debian's default bashrc sets ignoreboth): the second run is not in history."""
    sh = Shell(shell_name, {**qfix_env, "HISTCONTROL": "ignoreboth"}, tmp_path)
    shells.append(sh)
    flag = tmp_path / "fail"
    flag.write_text("")
    command = "test ! -e fail"
    sh.run(command)
    assert record_of(tmp_path / "state")["exit_code"] == 1
    flag.unlink()
    sh.run(command)
    assert record_of(tmp_path / "state") | {"pid": 0} == {"shell": shell_name, "pid": 0, "command": command,
                                                         "exit_code": 0, "cwd": str(tmp_path)}


@pytest.mark.parametrize("shell_name", ["bash", "zsh"])
def test_a_multi_line_command_is_recorded_whole(shell_name, tmp_path, qfix_env, shells):
    sh = Shell(shell_name, qfix_env, tmp_path)
    shells.append(sh)
    sh.child.sendline("for i in 1 2; do")
    sh.child.sendline("echo $i; done; exit_code_is_3() { return 3; }; exit_code_is_3")
    sh.expect_prompt()
    record = record_of(tmp_path / "state")
    assert record["exit_code"] == 3
    assert record["command"].startswith("for i in 1 2; do") and record["command"].endswith("exit_code_is_3")


def test_init_is_fast_and_rejects_unknown_shells(qfix_env):
    started = time.monotonic()
    out = subprocess.run([QFIX, "init", "bash"], env=qfix_env, capture_output=True, text=True, check=True).stdout
    assert time.monotonic() - started < 5  # no engine import at shell start (generous for a loaded CI box)
    assert "PROMPT_COMMAND" in out and "qfix()" in out
    bad = subprocess.run([QFIX, "init", "tcsh"], env=qfix_env, capture_output=True, text=True)
    assert bad.returncode == 2 and "usage: qfix init" in bad.stderr


def test_init_into_a_closed_pipe_ends_quietly(qfix_env):
    """`qfix init bash | head -1`: the reader is gone before qfix writes; no BrokenPipeError traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # as `head` does once it has its lines: every write now fails with EPIPE
    try:
        proc = subprocess.run([QFIX, "init", "bash"], env=qfix_env, stdout=write_end, stderr=subprocess.PIPE,
                              text=True, timeout=60)
    finally:
        os.close(write_end)
    assert proc.stderr == "" and proc.returncode == 141  # as if killed by SIGPIPE, like any filter


def test_without_integration_or_command_qfix_says_what_to_do(tmp_path, qfix_env):
    proc = subprocess.run([QFIX], cwd=tmp_path, env=qfix_env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert "qfix -- CMD" in proc.stderr and "qfix init bash" in proc.stderr


@pytest.mark.parametrize("shell_name", SHELLS)
def test_an_accepted_suggestion_lands_on_the_command_line_and_runs_only_on_enter(
    shell_name, repo, qfix_env, vllm, shells
):
    marker = repo / "marker.txt"
    vllm.script(*suggestion_replies("echo handed-over > marker.txt", "write the marker"))
    sh = Shell(shell_name, qfix_env, repo)
    shells.append(sh)
    sh.run("python script.py")

    sh.child.sendline("qfix")
    sh.child.expect_exact("Re-run `python script.py` to see its output? [y/N]")  # no output was captured
    sh.child.sendline("y")
    sh.child.expect("MODIFIES FILES")
    sh.child.expect_exact("[a]pply / [s]kip / [e]dit command / [q]uit")
    sh.child.sendline("a")
    if shell_name == "bash":  # bash: an editable line of its own
        sh.child.expect_exact("Enter runs it, Ctrl-C cancels> ")
        sh.child.expect_exact("echo handed-over > marker.txt")
    else:  # zsh, fish: the next prompt's buffer
        sh.expect_prompt(timeout=90)
        sh.child.expect_exact("marker.txt")
    time.sleep(0.5)
    assert not marker.exists()  # on the command line, not run
    sh.child.sendline("")
    sh.expect_prompt()
    assert marker.read_text().strip() == "handed-over"
    assert record_of(repo.parent / "state")["command"] == "echo handed-over > marker.txt"


def test_bash_ctrl_c_on_the_offered_line_runs_nothing(repo, qfix_env, vllm, shells):
    vllm.script(*suggestion_replies("echo handed-over > marker.txt"))
    sh = Shell("bash", qfix_env, repo)
    shells.append(sh)
    sh.child.sendline("qfix -- python script.py")
    sh.child.expect_exact("[a]pply / [s]kip / [e]dit command / [q]uit", timeout=90)
    sh.child.sendline("a")
    sh.child.expect_exact("Ctrl-C cancels> ")
    sh.child.sendintr()
    sh.expect_prompt()
    assert not (repo / "marker.txt").exists()


def test_tmux_capture_gives_the_model_the_output_without_a_rerun(repo, qfix_env, vllm, tmp_path):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    from tests.qfix.helpers import fix_replies

    vllm.script(*fix_replies())
    socket_name = f"qfix-test-{os.getpid()}"
    env = {**qfix_env, "PS1": "$ "}
    tmux = ["tmux", "-L", socket_name]
    subprocess.run([*tmux, "-f", "/dev/null", "new-session", "-d", "-x", "200", "-y", "50", "-c", str(repo),
                    "bash --norc --noprofile -i"], env=env, check=True)
    try:
        def keys(line: str) -> None:
            subprocess.run([*tmux, "send-keys", "-t", "0", line, "Enter"], env=env, check=True)

        keys(f'eval "$({QFIX} init bash)"')
        keys("python script.py")
        keys("qfix --dry-run > out.txt 2>&1; echo $? > done.txt")
        deadline = time.monotonic() + 90
        while not (repo / "done.txt").exists() and time.monotonic() < deadline:
            time.sleep(0.3)
        out = (repo / "out.txt").read_text()
        assert (repo / "done.txt").read_text().strip() == "0", out
    finally:
        subprocess.run([*tmux, "kill-server"], env=env)
    assert "Re-run" not in out  # the output came from the screen: nothing asked, nothing re-run
    prompt = json.dumps(vllm.chat_requests()[0]["messages"])
    assert "NameError: name 'nme' is not defined" in prompt
    assert "qfix --dry-run" not in prompt  # only the command's own output


def test_the_offered_line_is_not_confused_by_a_stale_buffer(repo, qfix_env, shells):
    """A buffer file left by a crashed run is removed before qfix runs again."""
    sh = Shell("bash", qfix_env, repo)
    shells.append(sh)
    sessions = repo.parent / "state" / "sessions"
    (sessions / f"{sh.child.pid}.buffer").write_text("echo stale > stale.txt")
    sh.child.sendline("qfix --undo")
    index = sh.child.expect([PROMPT_RE, pexpect.TIMEOUT], timeout=60)
    assert index == 0
    assert not (repo / "stale.txt").exists()
