"""The vLLM test double, driven by the real openai SDK and plain HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.vllm_double import AUTO_TOOL_CHOICE_ERROR, Reply, VLLMDouble, encode, qwen_xml_tool_call

REPO = Path(__file__).resolve().parent.parent
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "edit_file",
            "description": "Replace text in a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "old_string": {"type": "string"}}},
        },
    }
]
USER = [{"role": "user", "content": "Fix the bug in a.py"}]


def client(double: VLLMDouble) -> openai.OpenAI:
    # No retries: a 500 would otherwise be re-sent (and recorded) twice more.
    return openai.OpenAI(base_url=double.base_url, api_key="EMPTY", max_retries=0)


def http(method: str, url: str, payload: Any = None) -> tuple[int, bytes]:
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_models_endpoint_has_vllm_shape(vllm: VLLMDouble) -> None:
    (card,) = client(vllm).models.list().data
    assert card.id == "Qwen/Qwen3.6-27B"
    assert card.owned_by == "vllm"
    assert card.model_extra["max_model_len"] == 262144
    assert card.model_extra["root"] == card.id


def test_non_streaming_reply_with_reasoning_and_recorded_request(vllm: VLLMDouble) -> None:
    vllm.script(Reply("Done.", reasoning="The bug is an off-by-one."))
    response = client(vllm).chat.completions.create(model=vllm.model, messages=USER, temperature=0.6)

    message = response.choices[0].message
    assert response.id.startswith("chatcmpl-")
    assert message.content == "Done."
    assert getattr(message, "reasoning", None) == "The bug is an off-by-one."
    assert message.tool_calls is None
    assert response.choices[0].finish_reason == "stop"
    usage = response.usage
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.prompt_tokens_details.cached_tokens == 0

    (body,) = vllm.chat_requests()
    assert body == {"model": vllm.model, "messages": USER, "temperature": 0.6}
    assert vllm.requests[0].headers["authorization"] == "Bearer EMPTY"


def test_streaming_reasoning_content_and_usage(vllm: VLLMDouble) -> None:
    vllm.script(Reply("All tests pass now.", reasoning="Run the tests, then answer."))
    stream = client(vllm).chat.completions.create(
        model=vllm.model, messages=USER, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)

    assert chunks[0].choices[0].delta.role == "assistant"
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    reasoning = "".join((d.model_extra or {}).get("reasoning") or "" for d in deltas)
    content = "".join(d.content or "" for d in deltas)
    assert reasoning == "Run the tests, then answer."
    assert content == "All tests pass now."
    assert sum(1 for d in deltas if (d.model_extra or {}).get("reasoning")) > 1  # several pieces
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens > 0
    assert vllm.aborted_streams == 0


def test_tool_calls_parsed_by_the_sdk_streaming_and_not(vllm: VLLMDouble) -> None:
    arguments = {"path": "a.py", "old_string": "x = 1"}
    vllm.script(Reply(tool_calls=[("edit_file", arguments)]), Reply(tool_calls=[("edit_file", arguments)]))
    sdk = client(vllm)

    response = sdk.chat.completions.create(model=vllm.model, messages=USER, tools=TOOLS)
    (call,) = response.choices[0].message.tool_calls
    assert response.choices[0].finish_reason == "tool_calls"
    assert response.choices[0].message.content is None
    assert call.id == "call_1" and call.function.name == "edit_file"
    assert json.loads(call.function.arguments) == arguments

    stream = sdk.chat.completions.create(model=vllm.model, messages=USER, tools=TOOLS, stream=True)
    pieces = [tc for chunk in stream for tc in chunk.choices[0].delta.tool_calls or []]
    assert pieces[0].id == "call_2" and pieces[0].function.name == "edit_file"
    assert all(p.id is None for p in pieces[1:])
    assert json.loads("".join(p.function.arguments or "" for p in pieces)) == arguments


def test_cached_tokens_grow_for_an_append_only_conversation(vllm: VLLMDouble) -> None:
    system = {"role": "system", "content": "You are a careful coding agent. " * 20}
    first = [system, *USER]
    second = [*first, {"role": "assistant", "content": "Which test fails?"}, {"role": "user", "content": "test_a"}]
    vllm.script(Reply("Which test fails?"), Reply("Fixed."))
    sdk = client(vllm)

    one = sdk.chat.completions.create(model=vllm.model, messages=first, tools=TOOLS).usage
    two = sdk.chat.completions.create(model=vllm.model, messages=second, tools=TOOLS).usage

    assert one.prompt_tokens_details.cached_tokens == 0
    cached = two.prompt_tokens_details.cached_tokens
    assert cached % vllm.block_size == 0
    # Everything up to the first prompt's generation prompt is shared, in whole blocks.
    assert one.prompt_tokens - 2 * vllm.block_size < cached <= one.prompt_tokens
    assert two.prompt_tokens > one.prompt_tokens


def test_scripted_error_surfaces_as_bad_request(vllm: VLLMDouble) -> None:
    vllm.script(Reply(status=400, error_message="This model's maximum context length is 262144 tokens."))
    with pytest.raises(openai.BadRequestError) as caught:
        client(vllm).chat.completions.create(model=vllm.model, messages=USER)
    assert caught.value.status_code == 400
    assert caught.value.body == {
        "message": "This model's maximum context length is 262144 tokens.",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }


def test_an_unscripted_request_fails_loudly(vllm: VLLMDouble) -> None:
    with pytest.raises(openai.InternalServerError, match="no scripted reply"):
        client(vllm).chat.completions.create(model=vllm.model, messages=USER)


def test_responder_answers_when_the_queue_is_empty(vllm: VLLMDouble) -> None:
    vllm.responder = lambda body: Reply(f"{len(body['messages'])} message(s)")
    response = client(vllm).chat.completions.create(model=vllm.model, messages=USER)
    assert response.choices[0].message.content == "1 message(s)"


def test_unknown_model_is_not_found(vllm: VLLMDouble) -> None:
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client(vllm).chat.completions.create(model="Qwen/Qwen3-8B", messages=USER)


def test_closing_a_stream_early_counts_as_aborted(vllm: VLLMDouble) -> None:
    vllm.script(Reply("word " * 100, chunk_delay=0.02))
    stream = client(vllm).chat.completions.create(model=vllm.model, messages=USER, stream=True)
    for _, _chunk in zip(range(3), stream):
        pass
    stream.close()

    deadline = time.monotonic() + 3
    while vllm.aborted_streams == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert vllm.aborted_streams == 1
    # what other processes (the Neovim end-to-end test) read
    vllm.script(Reply("queued"))
    assert http("GET", f"{vllm.root_url}/_double/stats") == (200, b'{"aborted_streams": 1, "queued": 1}')


def test_without_tool_parser_auto_is_rejected_and_calls_stay_xml_in_content() -> None:
    with VLLMDouble(tool_parser=False, reasoning_parser=False) as double:
        sdk = client(double)
        with pytest.raises(openai.BadRequestError) as caught:
            sdk.chat.completions.create(model=double.model, messages=USER, tools=TOOLS, tool_choice="auto")
        assert caught.value.body["message"] == AUTO_TOOL_CHOICE_ERROR

        double.script(Reply("I'll edit it.", reasoning="Plan.", tool_calls=[("edit_file", {"path": "a.py", "n": 2})]))
        message = sdk.chat.completions.create(model=double.model, messages=USER).choices[0].message
        xml = "<tool_call>\n<function=edit_file>\n<parameter=path>\na.py\n</parameter>\n<parameter=n>\n2\n</parameter>\n</function>\n</tool_call>"
        assert qwen_xml_tool_call("edit_file", {"path": "a.py", "n": 2}) == xml
        # Qwen3.6's generation prompt opens <think>, so only the closing tag is in the output.
        assert message.content == f"Plan.\n</think>\n\nI'll edit it.\n{xml}"
        assert message.tool_calls is None and getattr(message, "reasoning", None) is None


def test_older_vllm_reasoning_content_field() -> None:
    with VLLMDouble(reasoning_field="reasoning_content") as double:
        double.script(Reply("ok", reasoning="why"))
        message = client(double).chat.completions.create(model=double.model, messages=USER).choices[0].message
        assert message.model_extra["reasoning_content"] == "why"
        assert "reasoning" not in message.model_extra


def test_tokenize_matches_the_local_tokenizer_and_can_disagree() -> None:
    text = "def add(a, b):\n    return a + b\n"
    with VLLMDouble(tokenize_offset=3) as double:
        status, raw = http("POST", f"{double.root_url}/tokenize", {"model": double.model, "prompt": text})
        result = json.loads(raw)
        assert status == 200
        assert result["tokens"] == encode(text)
        assert result["count"] == len(encode(text)) + 3
        assert result["max_model_len"] == 262144

        status, raw = http("POST", f"{double.root_url}/tokenize", {"model": double.model, "messages": USER})
        assert status == 200 and json.loads(raw)["count"] > len(encode(USER[0]["content"]))


def test_health_metrics_and_unknown_paths(vllm: VLLMDouble) -> None:
    vllm.script(Reply("hi"))
    client(vllm).chat.completions.create(model=vllm.model, messages=USER)

    assert http("GET", f"{vllm.root_url}/health") == (200, b"")
    status, metrics = http("GET", f"{vllm.root_url}/metrics")
    assert status == 200
    for name in (
        "vllm:prompt_tokens_total",
        "vllm:generation_tokens_total",
        "vllm:prefix_cache_queries_total",
        "vllm:prefix_cache_hits_total",
        "vllm:time_to_first_token_seconds_sum",
    ):
        assert name.encode() in metrics
    assert b'vllm:time_to_first_token_seconds_count{engine="0",model_name="Qwen/Qwen3.6-27B"} 1.0' in metrics
    assert http("GET", f"{vllm.base_url}/nope") == (404, b'{"detail": "Not Found"}')


def test_control_endpoints_script_record_and_reset(vllm: VLLMDouble) -> None:
    replies = [{"content": "first"}, {"content": None, "tool_calls": [{"name": "edit_file", "arguments": {"path": "a.py"}}]}]
    assert http("POST", f"{vllm.root_url}/_double/script", replies) == (200, b'{"queued": 2}')
    sdk = client(vllm)
    assert sdk.chat.completions.create(model=vllm.model, messages=USER).choices[0].message.content == "first"
    (call,) = sdk.chat.completions.create(model=vllm.model, messages=USER, tools=TOOLS).choices[0].message.tool_calls
    assert json.loads(call.function.arguments) == {"path": "a.py"}

    status, raw = http("GET", f"{vllm.root_url}/_double/requests")
    records = json.loads(raw)
    assert status == 200
    assert [(r["method"], r["path"]) for r in records] == [("POST", "/v1/chat/completions")] * 2
    assert records[1]["body"]["tools"] == TOOLS

    http("POST", f"{vllm.root_url}/_double/reset")
    assert vllm.requests == [] and vllm.chat_requests() == []


def test_cli_prints_ready_and_serves(tmp_path: Path) -> None:
    script = tmp_path / "replies.json"  # loaded before READY, so a bad loader fails here
    script.write_text(json.dumps([{"content": "from the script"}]))
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.vllm_double", "--port", "0", "--script", str(script), "--no-tool-parser"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready, base_url = process.stdout.readline().split()
        assert ready == "READY" and base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        status, raw = http("GET", f"{base_url}/models")
        assert status == 200 and json.loads(raw)["data"][0]["id"] == "Qwen/Qwen3.6-27B"
    finally:
        process.terminate()
        assert process.wait(timeout=5) == 0
