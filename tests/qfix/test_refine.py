"""qfix's [r]efine: a note on the change shown continues the same conversation (append-only, no new
plan), the new diff is shown against the original file, and [a]pply writes that one."""

from __future__ import annotations

from tests.qfix.helpers import BUGGY, finish, fix_replies, spawn
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
