"""`qwen.server.fix` (`:QwenFix`, VS Code's "Qwen: Fix") where Qwen reported nothing: the editor's
diagnostics there from any server, else the code on those lines."""

from __future__ import annotations


import json

from qwen_lsp.lsp.convert import apply_text_edits, converter
from tests.lsp.helpers import BUGGY, FIX_REPLIES, execute, foreign_diagnostic, open_doc, plan_reply, selection


async def test_a_diagnostic_of_another_server_at_the_cursor_is_fixed(lsp, vllm, project):
    uri = open_doc(lsp, project, "calc.py", version=2)
    vllm.script(plan_reply(), *FIX_REPLIES)
    pylint = converter().unstructure(foreign_diagnostic(line=1))
    answer = await execute(lsp, "qwen.server.fix", {"uri": uri, "range": selection(1, 1), "diagnostics": [pylint]})
    assert answer["applied"] is True
    (params,) = lsp.applied_edits
    assert params.label.startswith("Fix add() returns the difference")
    (doc_edit,) = params.edit.document_changes
    assert apply_text_edits(BUGGY, doc_edit.edits) == BUGGY.replace("total = a - b", "total = a + b")
    task = json.dumps(vllm.chat_requests()[0]["messages"])
    assert "pylint: [W9999] add() returns the difference" in task


async def test_with_no_diagnostic_the_code_under_the_cursor_is_fixed(lsp, vllm, project):
    uri = open_doc(lsp, project, "calc.py", version=5)
    vllm.script(plan_reply(), *FIX_REPLIES)
    answer = await execute(lsp, "qwen.server.fix", {"uri": uri, "range": selection(1, 1)})
    assert answer["applied"] is True
    (params,) = lsp.applied_edits
    assert params.label.startswith("Fix calc.py:2 (")
    (doc_edit,) = params.edit.document_changes
    assert doc_edit.text_document.version == 5
    task = json.dumps(vllm.chat_requests()[0]["messages"])
    assert "Fix what is wrong in calc.py, line 2" in task
