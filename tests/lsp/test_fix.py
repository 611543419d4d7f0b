"""Code action list -> resolve -> versioned WorkspaceEdit; progress; cancel; stale buffers."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

from qwen_lsp.lsp.convert import apply_text_edits, file_uri
from tests.lsp.helpers import (
    FIX_REPLIES, PYTEST, PYTEST_OUTPUT, code_actions, foreign_diagnostic, open_doc, plan_reply, slow_plan_reply,
    terminal_output, wait_until,
)
from tests.vllm_double import Reply


async def test_resolve_fixes_a_real_bug_with_a_versioned_annotated_edit(lsp, vllm, project):
    calc = open_doc(lsp, project, "calc.py", version=1)
    # An unsaved edit: the engine must read the buffer, and the edit must carry version 2.
    lsp.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=calc, version=2),
        [types.TextDocumentContentChangePartial(range=types.Range(types.Position(7, 0), types.Position(7, 0)),
                                               text="# unsaved\n")],
    ))
    terminal_output(lsp, PYTEST, 1, PYTEST_OUTPUT, project)
    test_uri = file_uri(project, "test_calc.py")
    diagnostics = await wait_until(lambda: lsp.diagnostics.get(test_uri))

    actions = await code_actions(lsp, test_uri, list(diagnostics))
    fix = next(a for a in actions if a.kind == types.CodeActionKind.QuickFix)
    assert fix.title.startswith("Fix with Qwen: AssertionError") and fix.edit is None  # listed instantly

    vllm.script(plan_reply(), *FIX_REPLIES)
    resolved = await lsp.code_action_resolve_async(fix)

    assert resolved.title == f"Fix AssertionError (✓ parses, ✓ {PYTEST})"
    (doc_edit,) = resolved.edit.document_changes
    assert doc_edit.text_document.uri == calc and doc_edit.text_document.version == 2
    (edit,) = doc_edit.edits
    assert edit.range.start.line == 1 and edit.new_text == "    total = a + b\n"
    note = resolved.edit.change_annotations[edit.annotation_id]
    assert note.label == "calc.py: line 2" and "+    total = a + b" in note.description

    # Apply it as the editor would, save, and the project's test passes.
    buffer = (project / "calc.py").read_text() + "# unsaved\n"
    (project / "calc.py").write_text(apply_text_edits(buffer, doc_edit.edits))
    run = subprocess.run(PYTEST.split(), cwd=project, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout

    # Work-done progress: begin, the engine's phases as reports, end.
    (reports,) = [r for r in lsp.progress_reports.values() if r]
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and isinstance(reports[-1], types.WorkDoneProgressEnd)
    messages = [r.message for r in reports if isinstance(r, types.WorkDoneProgressReport)]
    # Live thinking (engine/thinking.py) reports the plan's reasoning tail between the phases.
    phases = [m for m in messages if not m.startswith("thinking ·")]
    assert phases[:2] == ["planning", "patch round 1"] and "validating" in phases
    assert any(m.startswith("thinking ·") for m in messages)
    states = [s["state"] for s in lsp.statuses]
    assert "busy" in states and states[-1] == "idle"


async def test_a_terminal_diagnostic_is_the_failing_command_and_its_plan_is_cached(lsp, vllm, project):
    terminal_output(lsp, PYTEST, 1, PYTEST_OUTPUT, project)
    test_uri = file_uri(project, "test_calc.py")
    diagnostics = await wait_until(lambda: lsp.diagnostics.get(test_uri))
    (fix, *_) = await code_actions(lsp, test_uri, list(diagnostics))

    vllm.script(plan_reply(), *FIX_REPLIES)
    await lsp.code_action_resolve_async(fix)
    plan_request = vllm.chat_requests()[0]
    assert f"`{PYTEST}` failed with exit code 1" in json.dumps(plan_request["messages"])

    vllm.reset()
    vllm.script(*FIX_REPLIES)  # no plan: the same failure again is answered from the disk cache
    again = await lsp.code_action_resolve_async(fix)
    assert again.edit is not None
    assert [b["chat_template_kwargs"]["enable_thinking"] for b in vllm.chat_requests()] == [False, False, False]


async def test_cancel_during_resolve_stops_the_model_stream(lsp, vllm, project):
    uri = open_doc(lsp, project, "calc.py")
    (fix, *_) = await code_actions(lsp, uri, [foreign_diagnostic()])
    vllm.script(slow_plan_reply(30))

    request = asyncio.ensure_future(lsp.protocol.send_request_async(types.CODE_ACTION_RESOLVE, fix, msg_id="resolve-1"))
    await wait_until(lambda: vllm.chat_requests(), what="the model call")
    await asyncio.sleep(0.3)  # streaming now
    lsp.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="resolve-1"))

    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(request, 15)
    # The double notices the closed connection at its next chunk write.
    await wait_until(lambda: vllm.aborted_streams == 1, timeout=5, what="the aborted stream")
    # and the server still answers
    assert await code_actions(lsp, uri, [foreign_diagnostic()])


async def test_cancelling_the_progress_cancels_the_fix(lsp, vllm, project):
    uri = open_doc(lsp, project, "calc.py")
    (fix, *_) = await code_actions(lsp, uri, [foreign_diagnostic()])
    vllm.script(slow_plan_reply(30))
    request = asyncio.ensure_future(lsp.code_action_resolve_async(fix))
    await wait_until(lambda: vllm.chat_requests(), what="the model call")

    (token,) = [t for t, reports in lsp.progress_reports.items() if reports]
    assert lsp.progress_reports[token][0].cancellable is True
    lsp.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))

    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(request, 15)
    await wait_until(lambda: vllm.aborted_streams == 1, timeout=5, what="the aborted stream")
    end = lsp.progress_reports[token][-1]
    assert isinstance(end, types.WorkDoneProgressEnd) and end.message == "cancelled"
    assert lsp.statuses[-1]["state"] == "idle"


async def test_a_resolve_that_finds_nothing_ends_with_a_message_labelling_the_models_words(lsp, vllm, project):
    """A client applies a resolved action without an edit by doing nothing (Neovim's `gra`, VS Code's quick
    fix): the server's message is what says the fix ended, what was tried and why nothing changed."""
    uri = open_doc(lsp, project, "calc.py")
    (fix, *_) = await code_actions(lsp, uri, [foreign_diagnostic()])
    vllm.script(plan_reply(), *[Reply(tool_calls=[("finish", {"summary": "All good\x1b[2J, tests\u202e pass"})])] * 2)
    resolved = await lsp.code_action_resolve_async(fix)

    assert resolved.edit is None and resolved.command is None
    (message,) = await wait_until(lambda: [m for m in lsp.messages if "made no change" in m.message], timeout=60)
    assert message.type == types.MessageType.Info
    assert message.message.startswith("Qwen made no change for ") and "tried a plan and 2 patch rounds;" in message.message
    assert "the model says: “All good␛[2J, tests\\u202e pass”" in message.message  # labelled, escapes shown
    assert resolved.disabled.reason == message.message


