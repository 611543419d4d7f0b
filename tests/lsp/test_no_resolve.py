"""A client without `codeAction/resolve` support (Emacs 29's eglot, as recorded by pytest-lsp):
"Fix with Qwen" is a command that answers at once; the edit comes later by workspace/applyEdit,
with $/progress meanwhile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from qwen_lsp.lsp.convert import apply_text_edits, file_uri
from tests.lsp.helpers import (
    BUGGY, PYTEST, PYTEST_OUTPUT, SERVER, code_actions, open_doc, recording_client, terminal_output, wait_until,
)
from tests.lsp.helpers import FIX_REPLIES, foreign_diagnostic, plan_reply, slow_plan_reply
from tests.vllm_double import Reply


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=recording_client))
async def eglot(lsp_client: LanguageClient, project: Path, server_options: dict[str, Any]):
    capabilities = client_capabilities("emacs")
    assert capabilities.text_document.code_action.resolve_support is None  # what makes this client special
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities, root_uri=file_uri(project, ""),
        workspace_folders=[types.WorkspaceFolder(uri=file_uri(project, ""), name="proj")],
        initialization_options=server_options,
    ))
    await wait_until(lambda: any(s["state"] == "idle" for s in lsp_client.statuses))
    yield
    await lsp_client.shutdown_session()


async def test_the_fix_is_a_command_that_returns_at_once_and_the_edit_follows(eglot, vllm, project):
    calc = open_doc(eglot, project, "calc.py", version=3)
    terminal_output(eglot, PYTEST, 1, PYTEST_OUTPUT, project)
    test_uri = file_uri(project, "test_calc.py")
    diagnostics = await wait_until(lambda: eglot.diagnostics.get(test_uri))

    actions = await code_actions(eglot, test_uri, list(diagnostics))
    fix = next(a for a in actions if a.kind == types.CodeActionKind.QuickFix)
    assert fix.title.startswith("Fix with Qwen: AssertionError")
    assert fix.edit is None and fix.data is None and fix.command is not None  # nothing left to resolve

    vllm.script(slow_plan_reply(2.0), *FIX_REPLIES)  # a fix that takes a while
    answer = await eglot.workspace_execute_command_async(
        types.ExecuteCommandParams(command=fix.command.command, arguments=fix.command.arguments))
    assert dict(answer._asdict() if hasattr(answer, "_asdict") else answer) == {"started": True}
    assert eglot.applied_edits == []  # the answer came before the fix

    params = (await wait_until(lambda: eglot.applied_edits, timeout=60, what="workspace/applyEdit"))[0]
    assert params.label == f"Fix AssertionError (✓ parses, ✓ {PYTEST})"
    (doc_edit,) = params.edit.document_changes
    assert doc_edit.text_document.uri == calc and doc_edit.text_document.version == 3
    assert apply_text_edits(BUGGY, doc_edit.edits) == BUGGY.replace("total = a - b", "total = a + b")
    (reports,) = [r for r in eglot.progress_reports.values() if r]  # $/progress while it worked
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and isinstance(reports[-1], types.WorkDoneProgressEnd)


async def test_a_fix_that_finds_nothing_says_so_in_a_message(eglot, vllm, project):
    uri = open_doc(eglot, project, "calc.py")
    (fix, *_) = await code_actions(eglot, uri, [foreign_diagnostic()])
    vllm.script(plan_reply(), *[Reply(tool_calls=[("finish", {"summary": "nothing to change"})])] * 2)
    await eglot.workspace_execute_command_async(
        types.ExecuteCommandParams(command=fix.command.command, arguments=fix.command.arguments))
    (message,) = await wait_until(lambda: [m for m in eglot.messages if "no fix applied" in m.message], timeout=60)
    assert eglot.applied_edits == []
    assert "tried a plan and 2 patch rounds" in message.message  # what was tried (a finish, the plan's edits, a finish)
    assert message.message.endswith("the model says: “nothing to change”")  # the model's words, labelled

