"""`qwen-lsp doctor`: is the model server set up the way qwen-lsp needs it, and can
verification commands run sandboxed here?

Each check is a tiny real request (or a real sandbox start); each answers ✓ or ✗ with the fix.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import uuid
import urllib.request
from collections.abc import Awaitable, Callable

from pydantic import BaseModel

from qwen_lsp.engine import sandbox, sandbox_limits
from qwen_lsp.llm.client import (
    KEY_HINT, SERVER_HINT, KeyRejected, ModelClient, ModelServerError, ReasoningExhausted, RequestRejected, ServerBusy,
    ToolsUnsupported,
)
from qwen_lsp.llm.parsing import loads_loose
from qwen_lsp.settings import Settings
from qwen_lsp.llm.tokens import count_tokens
from qwen_lsp.ops.serve_local import SERVED_BY


class Check(BaseModel):
    name: str
    ok: bool
    detail: str = ""
    fix: str = ""


PING_TOOL = {
    "type": "function",
    "function": {
        "name": "ping",
        "description": "Answer a ping.",
        "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
    },
}
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["qwen-lsp-ok"]}},
    "required": ["answer"],
}
# Long enough to fill several KV blocks, so the second identical request can hit the prefix cache.
PREFIX_PROBE = "qwen-lsp prefix cache probe. " + " ".join(f"line {i}: the quick brown fox." for i in range(300))
TOKENIZER_SAMPLE = 'def fib(n: int) -> int:\n    """Fibonacci — naïve."""\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n'


def _user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


# SERVER_HINT already gives the serve-local route: this adds only what doctor knows more of.
SERVE_HINT = "`qwen-lsp model-command --gpu-memory-gib N` sizes the vllm serve command for your GPUs"
PROBES = {"thinking": "_thinking", "non-thinking": "_non_thinking", "tool calls": "_tools",
          "structured outputs": "_structured", "prefix caching": "_cached_tokens_and_prefix"}


async def run_doctor(settings: Settings, on_check: Callable[[Check], None] | None = None,
                     on_start: Callable[[str], None] | None = None) -> list[Check]:
    """Every check, in order; `on_check` hears each one as it completes, `on_start` what runs next."""
    client = ModelClient(settings.model_copy(update={"max_retries": 0, "busy_wait_seconds": 10}))
    checks: list[Check] = []

    def done(*new: Check) -> None:
        for check in new:
            checks.append(check)
            if on_check:
                on_check(check)

    def starting(what: str) -> None:
        if on_start:
            on_start(what)


    done(await asyncio.to_thread(sandbox_check, settings))
    try:
        starting(f"reaching {settings.base_url}")
        try:
            info = await client.info()
        except KeyRejected as exc:  # up, and wants a key: starting a server is not the fix
            done(Check(name="server reachable", ok=False, detail=str(exc).split(": it wants")[0], fix=KEY_HINT))
            return checks
        except (RequestRejected, ServerBusy) as exc:  # up: say what it answered, not how to start one
            done(Check(name="server reachable", ok=False, detail=str(exc),
                       fix="check QWEN_LSP_BASE_URL and QWEN_LSP_MODEL" if isinstance(exc, RequestRejected)
                       else "the server is up but busy: run doctor again later"))
            return checks
        except ModelServerError as exc:
            done(Check(name="server reachable", ok=False, detail=str(exc).replace(SERVER_HINT, "").strip(),
                       fix=f"{SERVER_HINT}. {SERVE_HINT}"))
            return checks
        done(Check(name="server reachable", ok=True, detail=settings.base_url))
        local = info.owned_by == SERVED_BY  # llama.cpp has none of vLLM's flags: its fixes are serve-local's
        long_enough = (info.max_model_len or 0) >= 32_768
        context_fix = "serve-local --ctx-size 65536 (at least 32768)" if local else "serve with --max-model-len 262144 (at least 32768)"
        done(
            Check(
                name="model and context",
                ok=long_enough,
                detail=f"{info.model}, max_model_len={info.max_model_len or 'not reported'}",
                fix="" if long_enough else context_fix,
            )
        )
        router = await asyncio.to_thread(router_workers, settings)
        if router is not None:
            done(router_check(router))
        for what, probe in PROBES.items():
            starting(what)
            found = await _guard(globals()[probe], client, local)
            for check in found if router is not None else []:
                if check.name == "prefix caching effective" and not check.ok:  # most likely the routing
                    check.fix = f"{ROUTER_POLICY_FIX}; else {check.fix}"
            done(*found)
        if router is not None:
            starting("session affinity")
            done(*await _guard(_session_affinity, client, local))
        starting("tokenizer")
        done(await _tokenizer(settings, info.model))
    finally:
        await client.close()
    return checks


def sandbox_check(settings: Settings) -> Check:
    """Whether fixes can be verified: commands run only inside bubblewrap, never without it."""
    jail = sandbox.status()
    if not settings.verify:
        return Check(name="sandbox for verification", ok=jail.available,
                     detail=f"verification is off (verify = false); {jail.detail}", fix=jail.fix)
    if jail.available:
        if settings.limits.sandbox_processes and not sandbox_limits.process_limit_available():
            return Check(name="sandbox for verification", ok=True,
                         detail=f"{jail.detail}; the process limit is not enforced (running as root, no writable "
                                "pids cgroup); memory, file size and CPU time limits are")
        return Check(name="sandbox for verification", ok=True, detail=f"{jail.detail}; resource limits enforced")
    return Check(name="sandbox for verification", ok=False,
                 detail=f"{jail.detail}: fixes are shown as 'not verified: no sandbox' and nothing runs before you apply",
                 fix=jail.fix)


# What a failing probe's fix says on serve-local (llama.cpp): the GGUF and its chat template are what
# decide thinking, tool calls and the switch between them there, not server flags.
LOCAL_TEMPLATE_FIX = ("serve a Qwen3.6 GGUF that carries its own chat template (serve-local uses it; "
                      "`qwen-lsp serve-local` prints which template it loaded)")


async def _guard(probe: Callable[[ModelClient, bool], Awaitable[list[Check]]], client: ModelClient,
                 local: bool) -> list[Check]:
    try:
        return await probe(client, local)
    except ModelServerError as exc:
        return [Check(name=probe.__name__.strip("_").replace("_", " "), ok=False, detail=str(exc))]


async def _thinking(client: ModelClient, local: bool) -> list[Check]:
    fix = LOCAL_TEMPLATE_FIX if local else "serve with --reasoning-parser qwen3"
    try:
        reply = await client.complete(_user("Reply with the single word: ok"), thinking=True, max_tokens=1024)
    except ReasoningExhausted:
        return [Check(name="thinking works", ok=True, detail="reasoning seen (longer than the probe allows)")]
    if reply.reasoning_from_text:
        if local:  # llama.cpp has no reasoning parser; the client splits <think> itself
            return [Check(name="thinking works", ok=True, detail="reasoning seen (inline <think>, split by qwen-lsp)")]
        return [Check(name="thinking works", ok=False, detail="reasoning arrives inline in content (no reasoning parser)", fix=fix)]
    seen = bool(reply.reasoning)
    return [Check(name="thinking works", ok=seen, detail="reasoning seen" if seen else "no reasoning in the reply",
                  fix="" if seen else fix)]


async def _non_thinking(client: ModelClient, local: bool) -> list[Check]:
    reply = await client.complete(_user("Reply with the single word: ok"), thinking=False, max_tokens=32)
    ok = bool(reply.content) and not reply.reasoning
    return [Check(name="non-thinking works", ok=ok, detail=repr(reply.content[:40]),
                  fix="" if ok else "the server ignores chat_template_kwargs.enable_thinking; "
                  + (LOCAL_TEMPLATE_FIX if local else "use vLLM >= 0.19 with Qwen3.6's chat template"))]


async def _tools(client: ModelClient, local: bool) -> list[Check]:
    fix = LOCAL_TEMPLATE_FIX if local else "serve with --enable-auto-tool-choice --tool-call-parser qwen3_coder"
    try:
        reply = await client.complete(
            _user("Call the ping tool with word='pong'."), thinking=False, max_tokens=128, tools=[PING_TOOL]
        )
    except ToolsUnsupported as exc:
        return [Check(name="tool calls parse", ok=False, detail=str(exc), fix=fix)]
    if reply.tool_calls_from_text and local:  # no tool parser in llama.cpp: ours reads the XML
        return [Check(name="tool calls parse", ok=True, detail="ping called (Qwen3-Coder XML, parsed by qwen-lsp)")]
    if reply.tool_calls_from_text:
        return [Check(name="tool calls parse", ok=False, detail="tool calls arrive as XML text (no tool parser)", fix=fix)]
    ok = any(c.name == "ping" for c in reply.tool_calls)
    return [Check(name="tool calls parse", ok=ok, detail="ping called" if ok else "no tool call came back", fix="" if ok else fix)]


async def _structured(client: ModelClient, local: bool) -> list[Check]:
    reply = await client.complete(_user("Reply with JSON."), thinking=False, max_tokens=64, json_schema=ANSWER_SCHEMA)
    try:
        ok = loads_loose(reply.content).get("answer") == "qwen-lsp-ok"
    except (ValueError, AttributeError):
        ok = False
    return [Check(name="structured outputs honored", ok=ok, detail=repr(reply.content[:60]),
                  fix="" if ok else ("serve-local turns structured_outputs into llama.cpp's JSON-schema grammar: "
                                     "update qwen-lsp and llama-cpp-python (qwen-lsp serve-local --install)" if local else
                                     "use a vLLM that supports structured_outputs (guided_json is ignored by current servers)"))]


async def _cached_tokens_and_prefix(client: ModelClient, local: bool) -> list[Check]:
    if local:
        return [Check(name="prefix caching", ok=True,
                      detail="llama.cpp reuses the previous request's prompt prefix (it reports no cached tokens)")]
    # One session: behind a session-affinity router both land on one replica's cache.
    first = await client.complete(_user(PREFIX_PROBE), thinking=False, max_tokens=8, session_id=DOCTOR_SESSION)
    second = await client.complete(_user(PREFIX_PROBE), thinking=False, max_tokens=8, session_id=DOCTOR_SESSION)
    reported = first.cached_tokens_reported and second.cached_tokens_reported
    checks = [Check(name="cached-token reporting", ok=reported,
                    detail="usage.prompt_tokens_details present" if reported else "no prompt_tokens_details in usage",
                    fix="" if reported else "serve with --enable-prompt-tokens-details")]
    effective = second.cached_tokens > 0
    checks.append(Check(
        name="prefix caching effective",
        ok=effective,
        detail=f"second identical request: {second.cached_tokens} of {second.prompt_tokens} prompt tokens cached",
        fix="" if effective else ("serve with --enable-prefix-caching (and --enable-prompt-tokens-details to see it); "
                                  "on a hybrid model such as Qwen3.6 see vllm#51198"),
    ))
    return checks


async def _tokenizer(settings: Settings, model: str) -> Check:
    root = settings.base_url.rstrip("/").removesuffix("/v1")
    request = urllib.request.Request(
        f"{root}/tokenize",
        data=json.dumps({"model": model, "prompt": TOKENIZER_SAMPLE}).encode(),
        headers={"content-type": "application/json", "authorization": f"Bearer {settings.api_key}"},
    )
    try:
        body = await asyncio.to_thread(lambda: urllib.request.urlopen(request, timeout=settings.connect_timeout + 10).read())
        server = json.loads(body)["count"]
    except (OSError, urllib.error.URLError, KeyError, ValueError) as exc:
        return Check(name="tokenizer agreement", ok=False, detail=f"/tokenize unavailable: {exc}",
                     fix="token budgets use the local Qwen3.6 tokenizer; vLLM's /tokenize checks it")
    local = count_tokens(TOKENIZER_SAMPLE)
    ok = server == local
    return Check(name="tokenizer agreement", ok=ok, detail=f"local {local} tokens, server {server}",
                 fix="" if ok else "the server's model is not Qwen3.6 (budgets will be off); check QWEN_LSP_MODEL")


# -- behind a router (docs/team.md) ------------------------------------------------------------------

DOCTOR_SESSION = "qwen-lsp-doctor"
ROUTER_POLICY_FIX = ("start the router with --policy consistent_hash: it keeps each x-session-id on one replica "
                     "(its default, cache_aware, ignores the header); docs/team.md")


class RouterWorkers(BaseModel):
    urls: list[str]
    healthy: int


def router_workers(settings: Settings) -> RouterWorkers | None:
    """The vLLM Router's workers, from its GET /workers; None when the server is not one (vLLM itself
    answers 404 there; LiteLLM and other gateways cannot be told apart this way)."""
    root = settings.base_url.rstrip("/").removesuffix("/v1")
    request = urllib.request.Request(f"{root}/workers", headers={"authorization": f"Bearer {settings.api_key}"})
    try:
        with urllib.request.urlopen(request, timeout=settings.connect_timeout) as answer:
            body = json.loads(answer.read())
    except (OSError, ValueError):
        return None
    workers = body.get("workers") if isinstance(body, dict) else None
    if not isinstance(workers, list) or not all(isinstance(w, dict) and "url" in w for w in workers):
        return None
    return RouterWorkers(urls=[str(w["url"]) for w in workers], healthy=sum(1 for w in workers if w.get("is_healthy")))


def router_check(router: RouterWorkers) -> Check:
    ok = router.healthy > 0
    return Check(name="router", ok=ok,
                 detail=f"a vLLM Router in front of {len(router.urls)} worker(s), {router.healthy} healthy",
                 fix="" if ok else "no healthy worker behind the router: start the vLLM servers it names (GET /workers)")


async def _session_affinity(client: ModelClient, local: bool) -> list[Check]:
    """Two requests of one session, the second extending the first as a fix's rounds do: behind a
    router its cache hits only if both reached the same replica."""
    session = f"{DOCTOR_SESSION}-{uuid.uuid4().hex[:8]}"  # a session no replica has seen yet
    opening = _user(f"{session}: {PREFIX_PROBE}")
    first = await client.complete(opening, thinking=False, max_tokens=8, session_id=session)
    follow_up = [*opening, first.assistant_message(), *_user("And once more.")]
    second = await client.complete(follow_up, thinking=False, max_tokens=8, session_id=session)
    hit = second.cached_tokens >= first.prompt_tokens // 2
    return [Check(name="session reaches its cache", ok=hit,
                  detail=f"second request of one session: {second.cached_tokens} of {second.prompt_tokens} prompt "
                         "tokens cached" + ("" if hit else " (it went to another replica)"),
                  fix="" if hit else ROUTER_POLICY_FIX)]


def render_check(check: Check) -> str:
    line = f"{'✓' if check.ok else '✗'} {check.name}: {check.detail}"
    return line + (f"\n    fix: {check.fix}" if not check.ok and check.fix else "")


def render(checks: list[Check]) -> str:
    return "\n".join(render_check(check) for check in checks)


def to_json(checks: list[Check]) -> str:
    return json.dumps([c.model_dump() for c in checks], indent=2)