async def test_a_buffer_changed_during_resolve_is_refused(lsp, vllm, project):
    uri = open_doc(lsp, project, "calc.py", version=1)
    (fix, *_) = await code_actions(lsp, uri, [foreign_diagnostic()])
    vllm.script(slow_plan_reply(1.5), *FIX_REPLIES)

    request = asyncio.ensure_future(lsp.code_action_resolve_async(fix))
    await wait_until(lambda: vllm.chat_requests(), what="the model call")  # the engine has read calc.py
    lsp.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [types.TextDocumentContentChangePartial(range=types.Range(types.Position(0, 0), types.Position(0, 0)),
                                               text="import math\n")],
    ))
    resolved = await asyncio.wait_for(request, 60)

    assert resolved.edit is None
    assert "calc.py changed while Qwen was working" in resolved.disabled.reason
    assert "stale" in resolved.title
    assert any("calc.py changed" in m.message for m in lsp.messages)


async def test_code_action_list_offers_fix_ask_explain_review(lsp, project):
    uri = open_doc(lsp, project, "calc.py")
    selection = types.Range(types.Position(0, 0), types.Position(2, 16))
    actions = await code_actions(lsp, uri, [foreign_diagnostic()], selection=selection)
    by_title = {a.title: a for a in actions}
    assert set(by_title) == {
        "Fix with Qwen: add() returns the difference", "Ask Qwen…", "Explain with Qwen", "Review this file with Qwen",
    }
    ask = by_title["Ask Qwen…"]
    assert ask.kind == types.CodeActionKind.RefactorRewrite and ask.command.command == "qwen.ask"
    assert list(ask.command.arguments) == [{"uri": uri, "range": {"start": {"line": 0, "character": 0},
                                                             "end": {"line": 2, "character": 16}}}]
    assert by_title["Explain with Qwen"].command.command == "qwen.server.explain"
    review = by_title["Review this file with Qwen"]
    assert review.kind == types.CodeActionKind.Source and list(review.command.arguments) == [{"uri": uri}]

    only_source = await code_actions(lsp, uri, [foreign_diagnostic()], selection=selection, only=["source"])
    assert [a.title for a in only_source] == ["Review this file with Qwen"]
    no_selection = await code_actions(lsp, uri, [], selection=types.Range(types.Position(1, 2), types.Position(1, 2)))
    assert [a.title for a in no_selection] == ["Review this file with Qwen"]
