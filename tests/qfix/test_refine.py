"""qfix's [r]efine: a note on the change shown continues the same conversation (append-only, no new
plan), the new diff is shown against the original file, and [a]pply writes that one."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.qfix.helpers import BUGGY, FIXED, finish, fix_replies, spawn
from tests.terminal.test_warm import alive, wait_until, warm  # noqa: F401 - the warm fixture
from tests.vllm_double import Reply

REFINED = BUGGY.replace('"Hello, " + nme', 'f"Hello, {name}"')


def test_refine_then_apply(repo, qfix_env, vllm):
    env = {**qfix_env, "QFIX_WARM": "0"}  # thought in this process: its engine goes on with the note
    vllm.script(*fix_replies(), Reply(tool_calls=[("edit_file", {
        "path": "script.py", "old_string": '"Hello, " + name', "new_string": 'f"Hello, {name}"'})]),
        Reply(tool_calls=[("finish", {"summary": "an f-string now"})]))
    child = spawn(["--", "python", "script.py"], env, repo)
    child.expect_exact("[a]pply / [s]kip / [e]dit command / [q]uit / [r]efine")
    first = len(vllm.chat_requests())
    child.sendline("r")
    child.expect_exact("Your note for Qwen: ")
    child.sendline("use an f-string")
    child.expect_exact('+    return f"Hello, {name}"')  # the new diff, against the original file
    child.expect_exact("[r]efine")
    assert (repo / "script.py").read_text() == BUGGY  # nothing written yet
    child.sendline("a")
    child.expect_exact("passes now")
    assert finish(child) == 0
    assert (repo / "script.py").read_text() == REFINED

    bodies = vllm.chat_requests()
    last, refine = bodies[first - 1]["messages"], bodies[first]["messages"]
    assert refine[: len(last)] == last and "use an f-string" in refine[-1]["content"]  # append-only
    assert not any(b["chat_template_kwargs"]["enable_thinking"] for b in bodies[first:])  # no new plan


def cache_state(env: dict[str, str]) -> dict[str, bytes]:
    """Every file of the engine's cache (the plan cache among them), by path."""
    root = Path(env["QWEN_LSP_CACHE_DIR"]) / "state"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_refine_in_the_warm_process_then_apply(repo, warm, vllm):  # noqa: F811
    """The warm child that thought keeps the conversation: [r]efine sends it the note on the same
    connection, and its answer is an append-only request with no new plan; qfix applies and re-runs."""
    subprocess.Popen([sys.executable, "-P", "-m", "terminal_agent.warm"], env=warm.env, start_new_session=True,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid, _ = wait_until(warm.status)
    vllm.script(*fix_replies(), Reply(tool_calls=[("edit_file", {
        "path": "script.py", "old_string": '"Hello, " + name', "new_string": 'f"Hello, {name}"'})]),
        Reply(tool_calls=[("finish", {"summary": "an f-string now"})]))
    child = spawn(["--", sys.executable, "script.py"], warm.env, repo)  # a terminal, as the user runs it
    child.logfile_read = seen = io.StringIO()
    child.expect_exact("[a]pply / [s]kip / [e]dit command / [q]uit / [r]efine")
    assert warm.status() == (pid, 1)  # the daemon's child thought it
    thinker = wait_until(lambda: (s := warm.ask()) and s.thinking)[0]  # and holds the conversation while qfix asks
    first, cached = len(vllm.chat_requests()), cache_state(warm.env)
    child.sendline("r")
    child.expect_exact("Your note for Qwen: ")
    child.sendline("use an f-string")
    child.expect_exact('+    return f"Hello, {name}"')  # the new diff, against the original file
    child.expect_exact("[r]efine")
    assert (repo / "script.py").read_text() == BUGGY  # the child wrote nothing
    assert cache_state(warm.env) == cached  # the plan cache is as the fix left it
    assert alive(thinker)
    child.sendline("a")
    child.expect_exact("passes now")
    assert finish(child) == 0
    assert (repo / "script.py").read_text() == REFINED
    assert "warm process failed" not in seen.getvalue() and "could not refine" not in seen.getvalue()
    wait_until(lambda: not alive(thinker), timeout=10)  # qfix closed the connection: the child ended
    assert alive(pid) and warm.ask().thinking == []

    bodies = vllm.chat_requests()
    last, refine = bodies[first - 1]["messages"], bodies[first]["messages"]
    assert refine[: len(last)] == last and "use an f-string" in refine[-1]["content"]  # append-only
    assert not any(b["chat_template_kwargs"]["enable_thinking"] for b in bodies[first:])  # no new plan


def test_a_warm_child_gone_before_the_note_leaves_the_change_as_it_was(repo, warm, vllm):  # noqa: F811
    subprocess.Popen([sys.executable, "-P", "-m", "terminal_agent.warm"], env=warm.env, start_new_session=True,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid, _ = wait_until(warm.status)
    vllm.script(*fix_replies())
    child = spawn(["--", sys.executable, "script.py"], warm.env, repo)
    child.expect_exact("[a]pply / [s]kip / [e]dit command / [q]uit / [r]efine")
    thinker = wait_until(lambda: (s := warm.ask()) and s.thinking)[0]
    os.kill(thinker, signal.SIGKILL)
    wait_until(lambda: not alive(thinker), timeout=10)
    asked = len(vllm.chat_requests())
    child.sendline("r")
    child.expect_exact("Your note for Qwen: ")
    child.sendline("use an f-string")
    child.expect_exact("the warm process could not refine the fix")
    child.expect_exact("the change above stands")
    child.expect_exact("[q]uit: ")  # no [r]efine now: nobody holds the conversation
    child.sendline("a")
    child.expect_exact("passes now")
    assert finish(child) == 0
    assert (repo / "script.py").read_text() == FIXED  # the change first shown, as reviewed
    assert len(vllm.chat_requests()) == asked and alive(pid)
