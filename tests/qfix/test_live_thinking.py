"""qfix's live thinking line: under the spinner on a terminal while the plan thinks; nothing of it
with --json or when the output is not a terminal."""

from __future__ import annotations

import json
import subprocess

from tests.qfix.helpers import PLAN, QFIX, finish, fix_replies, spawn
from tests.vllm_double import Reply

REASONING = "nme is not defined \x1b[2J anywhere " + " ".join(f"idea{n}" for n in range(120))


def replies() -> list[Reply]:
    plan = Reply(reasoning=REASONING, content=json.dumps(PLAN), chunk_delay=0.015)
    return [plan, *fix_replies(with_plan=False)]


def test_a_terminal_sees_the_thinking_line_under_the_spinner(repo, qfix_env, vllm):
    vllm.script(*replies())
    child = spawn(["--", "python", "script.py"], qfix_env, repo)
    child.expect(r"thinking · \d+ tokens · \d+s · …idea\d+")
    seen = child.after
    assert "\x1b[2J" not in child.before + seen  # the reasoning's escape sequence is shown, never obeyed
    child.expect_exact("[a]pply")
    child.sendline("q")
    assert finish(child) == 1


def test_json_and_pipes_get_none_of_it(repo, qfix_env, vllm):
    for args in (["--json", "--", "python", "script.py"], ["--dry-run", "--", "python", "script.py"]):
        vllm.script(*replies())
        proc = subprocess.run([QFIX, *args], cwd=repo, env=qfix_env, capture_output=True, text=True, timeout=120)
        assert "Cause:" in proc.stdout + proc.stderr or json.loads(proc.stdout)["outcome"]
        assert "thinking ·" not in proc.stdout and "thinking ·" not in proc.stderr and "idea1" not in proc.stderr
