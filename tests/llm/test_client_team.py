"""The client on a team's server: a stream broken off mid-answer, a busy server, the identity and
routing fields a request carries, the cap on background work, and a server that wants a key."""

from __future__ import annotations

import asyncio
import email.utils
import random
import tempfile
import time

import pytest

from qwen_lsp.llm import identity
from qwen_lsp.llm.client import (
    NOTICE, KeyRejected, ModelClient, ServerBusy, ServerUnavailable, StreamBroken, busy_delay, routing_fields,
    server_asked_delay,
)
from qwen_lsp.settings import Settings, load_settings
from tests.vllm_double import Reply, VLLMDouble

MESSAGES = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]


def settings_for(double: VLLMDouble, **overrides) -> Settings:
    return Settings(base_url=double.base_url, cache_dir=tempfile.mkdtemp(prefix="qwen-team-test-"), max_retries=0,
                    **overrides)


def chats(double: VLLMDouble):
    return [r for r in double.requests if r.path.endswith("/chat/completions")]


# -- a stream broken off mid-answer -------------------------------------------------------------------

async def test_a_stream_broken_mid_answer_is_asked_again_once_with_the_same_request(vllm):
    vllm.script(Reply(content="half of an answer that never ends", break_after=3), Reply(content="the whole answer"))
    notices: list[str] = []
    reply = await ModelClient(settings_for(vllm)).complete(MESSAGES, thinking=False, max_tokens=50,
                                                            session_id="s1", notify=notices.append)
    assert reply.content == "the whole answer" and reply.finish_reason == "stop"
    first, second = chats(vllm)
    assert first.body == second.body and first.headers["x-session-id"] == second.headers["x-session-id"] == "s1"
    assert vllm.broken_streams == 1
    assert len(notices) == 1 and notices[0].startswith(NOTICE) and "closed the answer mid-stream" in notices[0]


async def test_a_second_broken_stream_is_reported_as_what_it_is_not_as_unreachable(vllm):
    vllm.script(Reply(content="one two three four", break_after=2), Reply(content="five six seven", break_after=2),
                Reply(content="never asked"))
    with pytest.raises(StreamBroken) as caught:
        await ModelClient(settings_for(vllm)).complete(MESSAGES, thinking=False, max_tokens=50)
    assert not isinstance(caught.value, ServerUnavailable)
    assert "closed the answer mid-stream" in str(caught.value) and "Cannot reach" not in str(caught.value)
    assert len(chats(vllm)) == 2  # once again, not more


# -- busy is not down ------------------------------------------------------------------------------------

async def test_a_busy_server_is_waited_for_as_it_asks_and_the_user_hears_of_it(vllm):
    vllm.script(Reply(status=429, error_message="Too many requests", headers={"Retry-After": "1"}),
                Reply(status=503, error_message="overloaded", headers={"retry-after-ms": "200"}),
                Reply(content="ok"))
    notices: list[str] = []
    started = time.monotonic()
    reply = await ModelClient(settings_for(vllm)).complete(MESSAGES, thinking=False, max_tokens=5, notify=notices.append)
    assert reply.content == "ok" and time.monotonic() - started >= 1.2  # 1 s asked, then 0.2 s
    assert [n.split(", retrying")[0] for n in notices] == [
        f"{NOTICE}model server busy (HTTP 429)", f"{NOTICE}model server busy (HTTP 503)"]
    assert notices[0].endswith("retrying in 1 s")


async def test_a_router_queue_timeout_408_is_busy_too(vllm):
    vllm.script(Reply(status=408, error_message="Request timed out in queue", headers={"retry-after": "0"}),
                Reply(content="ok"))
    assert (await ModelClient(settings_for(vllm)).complete(MESSAGES, thinking=False, max_tokens=5)).content == "ok"


async def test_giving_up_on_a_busy_server_is_its_own_error_within_the_deadline(vllm):
    vllm.responder = lambda body: Reply(status=429, error_message="Too many requests", headers={"Retry-After": "1"})
    started = time.monotonic()
    with pytest.raises(ServerBusy) as caught:
        await ModelClient(settings_for(vllm)).complete(MESSAGES, thinking=False, max_tokens=5,
                                                       deadline=time.monotonic() + 2.5)
    assert time.monotonic() - started < 3.0  # never sleeps past the deadline (the last answer may land just after)
    assert not isinstance(caught.value, ServerUnavailable)
    assert "busy" in str(caught.value) and "HTTP 429" in str(caught.value) and "unavailable" not in str(caught.value)
    assert 2 <= len(chats(vllm)) <= 3


def test_the_wait_follows_retry_after_and_ratelimit_reset_headers_else_backoff_with_jitter():
    rng = random.Random(1)
    assert server_asked_delay({"retry-after": "3"}) == 3
    assert server_asked_delay({"x-ratelimit-reset-requests": "1m30s", "x-ratelimit-reset-tokens": "20ms"}) == 90
    assert server_asked_delay({"x-ratelimit-reset-tokens": "2.5"}) == 2.5
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28 <= server_asked_delay({"retry-after": later}) <= 30
    assert server_asked_delay({"retry-after": "soon"}) is None and server_asked_delay({}) is None
    assert 3 <= busy_delay({"retry-after": "3"}, 1, rng) <= 4
    waits = [busy_delay({}, attempt, rng) for attempt in (1, 2, 3, 4, 10)]
    assert 0.5 <= waits[0] <= 1 and 1 <= waits[1] <= 2 and 2 <= waits[2] <= 4 and 4 <= waits[3] <= 8
    assert 15 <= waits[4] <= 30  # capped
    spread = {round(busy_delay({}, 3, rng), 3) for _ in range(20)}
    assert len(spread) > 10  # clients told "busy" at the same moment come back apart


