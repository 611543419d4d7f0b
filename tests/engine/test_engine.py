"""The think→patch engine end to end against the vLLM test double, on a real temp project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qwen_lsp.llm.client import ServerUnavailable
from qwen_lsp.engine.loop import Engine
from qwen_lsp.settings import Settings
from tests.calc_project import BUGGY, PYTEST, make_project
from tests.net import free_port
from tests.engine.helpers import PLAN, failing_test_task, make_engine, script_fix
from tests.vllm_double import Reply, VLLMDouble


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


async def test_plan_then_patch_fixes_a_real_bug_and_writes_nothing(vllm, project, tmp_path):
    script_fix(vllm)
    result = await make_engine(vllm, tmp_path / "cache").fix(failing_test_task(), project)

    assert result.outcome == "fixed", result.error
    assert [c.path for c in result.changes] == ["calc.py"]
    assert result.changes[0].updated == BUGGY.replace("total = a - b", "total = a + b")
    assert "-    total = a - b\n+    total = a + b" in result.changes[0].diff
    assert (project / "calc.py").read_text() == BUGGY  # the engine never writes the workspace
    assert result.plan is not None and result.plan.steps == ["use a + b in add"]
    names = [c.name for c in result.validation.checks]
    assert names == ["parses: calc.py", PYTEST] and result.validation.ok
    assert result.accounting.thinking_calls == 1 and result.accounting.non_thinking_calls == 3


async def test_thinking_plan_then_non_thinking_patches_with_the_card_presets(vllm, project, tmp_path):
    script_fix(vllm)
    await make_engine(vllm, tmp_path / "cache").fix(failing_test_task(), project)
    plan, *patches = vllm.chat_requests()
    assert plan["chat_template_kwargs"] == {"enable_thinking": True, "preserve_thinking": True}
    assert (plan["temperature"], plan["top_p"], plan["top_k"], plan["presence_penalty"]) == (0.6, 0.95, 20, 0.0)
    assert plan["structured_outputs"]["json"]["properties"].keys() >= {"hypotheses", "evidence", "steps"}
    assert plan["tool_choice"] == "none"  # same tools in the prompt, no calls while planning
    for body in patches:
        assert body["chat_template_kwargs"] == {"enable_thinking": False, "preserve_thinking": True}
        assert (body["temperature"], body["top_p"], body["top_k"], body["presence_penalty"]) == (0.7, 0.8, 20, 1.5)
        assert "structured_outputs" not in body


async def test_patch_requests_are_append_only_extensions_of_the_plan_request(vllm, project, tmp_path):
    script_fix(vllm)
    await make_engine(vllm, tmp_path / "cache").fix(failing_test_task(), project)
    bodies = vllm.chat_requests()
    for earlier, later in zip(bodies, bodies[1:]):
        assert later["messages"][: len(earlier["messages"])] == earlier["messages"]
        assert later["tools"] == earlier["tools"]
    plan_message = bodies[1]["messages"][len(bodies[0]["messages"])]
    assert plan_message["role"] == "assistant"
    assert plan_message["reasoning"] == "add() computes a - b; the test expects 5."
    assert "reasoning_content" not in plan_message


async def test_the_double_reports_a_growing_cached_prefix(vllm, project, tmp_path):
    script_fix(vllm)
    result = await make_engine(vllm, tmp_path / "cache").fix(failing_test_task(), project)
    assert result.accounting.cached_tokens > 0
    assert result.accounting.prompt_tokens > result.accounting.cached_tokens


async def test_a_repeated_task_makes_no_thinking_call(vllm, project, tmp_path):
    script_fix(vllm)
    first = await make_engine(vllm, tmp_path / "cache").fix(failing_test_task(), project)
    vllm.reset()
    script_fix(vllm, with_plan=False)
    again = await make_engine(vllm, tmp_path / "cache").fix(failing_test_task(), project)  # a new process would do the same
    assert first.accounting.thinking_calls == 1 and not first.accounting.plan_from_cache
    assert again.accounting.thinking_calls == 0 and again.accounting.plan_from_cache
    assert all(b["chat_template_kwargs"]["enable_thinking"] is False for b in vllm.chat_requests())
    assert again.outcome == "fixed"
    # Only the plan is reused: the first attempt's patch rounds are neither cached nor sent again.
    assert not any(m["role"] == "tool" for m in vllm.chat_requests()[0]["messages"])


async def test_a_changed_file_invalidates_the_cached_plan(vllm, project, tmp_path):
    script_fix(vllm)
    await make_engine(vllm, tmp_path / "cache").fix(failing_test_task(), project)
    (project / "calc.py").write_text(BUGGY.replace("total", "result"))
    vllm.reset()
    script_fix(vllm, name="result")
    again = await make_engine(vllm, tmp_path / "cache").fix(failing_test_task(), project)
    assert again.accounting.thinking_calls == 1 and not again.accounting.plan_from_cache


async def test_an_ambiguous_old_string_is_refused_with_a_helpful_error(vllm, project, tmp_path):
    vllm.script(
        Reply(reasoning="r", content=json.dumps(PLAN)),
        Reply(tool_calls=[("edit_file", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})]),
        Reply(tool_calls=[("edit_file", {"path": "calc.py", "old_string": "    total = a - b", "new_string": "    total = a + b"})]),
        Reply(tool_calls=[("finish", {"summary": "fixed"})]),
    )
    result = await make_engine(vllm, tmp_path / "cache").fix(failing_test_task(), project)
    tool_reply = vllm.chat_requests()[2]["messages"][-1]
    assert tool_reply["role"] == "tool" and tool_reply["content"].startswith("Error:")
    assert "2" in tool_reply["content"] and "line" in tool_reply["content"]  # names both places
    assert result.outcome == "fixed"
    assert result.changes[0].updated.count("a + b") == 1  # sub() left alone


async def test_a_failing_verification_goes_back_to_the_model_and_a_repeat_replans(vllm, project, tmp_path):
    wrong = Reply(tool_calls=[("edit_file", {"path": "calc.py", "old_string": "total = a - b", "new_string": "total = a * b"})])
    vllm.script(
        Reply(reasoning="r1", content=json.dumps(PLAN)),
        wrong,
        Reply(tool_calls=[("finish", {"summary": "try 1"})]),
        Reply(tool_calls=[("finish", {"summary": "try 2"})]),  # same failure again -> re-plan
        Reply(reasoning="r2: it must be a + b", content=json.dumps(PLAN)),
        Reply(tool_calls=[("edit_file", {"path": "calc.py", "old_string": "total = a * b", "new_string": "total = a + b"})]),
        Reply(tool_calls=[("finish", {"summary": "try 3"})]),
    )
    result = await make_engine(vllm, tmp_path / "cache").fix(failing_test_task(), project)
    bodies = vllm.chat_requests()
    after_first_finish = bodies[3]["messages"][-1]
    assert after_first_finish["role"] == "tool" and "Validation FAILED" in after_first_finish["content"]
    assert "assert 6 == 5" in after_first_finish["content"]  # the real pytest output, run in a sandbox
    assert [b["chat_template_kwargs"]["enable_thinking"] for b in bodies] == [True, False, False, False, True, False, False]
    assert result.outcome == "fixed" and result.accounting.thinking_calls == 2


async def test_an_edit_that_breaks_the_syntax_is_reported_in_the_same_round(vllm, project, tmp_path):
    vllm.script(
        Reply(reasoning="r", content=json.dumps(PLAN)),
        Reply(tool_calls=[("edit_file", {"path": "calc.py", "old_string": "total = a - b", "new_string": "total = (a + b"})]),
        Reply(tool_calls=[("edit_file", {"path": "calc.py", "old_string": "total = (a + b", "new_string": "total = a + b"})]),
        Reply(tool_calls=[("finish", {"summary": "done"})]),
    )
    result = await make_engine(vllm, tmp_path / "cache").fix(failing_test_task(), project)
    after_bad_edit = vllm.chat_requests()[2]["messages"][-1]
    assert after_bad_edit["role"] == "tool" and "syntax error" in after_bad_edit["content"]
    after_good_edit = vllm.chat_requests()[3]["messages"][-1]
    assert "syntax error" not in after_good_edit["content"]
    assert result.outcome == "fixed"


async def test_an_edit_that_breaks_the_syntax_is_not_accepted(vllm, project, tmp_path):
    vllm.script(
        Reply(reasoning="r", content=json.dumps(PLAN)),
        Reply(tool_calls=[("edit_file", {"path": "calc.py", "old_string": "total = a - b", "new_string": "total = (a + b"})]),
        Reply(tool_calls=[("finish", {"summary": "done"})]),
        Reply(content="I give up."),
        Reply(content="Really."),
    )
    result = await make_engine(vllm, tmp_path / "cache").fix(failing_test_task(), project)
    assert result.outcome == "failed" and result.changes == []
    assert "syntax error" in (result.error or "")


async def test_server_down_gives_a_clear_error_and_changes_nothing(project, tmp_path):
    port = free_port()
    engine = Engine(Settings(base_url=f"http://127.0.0.1:{port}/v1", cache_dir=tmp_path / "cache", max_retries=0))
    with pytest.raises(ServerUnavailable, match=f"127.0.0.1:{port}.*vllm serve"):
        await engine.fix(failing_test_task(), project)
    assert (project / "calc.py").read_text() == BUGGY


async def test_without_tool_calling_the_engine_falls_back_to_edit_blocks(project, tmp_path):
    with VLLMDouble(tool_parser=False) as double:
        double.script(
            Reply(reasoning="r", content=json.dumps(PLAN)),
            Reply(content="calc.py\n<<<<<<< SEARCH\n    total = a - b\n=======\n    total = a + b\n>>>>>>> REPLACE\n"),
        )
        result = await make_engine(double, tmp_path / "cache").fix(failing_test_task(), project)
        last = double.chat_requests()[-1]
    assert result.outcome == "fixed", result.error
    assert "tools" not in last and "SEARCH" in last["messages"][-1]["content"]


async def test_paths_outside_the_workspace_are_refused(vllm, project, tmp_path):
    vllm.script(
        Reply(reasoning="r", content=json.dumps(PLAN)),
        Reply(tool_calls=[("create_file", {"path": "../evil.py", "content": "x"})]),
        Reply(tool_calls=[("finish", {"summary": "done"})]),
        Reply(tool_calls=[("finish", {"summary": "done"})]),  # the first was answered with the plan's edits
    )
    result = await make_engine(vllm, tmp_path / "cache").fix(failing_test_task(), project)
    assert "outside the workspace" in vllm.chat_requests()[2]["messages"][-1]["content"]
    assert result.outcome == "gave_up" and not (project.parent / "evil.py").exists()


async def test_shell_suggestions_carry_a_risk_label(vllm, project, tmp_path):
    vllm.script(
        Reply(reasoning="r", content=json.dumps(PLAN)),
        Reply(tool_calls=[("suggest_command", {"command": "pip install requests", "reason": "missing module"})]),
        Reply(tool_calls=[("suggest_command", {"command": "rm -rf build", "reason": "stale build"})]),
        Reply(tool_calls=[("finish", {"summary": "install it"})]),
    )
    result = await make_engine(vllm, tmp_path / "cache").fix(failing_test_task(), project)
    labels = [(s.command, s.risk.value) for s in result.suggestions]
    assert labels == [("pip install requests", "network"), ("rm -rf build", "destructive")]
    assert result.suggestions[1].dangers


async def test_every_request_of_a_workspace_carries_one_stable_session_id(vllm, project, tmp_path):
    script_fix(vllm)
    await make_engine(vllm, tmp_path / "cache").fix(failing_test_task(), project)
    chats = [r for r in vllm.requests if r.path.endswith("/chat/completions")]
    ids = {(r.headers.get("x-session-id"), r.body.get("user")) for r in chats}
    assert len(chats) == 4 and len(ids) == 1
    header, user = ids.pop()
    assert header and user is None  # `user` only when the user sets user_id (tests/llm/test_client_team.py)


async def test_reasoning_that_runs_out_of_tokens_falls_back_to_a_non_thinking_plan(vllm, project, tmp_path):
    vllm.script(Reply(reasoning="thinking " * 50, content=None, finish_reason="length"), Reply(content=json.dumps(PLAN)))
    script_fix(vllm, with_plan=False)
    result = await make_engine(vllm, tmp_path / "cache").fix(failing_test_task(), project)
    modes = [b["chat_template_kwargs"]["enable_thinking"] for b in vllm.chat_requests()]
    assert modes == [True, False, False, False, False]
    assert result.outcome == "fixed" and result.plan.steps == ["use a + b in add"]
    assert "reasoning" not in vllm.chat_requests()[2]["messages"][-4]  # nothing from the cut-off thinking leaks
