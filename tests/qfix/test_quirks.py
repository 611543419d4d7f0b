"""Qwen3.6 as it really answers (issue 33), through `qfix --yes --json`: the fix still comes through
when the model leaves its call in the reasoning, writes a rejected draft there, puts XML beside a
native call, repeats a call, or finishes before the work; and a draft is never written.

Where bubblewrap is missing the engine cannot verify the fix, so --yes does not apply it: the tests
then check the diff qfix would write (and, when applied, the file itself)."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.qfix.helpers import BUGGY, FIXED, PLAN, QFIX
from tests.quirk_answers import wherever_the_model_left_it
from tests.vllm_double import Reply, qwen_xml_tool_call as xml

EDIT = {"path": "script.py", "old_string": '"Hello, " + nme', "new_string": '"Hello, " + name'}
DRAFT = {"path": "script.py", "old_string": '"Hello, " + nme', "new_string": '"Hello, " + nme  # DRAFT'}
PLANNED = Reply(reasoning="nme is a typo of the parameter name", content=json.dumps(PLAN))
FINISH = Reply(tool_calls=[("finish", {"summary": "greet() now uses its parameter"})])


def qfix(repo, env) -> dict:
    proc = subprocess.run([QFIX, "--yes", "--json", "--", "python", "script.py"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    return json.loads(proc.stdout)


def assert_fix_offered(report: dict, repo) -> None:
    """The one right change is what qfix writes (or would write, when it cannot verify it)."""
    (diff,) = report["diffs"]
    assert diff["path"] == "script.py" and '+    return "Hello, " + name' in diff["diff"] and "DRAFT" not in diff["diff"]
    assert report["engine_outcome"] in ("fixed", "changed_unverified")
    assert (repo / "script.py").read_text() == (FIXED if report["applied"] else BUGGY)


@pytest.mark.parametrize("answer", wherever_the_model_left_it(EDIT, DRAFT, cut_before="<parameter=old_string>"))
def test_a_call_wherever_the_model_left_it_fixes_the_bug(repo, qfix_env, vllm, answer):
    vllm.script(PLANNED, answer, FINISH)
    report = qfix(repo, qfix_env)
    assert_fix_offered(report, repo)
    (recovered,) = report["recovered_calls"]  # where the call was found, said in the report
    assert recovered.startswith("round 1: edit_file recovered from the ")


def test_a_rejected_draft_alone_is_never_written(repo, qfix_env, vllm):
    draft = Reply(reasoning=xml("edit_file", DRAFT) + "\nWait, that only adds a comment. Let me think again.", content="")
    vllm.script(PLANNED, draft, *[Reply(content="I am not sure.")] * 3)
    report = qfix(repo, qfix_env)
    assert report["diffs"] == [] and not report["applied"] and (repo / "script.py").read_text() == BUGGY


def test_a_repeated_edit_costs_at_most_two_rounds_and_keeps_the_fix(repo, qfix_env, vllm):
    edit = Reply(tool_calls=[("edit_file", EDIT)])
    vllm.script(PLANNED, edit, edit, edit, edit, edit, FINISH)
    report = qfix(repo, qfix_env)
    assert_fix_offered(report, repo)
    assert report["summary"] == "stopped: the model repeated the same call (edit_file)"
    assert len(vllm.chat_requests()) == 1 + 3  # the plan and three patch rounds, not eight


def test_finish_before_the_work_is_sent_back_once_and_the_model_then_fixes(repo, qfix_env, vllm):
    early = Reply(tool_calls=[("finish", {"summary": "The code is already correct."})])
    vllm.script(PLANNED, early, Reply(tool_calls=[("edit_file", EDIT)]), FINISH)
    assert_fix_offered(qfix(repo, qfix_env), repo)


def test_finishing_twice_before_the_work_is_giving_up_not_nothing_to_change(repo, qfix_env, vllm):
    early = Reply(tool_calls=[("finish", {"summary": "The code is already correct."})])
    vllm.script(PLANNED, early, early)
    report = qfix(repo, qfix_env)
    assert report["outcome"] == "gave_up" and report["summary"] == "The code is already correct."
    assert report["summary_by"] == "model" and (repo / "script.py").read_text() == BUGGY
