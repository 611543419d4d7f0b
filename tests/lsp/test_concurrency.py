"""Twenty overlapping resolves must not hold up didChange: the engine runs off the server's loop.
The latency figure is printed here and by bench/bench_lsp.py, not asserted."""

from __future__ import annotations

import asyncio
import statistics
import time

from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

from qwen_lsp.wire import ActionData
from tests.lsp.helpers import code_actions, foreign_diagnostic, open_doc, slow_plan_reply, wait_until

N_RESOLVES = 20


async def test_twenty_overlapping_resolves_do_not_block_did_change(lsp, vllm, project):
    uri = open_doc(lsp, project, "calc.py")
    vllm.responder = lambda _body: slow_plan_reply(30)  # every model call streams for 30 s
    (fix, *_) = await code_actions(lsp, uri, [foreign_diagnostic()])

    resolves = [
        asyncio.ensure_future(lsp.protocol.send_request_async(types.CODE_ACTION_RESOLVE, fix, msg_id=f"r{i}"))
        for i in range(N_RESOLVES)
    ]
    await wait_until(lambda: vllm.chat_requests(), what="the first model call")

    latencies = []
    for version in range(2, 12):
        started = time.perf_counter()
        lsp.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(7, 0), types.Position(7, 0)), text=f"# edit {version}\n")],
        ))
        actions = await code_actions(lsp, uri, [foreign_diagnostic()])
        latencies.append(time.perf_counter() - started)
        assert ActionData.model_validate(actions[0].data).version == version  # the change was applied first
    assert not any(r.done() for r in resolves)  # all handled while every resolve was still running

    # Informational only; this process also runs the double's tokenizer. bench/bench_lsp.py measures cleanly.
    print(f"\ndidChange->codeAction with {N_RESOLVES} resolves in flight: median "
          f"{statistics.median(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms")

    for i in range(N_RESOLVES):
        lsp.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=f"r{i}"))
    results = await asyncio.wait_for(asyncio.gather(*resolves, return_exceptions=True), 60)
    assert all(isinstance(r, JsonRpcRequestCancelled) for r in results), results
