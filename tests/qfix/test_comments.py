"""`qfix --comments [PATH]`: the instruction comments of the files under PATH, one file at a time,
shown as a diff without the comment, written only after [a]pply."""

from __future__ import annotations

import json
import subprocess

from tests.qfix.helpers import QFIX, finish, git, spawn
from tests.vllm_double import Reply

ASK = "[a]pply / [s]kip / [e]dit command / [q]uit"
UTIL = ('NOTE = "# qwen: a string is no instruction"\n\n\ndef first(xs):\n'
        "    # qwen: handle the empty list\n    return xs[0]\n")
DONE = 'NOTE = "# qwen: a string is no instruction"\n\n\ndef first(xs):\n    return xs[0] if xs else None\n'
PLAN = {"hypotheses": [], "evidence": [], "steps": ["return None for an empty list"], "verify_command": None}


def replies() -> list[Reply]:
    return [
        Reply(reasoning="an empty list has no first item", content=json.dumps(PLAN)),
        Reply(tool_calls=[("edit_file", {"path": "pkg/util.py", "old_string": "return xs[0]",
                                         "new_string": "return xs[0] if xs else None"})]),
        Reply(tool_calls=[("finish", {"summary": "first() handles []"})]),
    ]


def _with_util(repo):
    (repo / "pkg").mkdir()
    (repo / "pkg" / "util.py").write_text(UTIL)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "util")


def test_apply_does_the_comment_and_takes_it_out(repo, qfix_env, vllm):
    _with_util(repo)
    vllm.script(*replies())
    child = spawn(["--comments"], qfix_env, repo)
    child.expect_exact("pkg/util.py: line 5: handle the empty list")
    child.expect_exact("-    # qwen: handle the empty list")
    child.expect_exact(ASK)
    assert (repo / "pkg" / "util.py").read_text() == UTIL  # nothing written while asking
    child.sendline("a")
    child.expect_exact("applied to pkg/util.py")
    assert finish(child) == 0
    assert (repo / "pkg" / "util.py").read_text() == DONE
    task = vllm.chat_requests()[0]["messages"][-2]["content"]
    assert "line 5 (the code at lines 4-6): handle the empty list" in task


def test_json_is_a_dry_run_with_a_report(repo, qfix_env, vllm):
    _with_util(repo)
    vllm.script(*replies())
    proc = subprocess.run([QFIX, "--comments", "pkg", "--json"], cwd=repo, env=qfix_env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    (entry,) = report["files"]
    assert entry["path"] == "pkg/util.py" and entry["instructions"] == ["handle the empty list"]
    assert entry["outcome"] == "proposed" and "-    # qwen: handle the empty list" in entry["diff"]
    assert (repo / "pkg" / "util.py").read_text() == UTIL


def test_no_comments_runs_nothing(repo, qfix_env, vllm):
    proc = subprocess.run([QFIX, "--comments"], cwd=repo, env=qfix_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "No instruction comments" in proc.stdout
    assert not vllm.chat_requests()
