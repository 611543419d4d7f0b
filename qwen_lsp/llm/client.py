"""The model client: the openai SDK against vLLM's OpenAI-compatible server.

Two kinds of call, both with `preserve_thinking` so earlier reasoning stays in
the prompt (and the prompt prefix stays byte-stable for prefix caching):
thinking (`enable_thinking: true`, the card's precise-coding preset) and
non-thinking (`enable_thinking: false`, the card's non-thinking preset).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import random
import re
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import openai
from openai import AsyncOpenAI
from pydantic import BaseModel, Field

from qwen_lsp.llm import calllog
from qwen_lsp.llm import dialect
from qwen_lsp.llm.parsing import split_reasoning
from qwen_lsp.settings import SamplingPreset, Settings
from qwen_lsp.llm.tokens import count_tokens
from qwen_lsp.types import NOTICE
from qwen_lsp.sanitize import valid_unicode

# Both routes of the README: a GPU that fits vLLM, or llama.cpp through serve-local on anything else.
SERVER_HINT = (
    "Start one with: vllm serve Qwen/Qwen3.6-27B --max-model-len 262144 --reasoning-parser qwen3 "
    "--enable-auto-tool-choice --tool-call-parser qwen3_coder --enable-prompt-tokens-details  (a big GPU), "
    "or qwen-lsp serve-local "
    "--model FILE.gguf  (llama.cpp; CPU, Mac or a small GPU; `serve-local --install` with no model serves a 135M "
    "smoke-test model that checks the wiring and fixes no real bug); or set QWEN_LSP_BASE_URL"
)


class ModelServerError(Exception):
    """A failure talking to the model server; the message says what to do."""


class ServerUnavailable(ModelServerError):
    pass


class ReasoningExhausted(ModelServerError):
    """Thinking used every token and never closed: there is no answer to use. `completion`: what the
    call cost (its tokens), for the caller's accounting."""

    completion: Completion | None = None


class ToolsUnsupported(ModelServerError):
    """The server refused tool calling (vLLM without --enable-auto-tool-choice)."""


class RequestRejected(ModelServerError):
    """The server is up and refused this request (HTTP 4xx): a bad request, key or model name,
    not an outage. Retrying the same request cannot help."""


class KeyRejected(RequestRejected):
    """HTTP 401/403: the server (or a gateway in front of it) wants a key qwen-lsp did not send."""


KEY_HINT = ("set QWEN_LSP_API_KEY to the server's key (the one its --api-key names, or your key for the router "
            "or gateway in front of it; in an editor, its apiKey setting)")


class ServerBusy(ModelServerError):
    """The server (or the router in front of it) is up but answered 429, 503 or 408 until the time
    allowed for waiting ran out: not an outage, and not a rejection. Trying later helps."""


class StreamBroken(ModelServerError):
    """The answer stopped mid-stream (connection reset, a replica killed) twice in a row: the server
    was reached both times, so this is not "cannot reach"."""


# Answers that mean "busy, try again later": a rate limit, an overloaded server, a router's queue timeout.
BUSY_STATUSES = frozenset({408, 429, 503})
Notify = Callable[[str], None]


class _BrokenStream(Exception):
    """The stream ended without its final chunk (or its connection broke after the answer began)."""


class ToolCall(BaseModel):
    id: str
    name: str
    arguments: str  # JSON text, as the server sent it
    # Where the call was found (llm/dialect.py): parsed by the server, or recovered from XML left in
    # the content, in the reasoning, or split across the two. Not sent back to the server.
    source: dialect.Source = "native"


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
    draft_calls: int = 0  # calls in the reasoning that the answer did not commit to: never run
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
    on_reasoning: Callable[[str], None] | None = None  # each reasoning piece as it arrives (live thinking)


class ServerInfo(BaseModel):
    model: str
    max_model_len: int | None = None
    owned_by: str | None = None  # "qwen-lsp serve-local (llama.cpp)" for serve-local, "vllm" for vLLM


