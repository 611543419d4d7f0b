"""Qwen3.6 as it really answers (issue 33), through the language server: a code action resolved
while the model leaves its call in the reasoning, writes a rejected draft there, puts XML beside a
native call, repeats itself or finishes before the work."""

from __future__ import annotations

import pytest
from lsprotocol import types

from tests.lsp.helpers import code_actions, foreign_diagnostic, open_doc, plan_reply, wait_until
from tests.quirk_answers import wherever_the_model_left_it
from tests.vllm_double import Reply, qwen_xml_tool_call as xml

EDIT = {"path": "calc.py", "old_string": "total = a - b", "new_string": "total = a + b"}
DRAFT = {"path": "calc.py", "old_string": "total = a - b", "new_string": "total = b - a  # DRAFT"}
FINISH = Reply(tool_calls=[("finish", {"summary": "add now adds"})])


async def resolve(lsp, vllm, project, *replies: Reply) -> types.CodeAction:
    uri = open_doc(lsp, project, "calc.py")
    (fix, *_) = await code_actions(lsp, uri, [foreign_diagnostic()])
    vllm.script(plan_reply(), *replies)
    return await lsp.code_action_resolve_async(fix)


def the_edit(resolved: types.CodeAction) -> str:
    assert resolved.edit is not None, resolved.disabled
    (doc_edit,) = resolved.edit.document_changes
    return "".join(e.new_text for e in doc_edit.edits)


@pytest.mark.parametrize("answer", wherever_the_model_left_it(EDIT, DRAFT, cut_before="<parameter=new_string>"))
async def test_resolve_finds_the_call_wherever_the_model_left_it(lsp, vllm, project, answer):
    resolved = await resolve(lsp, vllm, project, answer, FINISH)
    edited = the_edit(resolved)
    assert "total = a + b" in edited and "DRAFT" not in edited


async def test_resolve_never_offers_a_rejected_draft(lsp, vllm, project):
    draft = Reply(reasoning=xml("edit_file", DRAFT) + "\nHmm, no. Let me look at the caller first.", content="")
    resolved = await resolve(lsp, vllm, project, draft, *[Reply(content="Not sure.")] * 2)
    assert resolved.edit is None
    (message,) = await wait_until(lambda: [m for m in lsp.messages if "made no change" in m.message], timeout=60)
    assert "DRAFT" not in message.message


async def test_resolve_stops_a_repeated_edit_and_offers_the_change(lsp, project, vllm):
    edit = Reply(tool_calls=[("edit_file", EDIT)])
    resolved = await resolve(lsp, vllm, project, edit, edit, edit, edit, edit, FINISH)
    assert "total = a + b" in the_edit(resolved)
    assert len(vllm.chat_requests()) == 4  # the plan and three patch rounds


async def test_resolve_after_two_early_finishes_says_the_model_gave_up(lsp, vllm, project):
    early = Reply(tool_calls=[("finish", {"summary": "nothing to change"})])
    resolved = await resolve(lsp, vllm, project, early, early)
    assert resolved.edit is None
    (message,) = await wait_until(lambda: [m for m in lsp.messages if "made no change" in m.message], timeout=60)
    assert "the model gave up on the edits its plan named" in message.message
    assert message.message.endswith("the model says: “nothing to change”")


async def test_a_prefix_cache_that_never_hits_is_said_once_in_the_servers_log(lsp, vllm, project):
    vllm.prefix_caching = False  # the server reports cached tokens, and none ever hit
    edit = Reply(tool_calls=[("edit_file", EDIT)])
    resolved = await resolve(lsp, vllm, project, edit, FINISH)
    assert "total = a + b" in the_edit(resolved)
    warnings = [m.message for m in lsp.log_messages if "prefix cache is not hitting" in m.message]
    assert len(warnings) == 1 and "qwen-lsp doctor" in warnings[0]

    (project / "calc.py").write_text((project / "calc.py").read_text() + "\n")  # a new fix, not the cached plan
    await resolve(lsp, vllm, project, edit, FINISH)
    assert len([m for m in lsp.log_messages if "prefix cache is not hitting" in m.message]) == 1  # said once
