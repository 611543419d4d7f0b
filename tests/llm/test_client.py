"""The model client against the vLLM test double: what it sends and how it reads replies."""

from __future__ import annotations

import asyncio
import json
import tempfile

import pytest

from qwen_lsp.llm.client import ModelClient, ModelServerError, ReasoningExhausted, ServerUnavailable, ToolsUnsupported
from qwen_lsp.settings import Settings
from tests.net import free_port
from tests.vllm_double import Reply, VLLMDouble

MESSAGES = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]
TOOL = {"type": "function", "function": {"name": "finish", "parameters": {"type": "object", "properties": {}}}}


def client_for(double: VLLMDouble, **overrides) -> ModelClient:
    return ModelClient(Settings(base_url=double.base_url, cache_dir=tempfile.mkdtemp(prefix="qwen-client-test-"), max_retries=0, **overrides))


async def test_thinking_call_sends_the_thinking_preset_and_template_switches(vllm):
    vllm.script(Reply(reasoning="let me think", content='{"steps": []}'))
    reply = await client_for(vllm).complete(MESSAGES, thinking=True, max_tokens=100)
    body = vllm.chat_requests()[0]
    assert body["chat_template_kwargs"] == {"enable_thinking": True, "preserve_thinking": True}
    assert (body["temperature"], body["top_p"], body["top_k"], body["min_p"], body["presence_penalty"]) == (
        0.6, 0.95, 20, 0.0, 0.0)
    assert body["stream"] is True and body["model"] == "Qwen/Qwen3.6-27B"
    assert reply.reasoning == "let me think" and reply.content == '{"steps": []}'
    assert reply.prompt_tokens > 0 and reply.completion_tokens > 0


async def test_non_thinking_call_sends_the_non_thinking_preset(vllm):
    vllm.script(Reply(content="ok"))
    await client_for(vllm).complete(MESSAGES, thinking=False, max_tokens=100)
    body = vllm.chat_requests()[0]
    assert body["chat_template_kwargs"] == {"enable_thinking": False, "preserve_thinking": True}
    assert (body["temperature"], body["top_p"], body["top_k"], body["min_p"], body["presence_penalty"]) == (
        0.7, 0.8, 20, 0.0, 1.5)


async def test_structured_output_goes_in_structured_outputs_not_guided_json(vllm):
    vllm.script(Reply(content="{}"))
    schema = {"type": "object"}
    await client_for(vllm).complete(MESSAGES, thinking=True, max_tokens=10, json_schema=schema)
    body = vllm.chat_requests()[0]
    assert body["structured_outputs"] == {"json": schema}
    assert "guided_json" not in body


async def test_max_tokens_is_bounded_by_max_model_len():
    with VLLMDouble(max_model_len=300) as double:
        double.script(Reply(content="ok"))
        await client_for(double).complete(MESSAGES, thinking=False, max_tokens=10_000)
        sent = double.chat_requests()[0]["max_tokens"]
        assert 0 < sent < 300


async def test_tool_calls_are_assembled_from_stream_deltas(vllm):
    vllm.script(Reply(tool_calls=[("edit_file", {"path": "a.py", "old_string": "x", "new_string": "y"})]))
    reply = await client_for(vllm).complete(MESSAGES, thinking=False, max_tokens=100, tools=[TOOL])
    assert [c.name for c in reply.tool_calls] == ["edit_file"]
    assert json.loads(reply.tool_calls[0].arguments) == {"path": "a.py", "old_string": "x", "new_string": "y"}
    assert vllm.chat_requests()[0]["tool_choice"] == "auto"
    message = reply.assistant_message()
    assert message["tool_calls"][0]["function"]["name"] == "edit_file"


async def test_older_servers_reasoning_content_field_is_read():
    with VLLMDouble(reasoning_field="reasoning_content") as double:
        double.script(Reply(reasoning="old field", content="answer"))
        reply = await client_for(double).complete(MESSAGES, thinking=True, max_tokens=100)
    assert reply.reasoning == "old field" and reply.content == "answer"
    assert reply.assistant_message()["reasoning"] == "old field"  # sent back as `reasoning`
    assert "reasoning_content" not in reply.assistant_message()