class ModelClient:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._oai = _OpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key,
            # read: the longest silence between two streamed chunks (a silent server is given up on);
            # a stream that keeps trickling is bounded by the answer size and the engine's deadline.
            timeout=openai.Timeout(
                settings.request_timeout, connect=settings.connect_timeout,
                read=min(settings.request_timeout, settings.limits.stream_idle_seconds),
            ),
            # The SDK retries connection errors and 5xx with backoff; busy answers (408/429/503) come back
            # to `complete`, which waits as long as the server asks, with jitter, within the fix's deadline.
            max_retries=settings.max_retries,
            http_client=_plain_http_client(settings.base_url),
        )
        self._info: ServerInfo | None = None

    async def close(self) -> None:
        await self._oai.close()

    @property
    def known_info(self) -> ServerInfo | None:
        """What `info` learnt, without asking: None until the server has answered once."""
        return self._info

    async def info(self, notify: Notify | None = None) -> ServerInfo:
        """Model id and max_model_len from GET /v1/models (asked once; a busy server is waited for,
        each wait told to `notify`)."""
        if self._info is None:
            started, busy = time.monotonic(), 0
            while True:
                try:
                    page = await self._oai.models.list()
                    break
                except openai.APIStatusError as exc:
                    if exc.status_code not in BUSY_STATUSES:
                        raise self._explain(exc, "GET /models") from exc
                    busy += 1
                    await self._wait_busy(exc, busy, started, started + self.settings.busy_wait_seconds, notify)
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
        notify: Notify | None = None,
        deadline: float | None = None,
        background: bool = False,
    ) -> Completion:
        """One streamed chat completion, logged to calls.jsonl. Cancelling the
        awaiting task closes the stream, which makes vLLM abort the request.
        `progress`, when given, follows the stream as it arrives. `notify` hears one line per retry
        (prefixed NOTICE); `deadline` (time.monotonic) bounds the waiting on a busy server;
        `background` work (review on save) waits for a per-server slot and yields to the fix."""
        # Text that is not valid Unicode (a latin-1 file via git) cannot be encoded: U+FFFD for its bytes.
        request = ChatRequest(valid_unicode(messages), thinking, max_tokens, tools, tool_choice, json_schema)
        started = time.monotonic()
        completion = Completion(thinking=thinking)
        outcome = "cancelled"
        try:
            session = self.settings.session_id or session_id
            async with _background_slot(self.settings, background):
                completion = _finish(await self._retrying(request, session, progress or StreamProgress(),
                                                          notify or (lambda _line: None), deadline, background),
                                     request.tools if request.tool_choice != "none" else None)
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

    async def _retrying(self, request: ChatRequest, session: str | None, progress: StreamProgress,
                        notify: Notify, deadline: float | None, background: bool) -> Completion:
        """`_stream`, again once after a stream that broke off (nothing was used of it), and again after
        each busy answer for as long as the server asks and the deadline allows."""
        await self.info(notify)
        started = time.monotonic()
        wait_until = started + self.settings.busy_wait_seconds
        if deadline is not None:
            wait_until = min(wait_until, deadline)
        broken = busy = 0
        while True:
            try:
                return await self._stream(request, Completion(thinking=request.thinking), session, progress, background)
            except _BrokenStream as exc:
                broken += 1
                if broken > 1:
                    raise StreamBroken(
                        f"The model server at {self.settings.base_url} closed the answer mid-stream twice ({exc}); "
                        "nothing was applied. It is up: try again, and if it keeps happening look at its log "
                        "(a replica restarting, a proxy's timeout)."
                    ) from None
                notify(f"{NOTICE}the model server closed the answer mid-stream ({exc}); asking again on a new connection")
            except openai.APIStatusError as exc:
                if exc.status_code not in BUSY_STATUSES:
                    raise self._explain(exc, "POST /chat/completions") from exc
                busy += 1
                await self._wait_busy(exc, busy, started, wait_until, notify)
            progress.started = progress.first_token = None
            progress.chunks = progress.nbytes = 0

    async def _wait_busy(self, exc: openai.APIStatusError, busy: int, started: float, wait_until: float,
                         notify: Notify | None) -> None:
        """Sleep as the busy server asks (or back off), saying so; ServerBusy when that would pass `wait_until`."""
        delay = busy_delay(exc.response.headers, busy)
        if time.monotonic() + delay > wait_until:
            waited = time.monotonic() - started
            raise ServerBusy(
                f"The model server at {self.settings.base_url} is busy: it answered HTTP {exc.status_code} "
                f"{busy} time(s) in {waited:.0f} s ({_error_message(exc)}). It is up; try again later, "
                "or raise busy_wait_seconds."
            ) from exc
        if notify is not None:
            notify(f"{NOTICE}model server busy (HTTP {exc.status_code}), retrying in {delay:.0f} s")
        await asyncio.sleep(delay)

    async def _stream(self, request: ChatRequest, completion: Completion, session: str | None,
                      progress: StreamProgress, background: bool) -> Completion:
        """One attempt. Raises openai.APIStatusError for a busy answer and _BrokenStream for an answer
        that began and broke off; every other failure as a ModelServerError."""
        info = await self.info()
        preset = self.settings.thinking if request.thinking else self.settings.non_thinking
        kwargs = self._request(request, info, preset)
        routing = routing_fields(self.settings, session, background=background)
        kwargs["extra_body"].update(routing.pop("extra_body", {}))
        kwargs.update(routing)
        progress.started = time.monotonic()
        try:
            stream = await self._oai.chat.completions.create(**kwargs)
        except openai.APIStatusError as exc:
            if exc.status_code in BUSY_STATUSES:
                raise
            raise self._explain(exc, "POST /chat/completions") from exc
        except openai.APIError as exc:
            raise self._explain(exc, "POST /chat/completions") from exc
        try:
            completion = await _collect(stream, completion, progress, self.settings.limits.answer_max_bytes)
            if completion.finish_reason is None:
                raise _BrokenStream(f"the stream ended after {progress.chunks} chunks without a finish reason")
            if completion.usage_counted_locally:
                _count_usage(completion, request)
            return completion
        except openai.APITimeoutError as exc:  # silent for stream_idle_seconds: not retried
            raise self._explain(exc, "streaming /chat/completions") from exc
        except openai.APIConnectionError as exc:
            raise _BrokenStream(f"the connection broke after {progress.chunks} chunks") from exc
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
            if exc.status_code in (401, 403):
                sent = "no key" if self.settings.api_key in ("", "EMPTY") else "the key it was given"
                return KeyRejected(
                    f"The model server at {url} is up but rejected {what} with HTTP {exc.status_code} ({message}): "
                    f"it wants an API key and qwen-lsp sent {sent}; {KEY_HINT}"
                )
            if 400 <= exc.status_code < 500 and exc.status_code not in BUSY_STATUSES:
                return RequestRejected(
                    f"The model server at {url} is up but rejected {what} with HTTP {exc.status_code}: {message}"
                )
            if exc.status_code in BUSY_STATUSES:
                return ServerBusy(f"The model server at {url} is up but busy: it answered {what} with HTTP "
                                  f"{exc.status_code} ({message}); try again later")
            return ModelServerError(f"The model server at {url} answered {what} with HTTP {exc.status_code}: {message}")
        return ModelServerError(f"{what} at {url} failed: {exc}")


