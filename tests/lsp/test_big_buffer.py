"""A 25 MB buffer open while a fix runs: the buffer is left out of the index (the same size limit
as files on disk) and the fix's context says so, and the server keeps answering codeAction on
another file and $/cancelRequest. Latency is printed here and by bench/bench_big_buffer.py, not
asserted."""

from __future__ import annotations

import asyncio
import statistics
import time

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

from tests.lsp.helpers import code_actions, foreign_diagnostic, open_doc, slow_plan_reply, wait_until

BIG_MB = 25


def big_python(megabytes: int) -> str:
    """Plain Python, every line a definition: the costliest kind of text to tag."""
    line = "def generated_{:07d}(value):\n    return value + {:07d}\n"
    count = megabytes * 1_000_000 // len(line.format(0, 0))
    return "".join(line.format(i, i) for i in range(count))


@pytest.mark.timeout(180)
async def test_a_25_mb_buffer_is_not_indexed_and_the_server_keeps_answering(lsp, vllm, project):
    text = big_python(BIG_MB)
    (project / "generated.py").write_text(text)
    open_doc(lsp, project, "generated.py", text=text)
    calc = open_doc(lsp, project, "calc.py")
    main = open_doc(lsp, project, "main.py")
    (fix, *_) = await code_actions(lsp, calc, [foreign_diagnostic()])

    vllm.responder = lambda _body: slow_plan_reply(60)  # the fix stays in flight while we measure
    resolve = asyncio.ensure_future(lsp.protocol.send_request_async(types.CODE_ACTION_RESOLVE, fix, msg_id="big-fix"))
    # The prompt was assembled with the big buffer open: it says the file was not indexed.
    (request,) = await wait_until(vllm.chat_requests, timeout=60, what="the fix's first model call")
    context = request["messages"][1]["content"]
    assert "Not indexed, too large to index" in context and f"generated.py ({len(text) / 1e6:.1f} MB)" in context
    assert "generated_0000001" not in context  # none of its definitions reached the map

    latencies = []
    for _ in range(10):
        started = time.perf_counter()
        actions = await code_actions(lsp, main, [foreign_diagnostic(2)])
        latencies.append(time.perf_counter() - started)
        assert actions and actions[0].title.startswith("Fix with Qwen")
    assert not resolve.done()  # all answered while the fix was running
    print(f"\ncodeAction on another file, 25 MB buffer open, a fix running: median "
          f"{statistics.median(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms")

    lsp.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="big-fix"))
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(resolve, 30)
