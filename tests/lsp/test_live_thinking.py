"""Live thinking over the protocol: while the plan thinks, `$/progress` reports carry a one-line,
sanitized tail of the reasoning with its token count and time, at most four a second; the status
bar is not flooded with them; `liveThinking: false` turns them off."""

from __future__ import annotations

import json
import time

import pytest
from lsprotocol import types

from qwen_lsp.engine.thinking import INTERVAL_SECONDS, WIDTH
from tests.lsp.helpers import FIX_REPLIES, PLAN, execute, open_doc, selection
from tests.vllm_double import Reply

HOSTILE = "Let me look at add.\n\x1b[2J\x1b[31mIt subtracts\r and \u202eflips " + " ".join(f"step{n}" for n in range(150))


def _thoughts(lsp) -> list[str]:
    return [r.message for reports in lsp.progress_reports.values() for r in reports
            if isinstance(r, types.WorkDoneProgressReport) and r.message and r.message.startswith("thinking · ")]


async def _ask(lsp, vllm, project) -> float:
    uri = open_doc(lsp, project, "calc.py")
    vllm.script(Reply(reasoning=HOSTILE, content=json.dumps(PLAN), chunk_delay=0.01), *FIX_REPLIES)
    started = time.monotonic()
    answer = await execute(lsp, "qwen.server.ask", {"uri": uri, "range": selection(0, 3), "instruction": "make add add"})
    assert answer["applied"] is True
    return time.monotonic() - started


async def test_progress_carries_a_rate_limited_sanitized_tail(lsp, vllm, project):
    elapsed = await _ask(lsp, vllm, project)
    thoughts = _thoughts(lsp)
    assert 2 <= len(thoughts) <= 1 + elapsed / INTERVAL_SECONDS  # the server's clock runs inside the client's
    for message in thoughts:
        assert "\n" not in message and "\r" not in message and "\x1b" not in message and "\u202e" not in message
        assert len(message) <= len("thinking · 9999 tokens · 999s · ") + WIDTH + 1
    assert thoughts[-1].split(" · ", 3)[3].startswith("…step")  # the latest words, cut at a word
    tokens = [int(m.split(" · ")[1].split()[0]) for m in thoughts]
    assert tokens == sorted(tokens) and tokens[-1] > tokens[0]
    assert not [s for s in lsp.statuses if "thinking · " in s["message"]]  # the status bar keeps the phase


class TestOff:
    @pytest.fixture
    def server_options(self, vllm, cache_dir) -> dict:
        return {"baseUrl": vllm.base_url, "cacheDir": str(cache_dir), "maxRetries": 0, "liveThinking": False}

    async def test_the_setting_turns_it_off(self, lsp, vllm, project):
        await _ask(lsp, vllm, project)
        assert not _thoughts(lsp)
        assert any(r.message == "planning" for reports in lsp.progress_reports.values() for r in reports
                   if isinstance(r, types.WorkDoneProgressReport))


async def test_a_call_name_with_escape_sequences_never_reaches_progress_or_status(lsp, vllm, project):
    """A recovered call is named in the progress; its name is whatever the model wrote."""
    uri = open_doc(lsp, project, "calc.py")
    hostile = Reply(content="<function=edit_file\x1b]0;pwned\x07>\n<parameter=path>\ncalc.py\n</parameter>\n</function>")
    vllm.script(Reply(reasoning="add subtracts", content=json.dumps(PLAN)), hostile, *FIX_REPLIES)
    await execute(lsp, "qwen.server.ask", {"uri": uri, "range": selection(0, 3), "instruction": "make add add"})
    shown = [r.message or "" for reports in lsp.progress_reports.values() for r in reports
             if isinstance(r, types.WorkDoneProgressReport)] + [s["message"] for s in lsp.statuses]
    assert any("a call to an unknown tool call recovered" in m for m in shown)
    assert not any("\x1b" in m or "\x07" in m for m in shown)