class _OpenAI(AsyncOpenAI):
    """The SDK's client, except that busy answers are not retried by the SDK (two quick retries, in
    step across every client of a team): ModelClient waits for them as the server asks."""

    def _should_retry(self, response: Any) -> bool:
        if response.status_code in BUSY_STATUSES:
            return False
        return super()._should_retry(response)


# Waiting on a busy server: exponential from BUSY_FIRST_DELAY up to BUSY_MAX_DELAY, each wait drawn
# between half and all of it (full jitter spreads a team's clients apart); a server's own
# Retry-After / x-ratelimit-reset-* wins when it says more.
BUSY_FIRST_DELAY = 1.0
BUSY_MAX_DELAY = 30.0
BUSY_MAX_ASKED = 120.0  # a Retry-After longer than this is waited for this long, then asked again


def busy_delay(headers: Any, attempt: int, rng: random.Random | None = None) -> float:
    """Seconds to wait before busy attempt `attempt` + 1 (pure, given `rng`): what the server asks
    for (plus a little jitter, so clients told the same second do not return in step), else backoff."""
    rng = rng or random
    asked = server_asked_delay(headers)
    if asked is not None:
        return min(asked, BUSY_MAX_ASKED) + rng.uniform(0, min(1.0, asked / 4 + 0.1))
    ceiling = min(BUSY_MAX_DELAY, BUSY_FIRST_DELAY * 2 ** (attempt - 1))
    return rng.uniform(ceiling / 2, ceiling)


def server_asked_delay(headers: Any) -> float | None:
    """The wait a server asked for: Retry-After (seconds or an HTTP date), retry-after-ms, or the
    largest x-ratelimit-reset-* (OpenAI style "1s", "6m0s", "20ms", or plain seconds); None if none."""
    if headers is None:
        return None
    found: list[float] = []
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            found.append(float(ms) / 1000)
        except ValueError:
            pass
    if (after := headers.get("retry-after")) is not None:
        try:
            found.append(float(after))
        except ValueError:
            when = email.utils.parsedate_to_datetime(after) if _looks_like_date(after) else None
            if when is not None:
                found.append(when.timestamp() - time.time())
    for name in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens", "x-ratelimit-reset"):
        if (value := headers.get(name)) is not None and (seconds := _duration(value)) is not None:
            found.append(seconds)
    found = [max(0.0, f) for f in found if f == f]  # drop NaN
    return max(found) if found else None


