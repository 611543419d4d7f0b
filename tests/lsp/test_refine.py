"""`qwen.server.refine`: a follow-up note on the last result proposed for a file continues the same
conversation (append-only, no new plan) and its edit applies to the buffer as it is now."""

from __future__ import annotations

from lsprotocol import types

from qwen_lsp.lsp.convert import apply_text_edits
from tests.lsp.helpers import BUGGY, FIX_REPLIES, execute, open_doc, plan_reply, selection
from tests.vllm_double import Reply

FIRST = BUGGY.replace("total = a - b", "total = a + b")
REFINED = BUGGY.replace("total = a - b", "total = b + a")
REFINE_REPLIES = [
    Reply(tool_calls=[("edit_file", {"path": "calc.py", "old_string": "total = a + b", "new_string": "total = b + a"})]),
    Reply(tool_calls=[("finish", {"summary": "b first"})]),
]


async def test_refine_after_the_first_edit_was_applied(lsp, vllm, project):
    uri = open_doc(lsp, project, "calc.py", version=4)
    vllm.script(plan_reply(), *FIX_REPLIES)
    answer = await execute(lsp, "qwen.server.ask", {"uri": uri, "range": selection(0, 3), "instruction": "make add add"})
    assert answer["applied"] is True
    first_requests = vllm.chat_requests()
    # The editor applied it: the buffer now holds the first result.
    lsp.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=5),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=FIRST)],
    ))

    vllm.script(*REFINE_REPLIES)
    answer = await execute(lsp, "qwen.server.refine", {"uri": uri, "note": "not like that: b first"})
    assert answer["applied"] is True, answer
    (_, params) = lsp.applied_edits
    (doc_edit,) = params.edit.document_changes
    assert doc_edit.text_document.version == 5  # the buffer as it is now
    assert apply_text_edits(FIRST, doc_edit.edits) == REFINED

    refine_requests = vllm.chat_requests()[len(first_requests):]
    last = first_requests[-1]["messages"]
    assert refine_requests[0]["messages"][: len(last)] == last  # append-only: the same prefix
    assert "not like that: b first" in refine_requests[0]["messages"][-1]["content"]
    assert all(not r["chat_template_kwargs"]["enable_thinking"] for r in refine_requests)


async def test_refine_without_a_result_says_so(lsp, vllm, project):
    uri = open_doc(lsp, project, "calc.py")
    answer = await execute(lsp, "qwen.server.refine", {"uri": uri, "note": "again"})
    assert answer == {"applied": False, "summary": "no recent Qwen result for this file to refine", "title": ""}
    assert not vllm.chat_requests()


async def test_a_refine_action_on_the_changed_lines_while_fresh(lsp, vllm, project):
    from tests.lsp.helpers import code_actions, whole_line

    uri = open_doc(lsp, project, "calc.py", version=1)
    assert not [a for a in await code_actions(lsp, uri, [], whole_line(1)) if a.title.startswith("Refine")]
    vllm.script(plan_reply(), *FIX_REPLIES)
    await execute(lsp, "qwen.server.ask", {"uri": uri, "range": selection(0, 3), "instruction": "make add add"})
    changed = BUGGY.splitlines().index("    total = a - b")
    (action,) = [a for a in await code_actions(lsp, uri, [], whole_line(changed)) if a.title.startswith("Refine")]
    assert action.command.command == "qwen.refine" and list(action.command.arguments) == [{"uri": uri}]
    assert not [a for a in await code_actions(lsp, uri, [], whole_line(changed + 20)) if a.title.startswith("Refine")]
    lsp.text_document_did_change(types.DidChangeTextDocumentParams(  # the user typed something else there
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=BUGGY.replace("a - b", "a * b"))],
    ))
    assert not [a for a in await code_actions(lsp, uri, [], whole_line(changed)) if a.title.startswith("Refine")]
