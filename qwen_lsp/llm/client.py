"""The model client: the openai SDK against vLLM's OpenAI-compatible server.

Two kinds of call, both with `preserve_thinking` so earlier reasoning stays in
the prompt (and the prompt prefix stays byte-stable for prefix caching):
thinking (`enable_thinking: true`, the card's precise-coding preset) and
non-thinking (`enable_thinking: false`, the card's non-thinking preset).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from typing import Any

import openai
from openai import AsyncOpenAI
from pydantic import BaseModel, Field

from qwen_lsp.llm import calllog
from qwen_lsp.llm.parsing import parse_xml_tool_calls, split_reasoning
from qwen_lsp.settings import SamplingPreset, Settings
from qwen_lsp.llm.tokens import count_tokens
from qwen_lsp.sanitize import valid_unicode

# Both routes of the README: a GPU that fits vLLM, or llama.cpp through serve-local on anything else.
SERVER_HINT = (
    "Start one with: vllm serve Qwen/Qwen3.6-27B --max-model-len 262144 --reasoning-parser qwen3 "
    "--enable-auto-tool-choice --tool-call-parser qwen3_coder  (a big GPU), or qwen-lsp serve-local "
    "--model FILE.gguf  (llama.cpp; CPU, Mac or a small GPU); or set QWEN_LSP_BASE_URL"
)


class ModelServerError(Exception):
    """A failure talking to the model server; the message says what to do."""


class ServerUnavailable(ModelServerError):
    pass


class ReasoningExhausted(ModelServerError):
    """Thinking used every token and never closed: there is no answer to use."""


class ToolsUnsupported(ModelServerError):
    """The server refused tool calling (vLLM without --enable-auto-tool-choice)."""


class RequestRejected(ModelServerError):
    """The server is up and refused this request (HTTP 4xx): a bad request, key or model name,
    not an outage. Retrying the same request cannot help."""


class ToolCall(BaseModel):
    id: str
    name: str
    arguments: str  # JSON text, as the server sent it


class Completion(BaseModel):
    content: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    thinking: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cached_tokens_reported: bool = False  # vLLM sends them only with --enable-prompt-tokens-details
    usage_counted_locally: bool = False  # the stream had no usage (llama.cpp): counted with our tokenizer
    tool_calls_from_text: bool = False  # recovered from XML in content: the server has no tool parser
    reasoning_from_text: bool = False  # <think> text in content: the server has no reasoning parser
    ttft: float | None = None
    seconds: float = 0.0

    def assistant_message(self) -> dict[str, Any]:
        """The message to append to the conversation: reasoning goes back in `reasoning`
        (vLLM drops `reasoning_content` on input)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.reasoning:
            message["reasoning"] = self.reasoning
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return message


@dataclass(frozen=True)
class ChatRequest:
    """What one chat completion asks of the model: everything that shapes the request body."""

    messages: list[dict[str, Any]]
    thinking: bool
    max_tokens: int
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | None = None
    json_schema: dict[str, Any] | None = None


@dataclass
class StreamProgress:
    """How far one streamed call has got, readable while it runs: a caller whose own deadline cut the
    call off can say what happened (no answer yet, or still streaming) instead of guessing."""

    started: float | None = None  # monotonic: the request was sent
    first_token: float | None = None  # seconds after `started`
    chunks: int = 0
    nbytes: int = 0


class ServerInfo(BaseModel):
    model: str
    max_model_len: int | None = None
    owned_by: str | None = None  # "qwen-lsp serve-local (llama.cpp)" for serve-local, "vllm" for vLLM