def _looks_like_date(text: str) -> bool:
    try:
        email.utils.parsedate_to_datetime(text)
        return True
    except (TypeError, ValueError, IndexError):
        return False


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def _duration(text: str) -> float | None:
    """"1.5" -> 1.5; "6m0s" -> 360; "20ms" -> 0.02; anything else None."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(n) * scale[u] for n, u in parts)


def routing_fields(settings: Settings, session: str | None, *, background: bool = False) -> dict[str, Any]:
    """What a request carries for routers and gateways, all from the user's own settings (a
    repository's may not set them): x-session-id (one workspace of one developer, for session
    affinity), `user` only when the user set user_id (never the workspace hash), extra headers,
    vLLM's `priority` only when the server runs --scheduling-policy priority, and `cache_salt`."""
    headers = dict(settings.extra_headers)
    if session:
        headers["x-session-id"] = session
    fields: dict[str, Any] = {}
    if headers:
        fields["extra_headers"] = headers
    if settings.user_id:
        fields["user"] = settings.user_id
    body: dict[str, Any] = {}
    if settings.priority_scheduling:
        # vLLM: lower values are scheduled first; any non-zero value is a 400 without the priority policy.
        body["priority"] = settings.background_priority if background else 0
    if settings.cache_salt:
        body["cache_salt"] = settings.cache_salt
    if body:
        fields["extra_body"] = body
    return fields


# The cap on concurrent background requests is per model server, so it lives beside the clients,
# not in one of them: a language server has a client per workspace, all talking to one server.
# Keyed by the event loop too (an asyncio.Semaphore belongs to one loop), weakly: a loop closed forgets them.
_BACKGROUND_SLOTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary())


class _background_slot:
    """`async with`: nothing for a fix the user waits for; for background work, one of the server's
    background_max_concurrent slots."""

    def __init__(self, settings: Settings, background: bool) -> None:
        self._semaphore: asyncio.Semaphore | None = None
        if background and settings.background_max_concurrent > 0:
            slots = _BACKGROUND_SLOTS.setdefault(asyncio.get_running_loop(), {})
            self._semaphore = slots.setdefault(settings.base_url, asyncio.Semaphore(settings.background_max_concurrent))

    async def __aenter__(self) -> None:
        if self._semaphore is not None:
            await self._semaphore.acquire()

    async def __aexit__(self, *exc: object) -> None:
        if self._semaphore is not None:
            self._semaphore.release()


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
                if progress.on_reasoning is not None:
                    progress.on_reasoning(piece)
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


def _finish(completion: Completion, tools: list[dict[str, Any]] | None = None) -> Completion:
    """Move inline <think> text out of content, and take the tool calls the answer commits to
    wherever the model wrote them (llm/dialect.py), XML values typed by the tools' schemas. The
    reasoning is searched only when `tools` may be called (not for a plan: tool_choice "none")."""
    inline_reasoning, answer = split_reasoning(completion.content)
    if inline_reasoning:
        completion.reasoning_from_text = True
        completion.reasoning = "\n".join(r for r in (completion.reasoning, inline_reasoning) if r)
    reasoning = completion.reasoning if tools else ""
    if "<function=" in answer or "<function=" in reasoning:
        found = dialect.find_calls(answer, reasoning, native=bool(completion.tool_calls))
        schemas = {t["function"]["name"]: t["function"].get("parameters", {}).get("properties", {})
                   for t in tools or [] if t.get("type") == "function"}
        recovered = [
            ToolCall(id=f"call_{c.source}_{i}", name=c.name, source=c.source,
                     arguments=json.dumps(dialect.coerce_xml(c.arguments, schemas.get(c.name, {})), ensure_ascii=False))
            for i, c in enumerate(found.calls)
        ]
        completion.tool_calls = completion.tool_calls + _unseen(recovered, completion.tool_calls)
        completion.tool_calls_from_text = any(c.source == "content" for c in recovered)
        completion.draft_calls = len(found.drafts)
        answer = found.content
    completion.content = answer
    if completion.thinking and not answer and not completion.tool_calls and completion.finish_reason == "length":
        exhausted = ReasoningExhausted(
            f"The model spent all {completion.completion_tokens} tokens thinking and gave no answer; "
            "retry, or raise plan_max_tokens."
        )
        exhausted.completion = completion
        raise exhausted
    return completion


def _unseen(recovered: list[ToolCall], native: list[ToolCall]) -> list[ToolCall]:
    """The recovered calls that are not a copy of a native one (same name, same arguments)."""
    def key(call: ToolCall) -> tuple[str, str]:
        try:
            return call.name, json.dumps(json.loads(call.arguments), sort_keys=True)
        except ValueError:
            return call.name, call.arguments
    seen = {key(c) for c in native}
    return [c for c in recovered if key(c) not in seen]


def _error_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, str) and inner:  # vLLM's 401: {"error": "Unauthorized"}
            return inner
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if body.get("message"):
            return str(body["message"])
    return str(exc.message)
