"""A document outside every workspace folder (issue 35, item 2): a task names its file relative
to a folder, and the bare name of `/elsewhere/app.py` is `<folder>/app.py`, another file. Ask,
Fix, Explain, a quick fix and a review of it are refused with the reason; nothing reaches the
model and no edit is sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsprotocol import types

from qwen_lsp.lsp.convert import file_uri
from tests.lsp.helpers import as_dict, code_actions, execute, foreign_diagnostic, open_doc, selection
from tests.vllm_double import Reply

APP = "def add(a, b):\n    total = a - b\n    return total\n"
NOT_IN_FOLDER = "is not in a workspace folder"


@pytest.fixture
def elsewhere(tmp_path: Path, project: Path) -> Path:
    """`app.py` outside the workspace, and a file of the same name inside it that nobody asked about."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "app.py").write_text(APP)
    (project / "app.py").write_text(APP)
    return folder


def editing_replies() -> list[Reply]:
    return [
        Reply(reasoning="subtracts", content=json.dumps({"hypotheses": ["a - b"], "evidence": [], "steps": ["a + b"],
                                                         "verify_command": None})),
        Reply(tool_calls=[("edit_file", {"path": "app.py", "old_string": "a - b", "new_string": "a + b"})]),
        Reply(tool_calls=[("finish", {"summary": "adds"})]),
    ]


@pytest.mark.parametrize("command", ["qwen.server.ask", "qwen.server.fix"])
async def test_ask_and_fix_refuse_a_file_outside_every_folder(lsp, vllm, project, elsewhere, command):
    uri = open_doc(lsp, elsewhere, "app.py")
    vllm.script(*editing_replies())
    argument = {"uri": uri, "range": selection(1, 1)}
    if command == "qwen.server.ask":
        argument["instruction"] = "make add add"
    outcome = await execute(lsp, command, argument)
    assert not outcome["applied"] and NOT_IN_FOLDER in outcome["summary"] and str(elsewhere / "app.py") in outcome["summary"]
    assert lsp.applied_edits == [] and vllm.chat_requests() == []
    assert (project / "app.py").read_text() == APP and (elsewhere / "app.py").read_text() == APP


async def test_explain_refuses_it(lsp, vllm, elsewhere):
    uri = open_doc(lsp, elsewhere, "app.py")
    vllm.script(Reply(content="It subtracts."))
    outcome = await execute(lsp, "qwen.server.explain", {"uri": uri, "range": selection(0, 2)})
    assert NOT_IN_FOLDER in outcome["markdown"] and vllm.chat_requests() == []


async def test_a_quick_fix_resolves_disabled_with_the_reason(lsp, vllm, project, elsewhere):
    uri = open_doc(lsp, elsewhere, "app.py")
    vllm.script(*editing_replies())
    fix = next(a for a in await code_actions(lsp, uri, [foreign_diagnostic()]) if a.kind == types.CodeActionKind.QuickFix)
    resolved = await lsp.code_action_resolve_async(fix)
    assert resolved.edit is None and resolved.disabled is not None and NOT_IN_FOLDER in resolved.disabled.reason
    assert vllm.chat_requests() == [] and (project / "app.py").read_text() == APP


async def test_review_refuses_it(lsp, vllm, elsewhere):
    uri = open_doc(lsp, elsewhere, "app.py")
    outcome = await execute(lsp, "qwen.server.review", {"uri": uri})
    assert outcome == {"findings": 0, "reviewed": False}
    assert any(NOT_IN_FOLDER in m.message for m in lsp.messages) and vllm.chat_requests() == []


async def test_a_file_inside_the_folder_is_still_served(lsp, vllm, project, elsewhere):
    uri = open_doc(lsp, project, "app.py")
    vllm.script(*editing_replies())
    outcome = await execute(lsp, "qwen.server.ask", {"uri": uri, "range": selection(1, 1), "instruction": "make add add"})
    assert outcome["applied"], outcome
    [edit] = lsp.applied_edits
    assert [c.text_document.uri for c in edit.edit.document_changes] == [file_uri(project, "app.py")]