class ModelClient:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._oai = AsyncOpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key,
            # read: the longest silence between two streamed chunks (a silent server is given up on);
            # a stream that keeps trickling is bounded by the answer size and the engine's deadline.
            timeout=openai.Timeout(
                settings.request_timeout, connect=settings.connect_timeout,
                read=min(settings.request_timeout, settings.limits.stream_idle_seconds),
            ),
            max_retries=settings.max_retries,  # SDK retries connection errors, 408/429/5xx with backoff
            http_client=_plain_http_client(settings.base_url),
        )
        self._info: ServerInfo | None = None

    async def close(self) -> None:
        await self._oai.close()

    @property
    def known_info(self) -> ServerInfo | None:
        """What `info` learnt, without asking: None until the server has answered once."""
        return self._info

    async def info(self) -> ServerInfo:
        """Model id and max_model_len from GET /v1/models (asked once)."""
        if self._info is None:
            try:
                page = await self._oai.models.list()
            except openai.APIError as exc:
                raise self._explain(exc, "GET /models") from exc
            models = list(page.data)
            if not models and not self.settings.model:
                raise ModelServerError(f"The server at {self.settings.base_url} serves no model. {SERVER_HINT}")
            chosen = next((m for m in models if m.id == self.settings.model), models[0] if models else None)
            max_len = (chosen.model_extra or {}).get("max_model_len") if chosen else None
            model = self.settings.model or (chosen.id if chosen else "")
            self._info = ServerInfo(model=model, max_model_len=max_len, owned_by=getattr(chosen, "owned_by", None))
        return self._info

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        thinking: bool,
        max_tokens: int,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | None = None,
        json_schema: dict[str, Any] | None = None,
        fix_id: str | None = None,
        session_id: str | None = None,
        progress: StreamProgress | None = None,
    ) -> Completion:
        """One streamed chat completion, logged to calls.jsonl. Cancelling the
        awaiting task closes the stream, which makes vLLM abort the request.
        `progress`, when given, follows the stream as it arrives."""
        # Text that is not valid Unicode (a latin-1 file via git) cannot be encoded: U+FFFD for its bytes.
        request = ChatRequest(valid_unicode(messages), thinking, max_tokens, tools, tool_choice, json_schema)
        started = time.monotonic()
        completion = Completion(thinking=thinking)
        outcome = "cancelled"
        try:
            session = self.settings.session_id or session_id
            completion = _finish(await self._stream(request, completion, session, progress or StreamProgress()))
            outcome = "ok"
            return completion
        except ModelServerError as exc:
            outcome = type(exc).__name__
            raise
        finally:
            completion.seconds = time.monotonic() - started
            calllog.append(
                self.settings.cache_dir,
                calllog.CallRecord(
                    mode="thinking" if thinking else "non-thinking",
                    fix_id=fix_id,
                    prompt_tokens=completion.prompt_tokens,
                    completion_tokens=completion.completion_tokens,
                    cached_tokens=completion.cached_tokens,
                    ttft=completion.ttft,
                    seconds=completion.seconds,
                    outcome=outcome,
                ),
            )

    async def _stream(self, request: ChatRequest, completion: Completion, session: str | None,
                      progress: StreamProgress) -> Completion:
        info = await self.info()
        preset = self.settings.thinking if request.thinking else self.settings.non_thinking
        kwargs = self._request(request, info, preset)
        if session:
            # A session-affinity router keeps one workspace on one replica's prefix cache.
            kwargs["user"] = session
            kwargs["extra_headers"] = {"x-session-id": session}
        started = progress.started = time.monotonic()
        try:
            stream = await self._oai.chat.completions.create(**kwargs)
        except openai.APIError as exc:
            raise self._explain(exc, "POST /chat/completions") from exc
        try:
            completion = await _collect(stream, completion, progress, self.settings.limits.answer_max_bytes)
            if completion.usage_counted_locally:
                _count_usage(completion, request)
            return completion
        except openai.APIError as exc:
            raise self._explain(exc, "streaming /chat/completions") from exc
        finally:
            await stream.close()

    def _request(self, request: ChatRequest, info: ServerInfo, preset: SamplingPreset) -> dict[str, Any]:
        extra_body: dict[str, Any] = {
            "top_k": preset.top_k,
            "min_p": preset.min_p,
            "chat_template_kwargs": {"enable_thinking": request.thinking, "preserve_thinking": True},
        }
        if request.json_schema is not None:
            extra_body["structured_outputs"] = {"json": request.json_schema}
        kwargs: dict[str, Any] = {
            "model": info.model,
            "messages": request.messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": preset.temperature,
            "top_p": preset.top_p,
            "presence_penalty": preset.presence_penalty,
            "max_tokens": self._bounded(request, info),
            "extra_body": extra_body,
        }
        if request.tools:
            kwargs["tools"] = request.tools
            kwargs["tool_choice"] = request.tool_choice or "auto"
        return kwargs

    @staticmethod
    def _bounded(request: ChatRequest, info: ServerInfo) -> int:
        """max_tokens that still fits in max_model_len after the prompt (vLLM rejects overflows)."""
        if not info.max_model_len:
            return request.max_tokens
        return max(1, min(request.max_tokens, info.max_model_len - _prompt_tokens(request) - 64))

    def _explain(self, exc: openai.APIError, what: str) -> ModelServerError:
        url = self.settings.base_url
        if isinstance(exc, openai.APITimeoutError):
            idle = min(self.settings.request_timeout, self.settings.limits.stream_idle_seconds)
            return ServerUnavailable(
                f"The model server at {url} did not answer {what} in time (silent for {idle:g} s). {SERVER_HINT}"
            )
        if isinstance(exc, openai.APIConnectionError):
            return ServerUnavailable(f"Cannot reach the model server at {url} ({what} failed: {exc}). {SERVER_HINT}")
        if isinstance(exc, openai.APIStatusError):
            message = _error_message(exc)
            if exc.status_code == 400 and re.search(r"tool.choice|tool-call-parser|tool calling", message, re.IGNORECASE):
                return ToolsUnsupported(f"The model server at {url} refused tool calling: {message}")
            if 400 <= exc.status_code < 500 and exc.status_code not in (408, 429):
                return RequestRejected(
                    f"The model server at {url} is up but rejected {what} with HTTP {exc.status_code}: {message}"
                )
            return ModelServerError(f"The model server at {url} answered {what} with HTTP {exc.status_code}: {message}")
        return ModelServerError(f"{what} at {url} failed: {exc}")


