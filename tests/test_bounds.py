"""Model output is handled within bounds (issue 13, classes 5 and 6): a tool call cut off by
max_tokens is never replayed, a rejected request is not an outage, and every answer, edit,
file and fix has a limit that is said out loud when it is hit."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time

import pytest

from qwen_lsp.engine.validate import error_count
from qwen_lsp.llm.client import ModelClient, RequestRejected, ServerUnavailable
from qwen_lsp.settings import Limits, Settings
from tests.calc_project import BUGGY, make_project
from tests.qfix.helpers import BUGGY as SCRIPT
from tests.qfix.helpers import QFIX
from tests.engine.helpers import PLAN, failing_test_task, make_engine
from tests.vllm_double import Reply, VLLMDouble


@pytest.fixture
def project(tmp_path):
    return make_project(tmp_path / "proj")


CUT_OFF_EDIT = '{"path": "calc.py", "old_string": "    total = a - b", "new_string": "    total = a +'


def _edit(new: str = "    total = a + b") -> Reply:
    return Reply(tool_calls=[("edit_file", {"path": "calc.py", "old_string": "    total = a - b", "new_string": new})])


FINISH = Reply(tool_calls=[("finish", {"summary": "add now adds"})])


def _replayed_arguments(double: VLLMDouble) -> list[str]:
    return [call["function"]["arguments"] for body in double.chat_requests() for m in body["messages"]
            if m.get("role") == "assistant" for call in m.get("tool_calls") or []]


# -- class 5: a malformed tool call ------------------------------------------------------------------


def test_the_double_rejects_broken_tool_call_arguments_like_vllm(vllm):
    client = ModelClient(Settings(base_url=vllm.base_url, max_retries=0))
    history = [{"role": "user", "content": "fix it"},
               {"role": "assistant", "content": "", "tool_calls": [
                   {"id": "c1", "type": "function", "function": {"name": "edit_file", "arguments": CUT_OFF_EDIT}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "Error"}]
    with pytest.raises(RequestRejected, match="HTTP 400.*Invalid JSON in the arguments"):
        asyncio.run(client.complete(history, thinking=False, max_tokens=100))


async def test_a_tool_call_cut_off_by_max_tokens_is_not_replayed_and_the_fix_goes_on(vllm, project, tmp_path):
    vllm.script(
        Reply(reasoning="r", content=json.dumps(PLAN)),
        Reply(tool_calls=[("edit_file", CUT_OFF_EDIT)], finish_reason="length"),
        _edit(),
        FINISH,
    )
    result = await make_engine(vllm, tmp_path / "cache").fix(failing_test_task(), project)

    assert result.outcome == "fixed", result.error  # every later request was accepted (the double 400s otherwise)
    assert all(isinstance(json.loads(a), dict) for a in _replayed_arguments(vllm))
    after_cut = vllm.chat_requests()[2]["messages"]
    assert after_cut[-2]["role"] == "assistant" and "tool_calls" not in after_cut[-2]
    assert after_cut[-1]["role"] == "user" and "edit_file call was cut off at the answer's token limit" in after_cut[-1]["content"]
    assert result.changes[0].updated == BUGGY.replace("total = a - b", "total = a + b")


async def test_a_cut_off_call_after_good_ones_keeps_the_good_ones(vllm, project, tmp_path):
    vllm.script(
        Reply(reasoning="r", content=json.dumps(PLAN)),
        Reply(tool_calls=[("read_file", {"path": "calc.py"}), ("edit_file", CUT_OFF_EDIT)], finish_reason="length"),
        _edit(),
        FINISH,
    )
    result = await make_engine(vllm, tmp_path / "cache").fix(failing_test_task(), project)
    assert result.outcome == "fixed", result.error
    messages = vllm.chat_requests()[2]["messages"]
    assert [m["role"] for m in messages[-3:]] == ["assistant", "tool", "user"]
    assert [c["function"]["name"] for c in messages[-3]["tool_calls"]] == ["read_file"]


def test_qfix_reports_a_rejected_request_as_a_request_error_not_an_outage(tmp_path, vllm):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "script.py").write_text(SCRIPT)
    vllm.script(Reply(status=400, error_message="Invalid JSON in the arguments of tool call 'call_7'"))
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "QWEN_LSP_BASE_URL": vllm.base_url,
           "QWEN_LSP_CACHE_DIR": str(tmp_path / "cache"), "QWEN_LSP_MAX_RETRIES": "0",
           "QFIX_STATE_DIR": str(tmp_path / "state"), "PYTHONPATH": os.environ.get("PYTHONPATH", ""), "QFIX_WARM": "0"}
    proc = subprocess.run([QFIX, "--json", "--", "python", "script.py"], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 4, proc.stderr
    assert "qfix: request error: The model server at" in proc.stderr and "is up but rejected" in proc.stderr
    assert "Cannot reach" not in proc.stderr and json.loads(proc.stdout)["outcome"] == "error"


# -- class 6: limits -------------------------------------------------------------------------------------


async def test_an_edit_over_the_size_limit_is_refused_to_the_model_and_nothing_changes(vllm, project, tmp_path):
    vllm.script(
        Reply(reasoning="r", content=json.dumps(PLAN)),
        _edit("    total = a + b  # " + "x" * 5000),
        Reply(tool_calls=[("create_file", {"path": "big.py", "content": "y = 1\n" * 1000})]),
        FINISH,
        FINISH,  # the first finish without a change is answered with the plan's edits
    )
    engine = make_engine(vllm, tmp_path / "cache", limits=Limits(edit_max_bytes=4000))
    result = await engine.fix(failing_test_task(), project)
    replies = [m["content"] for m in vllm.chat_requests()[3]["messages"] if m["role"] == "tool"]
    assert "one edit may add at most 4000" in replies[0] and "one edit may add at most 4000" in replies[1]
    assert result.outcome == "gave_up" and result.changes == []


async def test_a_file_over_the_size_limit_is_never_produced(vllm, project, tmp_path):
    vllm.script(
        Reply(reasoning="r", content=json.dumps(PLAN)),
        _edit("    total = a + b\n" + "    # padding\n" * 200),
        FINISH,
        FINISH,  # the first finish without a change is answered with the plan's edits
    )
    engine = make_engine(vllm, tmp_path / "cache", limits=Limits(file_max_bytes=2000))
    result = await engine.fix(failing_test_task(), project)
    tool = [m["content"] for m in vllm.chat_requests()[2]["messages"] if m["role"] == "tool"][-1]
    assert "calc.py would be" in tool and "files may be at most 2000" in tool
    assert result.changes == []


async def test_a_stream_that_keeps_trickling_is_stopped_by_the_fix_deadline(vllm, project, tmp_path):
    vllm.script(
        Reply(reasoning="r", content=json.dumps(PLAN)),
        Reply(content="still going " * 200, chunk_delay=0.1),  # ~40 s, never silent for long
    )
    engine = make_engine(vllm, tmp_path / "cache", limits=Limits(fix_deadline_seconds=3, stream_idle_seconds=60))
    result = await engine.fix(failing_test_task(), project)
    assert result.outcome == "failed" and result.changes == []
    assert result.error == "stopped: the fix took longer than 3 s (limits.fix_deadline_seconds)"
    await _wait(lambda: vllm.aborted_streams == 1)  # the stream was closed, so vLLM stops generating


async def test_a_silent_server_is_given_up_on_after_the_idle_timeout(vllm, tmp_path):
    vllm.script(Reply(content="late " * 5, chunk_delay=30))
    settings = Settings(base_url=vllm.base_url, cache_dir=tmp_path, max_retries=0, limits=Limits(stream_idle_seconds=1))
    client = ModelClient(settings)
    try:
        with pytest.raises(ServerUnavailable, match=r"silent for 1 s"):
            await client.complete([{"role": "user", "content": "hi"}], thinking=False, max_tokens=100)
    finally:
        await client.close()


async def test_an_answer_over_the_byte_limit_is_cut_off_as_if_by_max_tokens(vllm, tmp_path):
    vllm.script(Reply(content="word " * 2000))
    settings = Settings(base_url=vllm.base_url, cache_dir=tmp_path, max_retries=0, limits=Limits(answer_max_bytes=500))
    client = ModelClient(settings)
    try:
        answer = await client.complete([{"role": "user", "content": "hi"}], thinking=False, max_tokens=100)
    finally:
        await client.close()
    assert answer.finish_reason == "length" and 500 < len(answer.content) < 1000


def test_the_parse_check_is_bounded_on_pathological_input():
    # tree-sitter's error recovery: 4,000 lines opening unterminated comments take ~10 s to parse in full.
    assert error_count("/* c\n" * 4000, "javascript", budget_seconds=0.5) is None  # not checked, not failed
    assert error_count("let x = 1;\n" * 4000, "javascript", budget_seconds=0.5) == 0
    assert error_count("let x = ;\n", "javascript") == 1


def test_limits_have_sane_defaults():
    limits = Settings().limits
    assert limits.fix_deadline_seconds == 1200 and limits.stream_idle_seconds <= 180
    assert limits.edit_max_bytes < 10_000_000 and limits.file_max_bytes < 10_000_000


async def _wait(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)