async def test_inline_thinking_never_leaks_into_content():
    with VLLMDouble(reasoning_parser=False) as double:
        double.script(Reply(reasoning="secret plan", content="the answer"))
        reply = await client_for(double).complete(MESSAGES, thinking=True, max_tokens=100)
    assert reply.content == "the answer"
    assert "secret plan" in reply.reasoning and "think>" not in reply.content


async def test_xml_tool_calls_in_content_are_recovered_without_a_tool_parser():
    with VLLMDouble(tool_parser=False) as double:
        double.script(Reply(tool_calls=[("finish", {"summary": "done"})]))
        reply = await client_for(double).complete(MESSAGES, thinking=False, max_tokens=100)
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [("finish", {"summary": "done"})]
    assert "<tool_call>" not in reply.content


async def test_auto_tool_choice_refusal_is_reported_as_tools_unsupported():
    with VLLMDouble(tool_parser=False) as double:
        with pytest.raises(ToolsUnsupported, match="enable-auto-tool-choice"):
            await client_for(double).complete(MESSAGES, thinking=False, max_tokens=10, tools=[TOOL])


async def test_reasoning_that_runs_out_of_tokens_is_a_clear_failure(vllm):
    vllm.script(Reply(reasoning="thinking forever", content=None, finish_reason="length"))
    with pytest.raises(ReasoningExhausted) as err:
        await client_for(vllm).complete(MESSAGES, thinking=True, max_tokens=5)
    assert "thinking" in str(err.value)


async def test_server_error_is_explained_with_the_status(vllm):
    vllm.script(Reply(status=500, error_message="engine dead"))
    with pytest.raises(ModelServerError, match="HTTP 500: engine dead"):
        await client_for(vllm).complete(MESSAGES, thinking=False, max_tokens=5)


async def test_server_5xx_is_retried_by_the_sdk(vllm):
    vllm.script(Reply(status=503, error_message="busy"), Reply(content="second try"))
    reply = await ModelClient(
        Settings(base_url=vllm.base_url, cache_dir=tempfile.mkdtemp(prefix="qwen-client-test-"), max_retries=1)
    ).complete(MESSAGES, thinking=False, max_tokens=5)
    assert reply.content == "second try"
    assert len(vllm.chat_requests()) == 2


async def test_server_down_names_the_url_and_how_to_start_vllm():
    port = free_port()  # nothing listens there
    client = ModelClient(Settings(base_url=f"http://127.0.0.1:{port}/v1", cache_dir=tempfile.mkdtemp(prefix="qwen-client-test-"), max_retries=0))
    with pytest.raises(ServerUnavailable) as err:
        await client.complete(MESSAGES, thinking=False, max_tokens=5)
    assert f"127.0.0.1:{port}" in str(err.value) and "vllm serve Qwen/Qwen3.6-27B" in str(err.value)


async def test_cancelling_the_call_closes_the_stream(vllm):
    vllm.script(Reply(content=" ".join(["word"] * 200), chunk_delay=0.02))
    task = asyncio.create_task(client_for(vllm).complete(MESSAGES, thinking=False, max_tokens=500))
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(50):
        if vllm.aborted_streams:
            break
        await asyncio.sleep(0.05)
    assert vllm.aborted_streams == 1


async def test_session_id_is_sent_for_affinity_routers(vllm):
    vllm.script(Reply(content="ok"))
    await client_for(vllm, session_id="fix-42").complete(MESSAGES, thinking=False, max_tokens=5)
    request = [r for r in vllm.requests if r.path.endswith("/chat/completions")][0]
    # `user` is a developer's own id (user_id), never the session: see tests/llm/test_client_team.py
    assert request.headers["x-session-id"] == "fix-42" and "user" not in request.body


async def test_an_http_server_gets_a_client_that_never_speaks_tls_and_https_keeps_verified_certificates():
    from qwen_lsp.llm.client import _plain_http_client

    plain = _plain_http_client("http://127.0.0.1:8000/v1")
    assert plain is not None and plain.follow_redirects is False  # a redirect to https:// is never followed
    await plain.aclose()
    assert _plain_http_client("https://models.example.com/v1") is None  # the SDK's client, CA bundle and all


def test_with_a_proxy_configured_an_http_server_keeps_the_sdks_verifying_client(monkeypatch):
    from qwen_lsp.llm.client import _plain_http_client

    monkeypatch.setenv("HTTPS_PROXY", "https://proxy.example.com:3128")  # TLS to the proxy: verified
    assert _plain_http_client("http://127.0.0.1:8000/v1") is None