async def _collect(stream: Any, completion: Completion, progress: StreamProgress, max_bytes: int) -> Completion:
    """Gather a streamed answer. Past `max_bytes` of text the stream is closed and the answer ends
    as if cut off by max_tokens (finish_reason "length"): what was cut off is never used whole."""
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    size = 0
    completion.usage_counted_locally = True  # until a usage chunk says otherwise
    started = progress.started or time.monotonic()
    async for chunk in stream:
        progress.chunks += 1
        if size > max_bytes:
            completion.finish_reason = "length"
            break
        if chunk.usage is not None:
            completion.usage_counted_locally = False
            completion.prompt_tokens = chunk.usage.prompt_tokens or 0
            completion.completion_tokens = chunk.usage.completion_tokens or 0
            details = getattr(chunk.usage, "prompt_tokens_details", None)
            cached = getattr(details, "cached_tokens", None) if details else None
            completion.cached_tokens = cached or 0
            completion.cached_tokens_reported = cached is not None
        for choice in chunk.choices:
            delta = choice.delta
            piece = _reasoning_of(delta)
            if piece or delta.content or delta.tool_calls:
                completion.ttft = progress.first_token = completion.ttft or time.monotonic() - started
            if piece:
                reasoning.append(piece)
                size += _nbytes(piece)
            if delta.content:
                content.append(delta.content)
                size += _nbytes(delta.content)
            for tc in delta.tool_calls or []:
                slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                slot["id"] = tc.id or slot["id"]
                if tc.function is not None:
                    slot["name"] += tc.function.name or ""
                    slot["arguments"] += tc.function.arguments or ""
                    size += _nbytes(tc.function.arguments or "")
            progress.nbytes = size
            if choice.finish_reason:
                completion.finish_reason = choice.finish_reason
    completion.content = "".join(content)
    completion.reasoning = "".join(reasoning)
    completion.tool_calls = [
        ToolCall(id=c["id"] or f"call_{i}", name=c["name"], arguments=c["arguments"] or "{}")
        for i, c in sorted(calls.items())
    ]
    return completion


# The variables httpx reads for proxies (trust_env): with one set, the SDK's own client is used.
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy")


def _plain_http_client(base_url: str) -> openai.DefaultAsyncHttpxClient | None:
    """For an http:// server (a local vLLM), a client that never speaks TLS: it does not follow
    redirects (one to https:// fails instead), so it needs no CA bundle, whose loading costs a
    one-shot process (qfix, qwen-review) tens of milliseconds before its first request. None (the
    SDK's own client, certificates verified) for https://, and whenever a proxy is configured (the
    connection to an https:// proxy must still be verified)."""
    if not base_url.lower().startswith("http://") or any(os.environ.get(v) or os.environ.get(v.upper()) for v in PROXY_VARS):
        return None
    return openai.DefaultAsyncHttpxClient(verify=False, follow_redirects=False)


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8", "replace"))


def _prompt_tokens(request: ChatRequest) -> int:
    """The Qwen3.6 tokenizer on the messages and tools as sent (close to, not exactly, the rendered chat template)."""
    return count_tokens(json.dumps(request.messages, ensure_ascii=False) + json.dumps(request.tools or []))


def _count_usage(completion: Completion, request: ChatRequest) -> None:
    """Token counts for a server whose stream reports none (llama.cpp)."""
    completion.prompt_tokens = _prompt_tokens(request)
    generated = [completion.reasoning, completion.content, *(c.name + c.arguments for c in completion.tool_calls)]
    completion.completion_tokens = count_tokens("".join(generated))


def _reasoning_of(delta: Any) -> str | None:
    # The SDK has no typed field: vLLM sends `reasoning` (older: `reasoning_content`).
    extra = getattr(delta, "model_extra", None) or {}
    return extra.get("reasoning") or extra.get("reasoning_content") or getattr(delta, "reasoning", None)


def _finish(completion: Completion) -> Completion:
    """Move inline <think> text out of content and recover XML tool calls."""
    inline_reasoning, answer = split_reasoning(completion.content)
    if inline_reasoning:
        completion.reasoning_from_text = True
        completion.reasoning = "\n".join(r for r in (completion.reasoning, inline_reasoning) if r)
    if not completion.tool_calls and "<tool_call>" in answer:
        answer, parsed = parse_xml_tool_calls(answer)
        completion.tool_calls = [
            ToolCall(id=f"call_xml_{i}", name=p.name, arguments=json.dumps(p.arguments)) for i, p in enumerate(parsed)
        ]
        completion.tool_calls_from_text = bool(parsed)
    completion.content = answer
    if completion.thinking and not answer and not completion.tool_calls and completion.finish_reason == "length":
        raise ReasoningExhausted(
            f"The model spent all {completion.completion_tokens} tokens thinking and gave no answer; "
            "retry, or raise plan_max_tokens."
        )
    return completion


def _error_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if body.get("message"):
            return str(body["message"])
    return str(exc.message)
