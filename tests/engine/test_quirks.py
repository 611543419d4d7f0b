"""Qwen3.6 as it really answers (issue 33), through the engine and the real HTTP double: calls in the
reasoning, split, drafts, XML beside native calls, text that looks like a number, repeats, an early
finish, and a prefix cache that does not hit."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

from qwen_lsp.llm.calllog import FixRecord, log_path, read
from qwen_lsp.ops.stats import render, summarize
from qwen_lsp.types import Task, TaskKind
from tests.calc_project import BUGGY, FIXED, make_project
from tests.engine.helpers import PLAN, failing_test_task, make_engine
from tests.vllm_double import Reply, VLLMDouble, qwen_xml_tool_call as xml

EDIT = {"path": "calc.py", "old_string": "total = a - b", "new_string": "total = a + b"}
DRAFT = {"path": "calc.py", "old_string": "total = a - b", "new_string": "total = b - a  # draft"}
PLANNED = Reply(reasoning="add() computes a - b", content=json.dumps(PLAN))
FINISH = Reply(tool_calls=[("finish", {"summary": "add now adds"})])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


async def fix(vllm: VLLMDouble, project: Path, tmp_path: Path, *replies: Reply, **settings):
    vllm.script(PLANNED, *replies)
    return await make_engine(vllm, tmp_path / "cache", **settings).fix(failing_test_task(), project)


def tool_answers(vllm: VLLMDouble) -> list[str]:
    return [m["content"] for m in vllm.chat_requests()[-1]["messages"] if m["role"] == "tool"]


async def test_a_call_left_in_the_reasoning_is_run_and_said_to_be_recovered(vllm, project, tmp_path):
    result = await fix(vllm, project, tmp_path, Reply(reasoning="I'll edit it now.\n" + xml("edit_file", EDIT), content=""), FINISH)
    assert result.changes[0].updated == FIXED
    assert result.recovered_calls == ["round 1: edit_file recovered from the end of the reasoning"]
    assert (project / "calc.py").read_text() == BUGGY  # the engine never writes


async def test_a_rejected_draft_in_the_reasoning_is_never_applied(vllm, project, tmp_path):
    reasoning = f"{xml('edit_file', DRAFT)}\nWait, that swaps the operands. The right edit:\n{xml('edit_file', EDIT)}"
    result = await fix(vllm, project, tmp_path, Reply(reasoning=reasoning, content=""), FINISH)
    assert result.changes[0].updated == FIXED and "draft" not in result.changes[0].updated


async def test_a_draft_alone_followed_by_more_thinking_runs_nothing(vllm, project, tmp_path):
    draft_only = Reply(reasoning=xml("edit_file", DRAFT) + "\nNo: let me read the test first.", content="")
    result = await fix(vllm, project, tmp_path, draft_only, Reply(tool_calls=[("edit_file", EDIT)]), FINISH)
    assert result.changes[0].updated == FIXED
    nudged = vllm.chat_requests()[2]["messages"][-1]
    assert nudged["role"] == "user"  # the round had no call: the model was nudged, nothing ran


async def test_a_call_split_between_reasoning_and_content_is_joined(vllm, project, tmp_path):
    whole = xml("edit_file", EDIT)
    cut = whole.index("<parameter=old_string>")
    result = await fix(vllm, project, tmp_path, Reply(reasoning="Applying.\n" + whole[:cut], content=whole[cut:]), FINISH)
    assert result.changes[0].updated == FIXED
    assert result.recovered_calls == ["round 1: edit_file recovered from the reasoning and the answer's text (split)"]


async def test_an_xml_call_beside_a_native_one_runs_too(vllm, project, tmp_path):
    beside = Reply(content="And the edit:\n" + xml("edit_file", EDIT), tool_calls=[("read_file", {"path": "calc.py"})])
    result = await fix(vllm, project, tmp_path, beside, FINISH)
    assert result.changes[0].updated == FIXED
    assert result.recovered_calls == ["round 1: edit_file recovered from the answer's text"]


async def fix_limits(vllm: VLLMDouble, project: Path, tmp_path: Path, limits: str, test: str, *replies: Reply):
    """A fix whose failing command is a test of limits.py, so the edit under test is the one verification wants."""
    (project / "limits.py").write_text(limits)
    (project / "test_limits.py").write_text(f"from limits import *\n\n\ndef test_limits():\n    {test}\n")
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider test_limits.py"
    plan = {**PLAN, "evidence": [], "steps": ["change the value in limits.py"], "verify_command": command}
    vllm.script(Reply(content=json.dumps(plan)), *replies)
    task = Task(kind=TaskKind.command, description="pytest failed", command=command,
                terminal_output=f"FAILED test_limits.py::test_limits - {test}", exit_code=1)
    return await make_engine(vllm, tmp_path / "cache").fix(task, project)


async def test_xml_text_that_looks_like_a_number_stays_text(vllm, project, tmp_path, jail):
    number = {"path": "limits.py", "old_string": "    10\n", "new_string": "    25\n"}
    result = await fix_limits(vllm, project, tmp_path, "PAGE = (\n    10\n)\n", "assert PAGE == 25",
                              Reply(content=xml("edit_file", number)), FINISH)
    assert [c.updated for c in result.changes] == ["PAGE = (\n    25\n)\n"]  # not refused as an int, not trimmed
    assert result.outcome == "fixed"  # verified by the sandboxed test run


async def test_a_native_number_for_a_string_parameter_becomes_its_exact_text(vllm, project, tmp_path, jail):
    native = Reply(tool_calls=[("edit_file", '{"path": "limits.py", "old_string": "0.50", "new_string": 0.75}')])
    result = await fix_limits(vllm, project, tmp_path, "PAGE = 10\nRATE = 0.50\n", "assert RATE == 0.75", native, FINISH)
    assert [c.updated for c in result.changes] == ["PAGE = 10\nRATE = 0.75\n"]
    assert result.outcome == "fixed"  # verified by the sandboxed test run


async def test_a_repeated_edit_is_answered_already_done_and_the_third_stops_keeping_the_change(vllm, project, tmp_path):
    edit = Reply(tool_calls=[("edit_file", EDIT)])
    result = await fix(vllm, project, tmp_path, edit, edit, edit, FINISH)
    answers = tool_answers(vllm)
    assert answers[0].startswith("Edited calc.py") and answers[1].startswith("already done: ")
    assert result.summary == "stopped: the model repeated the same call (edit_file)" and result.summary_by == "engine"
    assert result.accounting.rounds == 3 and result.changes[0].updated == FIXED  # applied once, kept
    assert vllm._queue  # the finish was never asked for


async def test_the_same_read_forever_stops_with_its_own_outcome(vllm, project, tmp_path):
    read = Reply(tool_calls=[("read_file", {"path": "calc.py"})])
    result = await fix(vllm, project, tmp_path, read, read, read, read)
    assert result.outcome == "repeated" and result.accounting.rounds == 3 and not result.changes
    assert "repeated the same call" in result.summary


async def test_a_read_after_an_edit_is_not_a_repeat(vllm, project, tmp_path):
    read = Reply(tool_calls=[("read_file", {"path": "calc.py"})])
    result = await fix(vllm, project, tmp_path, read, Reply(tool_calls=[("edit_file", EDIT)]), read, read, FINISH)
    answers = tool_answers(vllm)
    assert "total = a + b" in answers[2]  # read afresh after the edit
    assert answers[3].startswith("already done: ") and result.changes[0].updated == FIXED


async def test_an_early_finish_is_answered_with_the_plan_and_the_model_then_fixes(vllm, project, tmp_path):
    early = Reply(tool_calls=[("finish", {"summary": "The code is correct; nothing to change."})])
    result = await fix(vllm, project, tmp_path, early, Reply(tool_calls=[("edit_file", EDIT)]), FINISH)
    assert result.changes[0].updated == FIXED
    first_answer = vllm.chat_requests()[2]["messages"][-1]["content"]
    assert first_answer.startswith("Not finished: no file has changed") and "use a + b in add" in first_answer


async def test_a_second_early_finish_ends_as_given_up_not_as_nothing_to_change(vllm, project, tmp_path):
    early = Reply(tool_calls=[("finish", {"summary": "Nothing to change."})])
    result = await fix(vllm, project, tmp_path, early, early)
    assert result.outcome == "gave_up" and result.summary == "Nothing to change." and result.summary_by == "model"


async def test_no_cached_tokens_on_patch_rounds_is_said_once_in_the_log_and_the_stats(tmp_path, project, caplog):
    with VLLMDouble(prefix_caching=False) as double:
        engine = make_engine(double, tmp_path / "cache")
        for plan in ([PLANNED], []):  # the second fix reuses the cached plan
            double.script(*plan, Reply(tool_calls=[("edit_file", EDIT)]), FINISH)
            with caplog.at_level(logging.WARNING, logger="qwen_lsp.engine.loop"):
                result = await engine.fix(failing_test_task(), project)
            assert result.changes[0].updated == FIXED
    warnings = [r.getMessage() for r in caplog.records if "prefix cache is not hitting" in r.getMessage()]
    assert len(warnings) == 1 and "qwen-lsp doctor" in warnings[0]
    fixes = [r for r in read(log_path(tmp_path / "cache")) if isinstance(r, FixRecord)]
    assert [f.prefix_cache_missed for f in fixes] == [True, True]
    assert "cached none of it" in render(summarize(read(log_path(tmp_path / "cache"))))


async def test_a_hitting_prefix_cache_says_nothing(vllm, project, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="qwen_lsp.engine.loop"):
        await fix(vllm, project, tmp_path, Reply(tool_calls=[("edit_file", EDIT)]), FINISH)
    assert not [r for r in caplog.records if "prefix cache" in r.getMessage()]
    assert not any(r.prefix_cache_missed for r in read(log_path(tmp_path / "cache")) if isinstance(r, FixRecord))


async def test_a_wrong_edit_repeated_after_its_verification_failed_stops_and_is_not_offered(vllm, project, tmp_path, jail):
    wrong = Reply(tool_calls=[("edit_file", {**EDIT, "new_string": "total = a * b"})])  # add(2, 3) == 6: the test still fails
    result = await fix(vllm, project, tmp_path, wrong, FINISH, wrong, wrong, FINISH)
    answers = tool_answers(vllm)
    assert answers[1].startswith("Validation FAILED")  # the finish ran the failing test in the sandbox
    assert answers[2].startswith("already done: ")  # the applied edit is not applied twice
    assert result.summary == "stopped: the model repeated the same call (edit_file)" and result.accounting.rounds == 4
    assert result.outcome == "failed" and result.changes == []  # a change that failed verification is never offered
    assert (project / "calc.py").read_text() == BUGGY


@pytest.mark.parametrize(("steps", "names_edits"), [
    (["nothing to do"], False), (["no change needed"], False), (["No edit: the code is right"], False),
    (["make add() add"], True), (["nothing to do in calc.py", "fix sub()"], True),
])
def test_a_plan_whose_steps_say_nothing_needs_doing_names_no_edits(steps, names_edits):
    from qwen_lsp.engine.loop import _plan_names_edits
    from qwen_lsp.types import Plan

    assert _plan_names_edits(Plan(hypotheses=["h"], evidence=[], steps=steps)) is names_edits
