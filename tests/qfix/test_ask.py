"""`qfix --ask "TEXT"`: a request in plain words from the terminal, as the editors' Ask Qwen, against the
vLLM test double: the request reaches the model as the task, the diff is shown, [a]pply writes it (undoable)."""

from __future__ import annotations

import json
import subprocess

from tests.qfix.helpers import BUGGY, FIXED, QFIX, finish, fix_replies, spawn

REQUEST = "greet() should use its parameter"


def test_ask_dry_run_sends_the_request_and_shows_the_diff_writing_nothing(repo, qfix_env, vllm):
    vllm.script(*fix_replies())
    proc = subprocess.run([QFIX, "--ask", REQUEST, "--json"], cwd=repo, env=qfix_env, capture_output=True, text=True,
                          timeout=120)
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["outcome"] == "proposed", proc.stderr
    assert report["diffs"] and "+    return \"Hello, \" + name" in report["diffs"][0]["diff"]
    first = json.dumps(vllm.chat_requests()[0]["messages"])
    assert REQUEST in first and "instruction" in first
    assert (repo / "script.py").read_text() == BUGGY


def test_ask_applies_on_yes_and_undo_puts_it_back(repo, qfix_env, vllm):
    vllm.script(*fix_replies())
    child = spawn(["--ask", REQUEST], qfix_env, repo)
    child.expect_exact("Apply the changes to 1 file(s)? [y/N]")
    child.sendline("y")
    child.expect_exact("qfix --undo puts it back")
    assert finish(child) == 0
    assert (repo / "script.py").read_text() == FIXED
    undone = subprocess.run([QFIX, "--undo"], cwd=repo, env=qfix_env, capture_output=True, text=True, timeout=60)
    assert undone.returncode == 0 and (repo / "script.py").read_text() == BUGGY


def test_ask_takes_no_command():
    proc = subprocess.run([QFIX, "--ask", REQUEST, "--", "make"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--ask takes a non-empty TEXT" in proc.stderr
