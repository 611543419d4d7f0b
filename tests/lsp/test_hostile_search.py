"""A catastrophic-backtracking pattern from the model must not freeze the language server
(issue 13, class 2): search_code runs in linear time, so didChange -> codeAction is answered."""

from __future__ import annotations

import asyncio
import json

from lsprotocol import types

from qwen_lsp.wire import ActionData
from tests.lsp.helpers import PLAN, code_actions, open_doc, wait_until
from tests.lsp.helpers import foreign_diagnostic
from tests.vllm_double import Reply

# With a backtracking engine this takes about 2**40 steps on the line below: hours, holding the GIL.
HOSTILE = "(a+)+$"


async def test_a_hostile_search_does_not_stop_did_change_and_code_action(lsp, vllm, project):
    (project / "hostile.txt").write_text("a" * 40 + "!\n")
    uri = open_doc(lsp, project, "calc.py")
    vllm.script(
        Reply(reasoning="r", content=json.dumps(PLAN)),
        Reply(tool_calls=[("search_code", {"pattern": HOSTILE})]),
        Reply(reasoning="waiting " * 100, content="", chunk_delay=0.3),  # keeps the fix in flight ~30 s
    )
    (fix, *_) = await code_actions(lsp, uri, [foreign_diagnostic()])
    resolve = asyncio.ensure_future(lsp.protocol.send_request_async(types.CODE_ACTION_RESOLVE, fix, msg_id="hostile"))
    await wait_until(lambda: len(vllm.chat_requests()) >= 2, what="the request that answers with the search")

    lsp.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(7, 0), types.Position(7, 0)), text="# edit\n")],
    ))
    actions = await asyncio.wait_for(code_actions(lsp, uri, [foreign_diagnostic()]), 20)
    assert ActionData.model_validate(actions[0].data).version == 2  # answered, after the change

    third = await wait_until(lambda: vllm.chat_requests()[2:], what="the request after the search")
    result = third[0]["messages"][-1]
    assert result["role"] == "tool" and result["content"].startswith("No matches.")
    assert not resolve.done()
    lsp.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="hostile"))
    await asyncio.wait_for(asyncio.gather(resolve, return_exceptions=True), 60)


def test_a_pattern_re2_cannot_run_is_a_tool_error_the_model_can_act_on(tmp_path):
    from qwen_lsp.engine.overlay import Overlay
    from qwen_lsp.engine.tools import ToolBox

    (tmp_path / "a.py").write_text("x = x\n")
    answer = ToolBox(Overlay(tmp_path)).call("search_code", {"pattern": r"(\w+) = \1"})
    assert answer.startswith("Error: search_code refused the pattern") and "backreferences" in answer
