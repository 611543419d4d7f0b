"""Engine.refine: a follow-up on a proposed change continues the same conversation, append-only,
without a new plan and without touching the plan cache; its diff is against the file as first read."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwen_lsp.engine.loop import KEPT_RUNS, RunGone
from qwen_lsp.types import Task, TaskKind
from tests.calc_project import BUGGY, make_project
from tests.engine.helpers import make_engine, script_fix
from tests.vllm_double import Reply


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


def _state_files(cache: Path) -> dict[str, bytes]:
    return {str(p.relative_to(cache)): p.read_bytes() for p in sorted((cache / "state").rglob("*")) if p.is_file()}


async def test_a_refine_is_an_append_only_extension_and_leaves_the_plan_cache(vllm, project, tmp_path):
    cache = tmp_path / "cache"
    engine = make_engine(vllm, cache, verify=False)
    task = Task(kind=TaskKind.instruction, description="make add add", path="calc.py", start_line=1, end_line=3)
    script_fix(vllm)
    first = await engine.fix(task, project)
    assert first.fix_id and first.changes[0].updated == BUGGY.replace("total = a - b", "total = a + b")
    before = vllm.chat_requests()
    plan_cache = _state_files(cache)

    vllm.script(
        Reply(tool_calls=[("edit_file", {"path": "calc.py", "old_string": "total = a + b", "new_string": "total = b + a"})]),
        Reply(tool_calls=[("finish", {"summary": "b first, as asked"})]),
    )
    refined = await engine.refine(first.fix_id, "not like that: put b first")
    after = vllm.chat_requests()[len(before):]

    last = before[-1]["messages"]
    assert after[0]["messages"][: len(last)] == last  # the prefix-share check: the same bytes, then more
    added = after[0]["messages"][len(last):]
    assert added[-1]["role"] == "user" and "not like that: put b first" in added[-1]["content"]
    assert all(body["chat_template_kwargs"]["enable_thinking"] is False for body in after)  # no new plan
    assert refined.accounting.thinking_calls == 0 and refined.accounting.non_thinking_calls == 2
    assert _state_files(cache) == plan_cache  # the plan cache is unchanged
    (change,) = refined.changes
    assert change.original == BUGGY and change.updated == BUGGY.replace("total = a - b", "total = b + a")
    assert "-    total = a - b\n+    total = b + a" in change.diff  # against the file as first read
    assert (project / "calc.py").read_text() == BUGGY and refined.fix_id == first.fix_id


async def test_only_the_last_runs_are_kept(vllm, project, tmp_path):
    engine = make_engine(vllm, tmp_path / "cache", verify=False)
    with pytest.raises(RunGone):
        await engine.refine("nope", "anything")
    engine.finished = {str(n): object() for n in range(KEPT_RUNS)}  # type: ignore[misc]
    script_fix(vllm)
    result = await engine.fix(Task(kind=TaskKind.instruction, description="make add add", path="calc.py"), project)
    assert len(engine.finished) == KEPT_RUNS and result.fix_id in engine.finished and "0" not in engine.finished