# -- identity and routing fields -------------------------------------------------------------------------

async def test_user_is_the_developers_own_id_and_never_the_workspace_hash(vllm):
    vllm.script(Reply(content="a"), Reply(content="b"))
    await ModelClient(settings_for(vllm)).complete(MESSAGES, thinking=False, max_tokens=5, session_id="abc")
    await ModelClient(settings_for(vllm, user_id="ada@example.com")).complete(
        MESSAGES, thinking=False, max_tokens=5, session_id="abc")
    anonymous, named = chats(vllm)
    assert "user" not in anonymous.body and named.body["user"] == "ada@example.com"


async def test_extra_headers_priority_and_cache_salt_are_sent_when_the_user_sets_them(vllm):
    vllm.script(Reply(content="a"), Reply(content="b"), Reply(content="c"))
    plain = settings_for(vllm)
    team = settings_for(vllm, extra_headers={"x-litellm-tags": "team-a", "x-gateway-inference-fairness-id": "ada"},
                        priority_scheduling=True, cache_salt="team-a-salt")
    await ModelClient(plain).complete(MESSAGES, thinking=False, max_tokens=5)
    await ModelClient(team).complete(MESSAGES, thinking=False, max_tokens=5, session_id="s")
    await ModelClient(team).complete(MESSAGES, thinking=False, max_tokens=5, session_id="s", background=True)
    none, fix, background = chats(vllm)
    assert "priority" not in none.body and "cache_salt" not in none.body and "x-litellm-tags" not in none.headers
    assert fix.headers["x-litellm-tags"] == "team-a" and fix.headers["x-gateway-inference-fairness-id"] == "ada"
    assert fix.headers["x-session-id"] == "s" and fix.body["cache_salt"] == "team-a-salt"
    assert fix.body["priority"] == 0 and background.body["priority"] == 10  # vLLM serves lower first


def test_a_session_is_one_workspace_of_one_developer(tmp_path):
    same_path = tmp_path / "workspaces" / "app"
    same_path.mkdir(parents=True)
    ada = Settings(cache_dir=tmp_path / "ada-cache")
    bob = Settings(cache_dir=tmp_path / "bob-cache")  # another machine (devcontainer), same checkout path
    assert identity.session_id(ada, same_path) == identity.session_id(ada, same_path)  # stable
    assert identity.session_id(ada, same_path) != identity.session_id(bob, same_path)
    other = tmp_path / "workspaces" / "lib"
    other.mkdir()
    assert identity.session_id(ada, other) != identity.session_id(ada, same_path)
    # user_id names the developer across machines; an explicit session_id wins
    assert identity.session_id(ada.model_copy(update={"user_id": "ada"}), same_path) == identity.session_id(
        bob.model_copy(update={"user_id": "ada"}), same_path)
    assert identity.session_id(ada.model_copy(update={"session_id": "mine"}), same_path) == "mine"


def test_a_repositorys_pyproject_cannot_set_identity_headers_priority_or_salt(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.qwen-lsp]\nuser_id = "victim"\ncache_salt = "shared"\npriority_scheduling = true\n'
        'background_priority = -100\nmax_rounds = 3\nbusy_wait_seconds = 9000\nbackground_max_concurrent = 50\n'
        '[tool.qwen-lsp.extra_headers]\nx-litellm-tags = "steal"\n')
    settings = load_settings(tmp_path)
    assert settings.max_rounds == 3  # the table was read
    assert (settings.user_id, settings.cache_salt, settings.priority_scheduling, settings.extra_headers,
            settings.background_priority) == (None, None, False, {}, 10)
    assert (settings.busy_wait_seconds, settings.background_max_concurrent) == (300.0, 1)  # lowered only
    fields = routing_fields(settings, "s")
    assert fields == {"extra_headers": {"x-session-id": "s"}}
    monkeypatch.setenv("QWEN_LSP_USER_ID", "ada")  # the user's own environment may
    assert load_settings(tmp_path).user_id == "ada"


# -- background work yields --------------------------------------------------------------------------------

async def test_background_requests_take_one_slot_per_server_and_a_fix_never_waits_for_one(vllm):
    vllm.responder = lambda body: Reply(content="a b c d e f g h", chunk_delay=0.1)  # about a second each
    settings = settings_for(vllm, background_max_concurrent=1)
    clients = [ModelClient(settings) for _ in range(3)]  # a language server: one client per workspace

    async def call(client: ModelClient, label: str, background: bool) -> None:
        await client.complete([{"role": "user", "content": label}], thinking=False, max_tokens=5, background=background)

    reviews = [asyncio.ensure_future(call(clients[i], f"review {i}", True)) for i in (0, 1)]
    await asyncio.sleep(0.3)  # the first review is streaming, the second waits for its slot
    await call(clients[2], "fix", False)
    await asyncio.gather(*reviews)
    order = [r.body["messages"][0]["content"] for r in chats(vllm)]
    assert order[1] == "fix" and sorted(order[::2]) == ["review 0", "review 1"]  # the fix went straight in


# -- a server that wants a key ------------------------------------------------------------------------------

async def test_a_401_names_the_key_setting_and_is_a_rejection_not_an_outage(vllm):
    vllm.script(Reply(status=401, error_message="Unauthorized"))
    with pytest.raises(KeyRejected) as caught:
        await ModelClient(settings_for(vllm)).complete(MESSAGES, thinking=False, max_tokens=5)
    assert "QWEN_LSP_API_KEY" in str(caught.value) and "vllm serve Qwen" not in str(caught.value)
