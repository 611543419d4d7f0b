"""The reading plan (strategy reading_plan, engine/reading.py) against the vLLM double: the thinking
plan may call read_file and search_code before it answers, nothing else runs, the budget holds, the
prefix stays byte-stable, and the plan cache replays the reads and follows the files they read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qwen_lsp.engine.prompts import PLAN_NOW
from tests.calc_project import BUGGY, FIXED, make_project
from tests.engine.helpers import PLAN, failing_test_task, make_engine
from tests.vllm_double import Reply, VLLMDouble

HELPER = "def scale(x):\n    return x * 2\n"  # a file the failure's context does not show


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "proj")
    (root / "lib").mkdir()
    (root / "lib" / "scale.py").write_text(HELPER)
    return root


def patch_turns() -> list[Reply]:
    return [
        Reply(tool_calls=[("edit_file", {"path": "calc.py", "old_string": "total = a - b", "new_string": "total = a + b"})]),
        Reply(tool_calls=[("finish", {"summary": "add now adds"})]),
    ]


def script(double: VLLMDouble, *plan_turns: Reply) -> None:
    double.script(*plan_turns, *patch_turns())


def read(path: str) -> Reply:
    return Reply(reasoning=f"I should look at {path} first.", tool_calls=[("read_file", {"path": path})])


PLANNED = Reply(reasoning="scale() is not involved; add() subtracts.", content=json.dumps(PLAN))


def engine(double: VLLMDouble, tmp_path: Path, **overrides):
    return make_engine(double, tmp_path / "cache", strategy="reading_plan", **overrides)


def assert_append_only(bodies: list[dict]) -> None:
    """Every request extends the previous one, with the same system message and tools."""
    for earlier, later in zip(bodies, bodies[1:]):
        assert later["messages"][: len(earlier["messages"])] == earlier["messages"]
        assert json.dumps(later["tools"]) == json.dumps(earlier["tools"])
        assert later["messages"][0] == bodies[0]["messages"][0] and later["messages"][0]["role"] == "system"


async def test_the_plan_reads_once_then_plans_and_the_fix_goes_on_after_the_read(vllm, project, tmp_path):
    script(vllm, read("lib/scale.py"), PLANNED)
    result = await engine(vllm, tmp_path).fix(failing_test_task(), project)

    assert result.outcome == "fixed" and result.changes[0].updated == FIXED
    assert result.plan is not None and result.plan.steps == PLAN["steps"]
    a = result.accounting
    assert (a.thinking_calls, a.non_thinking_calls, a.plan_reads) == (2, 2, 1)
    reading, planning, *patches = vllm.chat_requests()
    for body in (reading, planning):  # thinking, tools callable, no structured output (a call would be impossible)
        assert body["chat_template_kwargs"] == {"enable_thinking": True, "preserve_thinking": True}
        assert body["tool_choice"] == "auto" and "structured_outputs" not in body
    assert "read_file or search_code: at most 4 calls" in reading["messages"][-1]["content"]
    asked, answered = planning["messages"][-2:]
    assert asked["reasoning"] == "I should look at lib/scale.py first."  # earlier reasoning goes back
    assert asked["tool_calls"][0]["function"]["name"] == "read_file"
    assert answered["role"] == "tool" and answered["content"].startswith("lib/scale.py (lines 1-2 of 2):")
    plan_message = patches[0]["messages"][len(planning["messages"])]
    assert plan_message["role"] == "assistant" and plan_message["reasoning"] == PLANNED.reasoning
    assert_append_only(vllm.chat_requests())


async def test_an_edit_while_planning_is_refused_and_never_run(vllm, project, tmp_path):
    sneaky = Reply(reasoning="I will just fix it now.", tool_calls=[
        ("edit_file", {"path": "calc.py", "old_string": "total = a - b", "new_string": "total = a * b"}),
        ("create_file", {"path": "pwned.py", "content": "x = 1\n"}),
        ("suggest_command", {"command": "rm -rf build", "reason": "clean"}),
    ])
    script(vllm, sneaky, PLANNED)
    result = await engine(vllm, tmp_path).fix(failing_test_task(), project)

    answers = [m for m in vllm.chat_requests()[1]["messages"] if m["role"] == "tool"]
    assert [m["content"].split(":")[0] for m in answers] == ["Not run"] * 3
    assert "edit_file is not available while planning" in answers[0]["content"]
    # Nothing of it happened: the patch round's edit found the original line; no file made, nothing suggested.
    assert result.outcome == "fixed" and [c.path for c in result.changes] == ["calc.py"]
    assert result.changes[0].updated == FIXED and result.suggestions == []
    assert (project / "calc.py").read_text() == BUGGY and not (project / "pwned.py").exists()
    assert result.accounting.plan_reads == 0


async def test_a_spent_call_budget_still_asks_for_the_plan_with_structured_output(vllm, project, tmp_path):
    greedy = Reply(reasoning="Read everything.", tool_calls=[
        ("read_file", {"path": "lib/scale.py"}), ("search_code", {"pattern": "def add"}), ("read_file", {"path": "test_calc.py"}),
    ])
    script(vllm, greedy, Reply(reasoning="Now the plan.", content=json.dumps(PLAN)))
    result = await engine(vllm, tmp_path, plan_read_calls=2).fix(failing_test_task(), project)

    assert result.outcome == "fixed" and result.accounting.plan_reads == 2
    assert result.accounting.thinking_calls == 2
    reading, planning, *_ = vllm.chat_requests()
    answers = [m["content"] for m in planning["messages"] if m["role"] == "tool"]
    assert answers[0].startswith("lib/scale.py") and answers[1].startswith("calc.py:1: def add(a, b):")
    assert answers[2] == "Not run: the plan's reading budget (2 calls, 8192 tokens) is spent. Answer with the plan JSON now."
    assert planning["messages"][-1] == {"role": "user", "content": PLAN_NOW}
    assert planning["tool_choice"] == "none" and "structured_outputs" in planning  # the same tools, no calls
    assert json.dumps(planning["tools"]) == json.dumps(reading["tools"])
    assert_append_only(vllm.chat_requests())


async def test_a_spent_token_budget_cuts_the_read_and_asks_for_the_plan(vllm, project, tmp_path):
    (project / "lib" / "big.py").write_text("".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(300)))
    script(vllm, read("lib/big.py"), Reply(reasoning="Now the plan.", content=json.dumps(PLAN)))
    result = await engine(vllm, tmp_path, plan_read_tokens=200).fix(failing_test_task(), project)

    assert result.outcome == "fixed" and result.accounting.plan_reads == 1
    planning = vllm.chat_requests()[1]
    answer = planning["messages"][-2]["content"]
    assert answer.startswith("lib/big.py (lines 1-400 of 600):") and "def f199" not in answer
    assert answer.endswith("read the rest in the patch rounds if needed]")
    assert "structured_outputs" in planning and planning["messages"][-1]["content"] == PLAN_NOW


async def test_a_read_outside_the_workspace_is_refused_like_in_the_patch_rounds(vllm, project, tmp_path):
    (tmp_path / "secret.txt").write_text("password=hunter2\n")
    script(vllm, read("../secret.txt"), PLANNED)
    result = await engine(vllm, tmp_path).fix(failing_test_task(), project)
    answer = vllm.chat_requests()[1]["messages"][-1]["content"]
    assert answer.startswith("Error:") and "outside the workspace" in answer and "hunter2" not in answer
    assert result.outcome == "fixed"


async def test_a_cached_reading_plan_is_replayed_without_reading_or_thinking(vllm, project, tmp_path):
    script(vllm, read("lib/scale.py"), PLANNED)
    first = await engine(vllm, tmp_path).fix(failing_test_task(), project)
    first_patch = vllm.chat_requests()[2]
    vllm.reset()
    vllm.script(*patch_turns())
    again = await engine(vllm, tmp_path).fix(failing_test_task(), project)

    assert first.accounting.plan_reads == 1 and not first.accounting.plan_from_cache
    a = again.accounting
    assert (a.plan_from_cache, a.thinking_calls, a.plan_reads) == (True, 0, 0) and again.outcome == "fixed"
    # The same conversation as the first time, reads included: the same prefix for the server's cache.
    assert vllm.chat_requests()[0]["messages"] == first_patch["messages"]
    assert all(b["chat_template_kwargs"]["enable_thinking"] is False for b in vllm.chat_requests())


async def test_a_plan_made_another_way_is_not_replayed(vllm, project, tmp_path):
    """A default plan (no reads) answers a default request only: asked with reading_plan, the plan is
    made again with its reads; each then replays its own."""
    script(vllm, PLANNED)
    await make_engine(vllm, tmp_path / "cache", strategy="default").fix(failing_test_task(), project)
    vllm.reset()
    script(vllm, read("lib/scale.py"), PLANNED)
    reading = await engine(vllm, tmp_path).fix(failing_test_task(), project)
    assert (reading.accounting.plan_from_cache, reading.accounting.plan_reads) == (False, 1)

    for strategy in ("default", "reading_plan"):
        vllm.reset()
        vllm.script(*patch_turns())
        again = await make_engine(vllm, tmp_path / "cache", strategy=strategy).fix(failing_test_task(), project)
        assert (again.accounting.plan_from_cache, again.accounting.thinking_calls) == (True, 0), strategy


@pytest.mark.parametrize("strategy, replans", [("reading_plan", True), ("default", False)])
async def test_a_change_to_a_file_the_plan_read_invalidates_it(vllm, project, tmp_path, strategy, replans):
    """The control: the default plan never read lib/scale.py, so its change does not matter to it."""
    plan_turns = (read("lib/scale.py"), PLANNED) if strategy == "reading_plan" else (PLANNED,)
    script(vllm, *plan_turns)
    await make_engine(vllm, tmp_path / "cache", strategy=strategy).fix(failing_test_task(), project)
    (project / "lib" / "scale.py").write_text(HELPER.replace("2", "3"))
    vllm.reset()
    script(vllm, *(plan_turns if replans else ()))
    again = await make_engine(vllm, tmp_path / "cache", strategy=strategy).fix(failing_test_task(), project)

    assert again.outcome == "fixed"
    assert again.accounting.plan_from_cache is not replans
    assert again.accounting.plan_reads == (1 if replans else 0)
    if replans:  # the new read sees the new text
        assert "return x * 3" in vllm.chat_requests()[1]["messages"][-1]["content"]


async def test_without_thinking_tokens_left_the_plan_is_asked_without_thinking(vllm, project, tmp_path):
    script(vllm, Reply(content=None, reasoning="hmm " * 50, finish_reason="length"),
           Reply(content=json.dumps(PLAN)))
    result = await engine(vllm, tmp_path).fix(failing_test_task(), project)
    reading, planning, *_ = vllm.chat_requests()
    assert planning["chat_template_kwargs"]["enable_thinking"] is False and "structured_outputs" in planning
    assert planning["messages"][-1]["content"] == PLAN_NOW
    assert result.outcome == "fixed" and result.accounting.thinking_calls == 1


async def test_a_call_name_with_escape_sequences_is_never_shown_while_planning(vllm, project, tmp_path):
    """The progress line names the tool; a name is whatever the model wrote, so only our tools' names
    reach the spinner or the editor's status, never the model's escape sequences."""
    hostile = "read_file\x1b]0;pwned\x07\x1b[2J"
    script(vllm, Reply(tool_calls=[(hostile, {"path": "lib/scale.py"}), ("read_file", {"path": "lib/scale.py"})]),
           PLANNED)
    said: list[str] = []
    result = await engine(vllm, tmp_path).fix(failing_test_task(), project, progress=said.append)

    assert result.outcome == "fixed" and result.accounting.plan_reads == 1  # the real read ran; the other did not
    assert "planning: a call to an unknown tool" in said and "planning: read_file" in said
    assert not any("\x1b" in line or "\x07" in line for line in said)
