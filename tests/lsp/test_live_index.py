"""The server's live index as an editor sees it: unsaved buffers reach the repo map, files changed on
disk reach it through the watcher the server registers, and a closed file changed on disk loses its
stale terminal diagnostics."""

from __future__ import annotations

import asyncio
import json

from lsprotocol import types

from qwen_lsp.lsp.convert import file_uri
from tests.lsp.helpers import PLAN, PYTEST, PYTEST_OUTPUT, code_actions, open_doc, pytest_failure_fix, terminal_output, wait_until
from tests.vllm_double import Reply


def _map_section(request: dict) -> str:
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    return user.split("# Repository map", 1)[1].split("# Git context", 1)[0]


async def _first_fix_request(lsp, vllm, project) -> dict:
    fix = await pytest_failure_fix(lsp, project)
    vllm.script(Reply(content=json.dumps(PLAN)), *[Reply(tool_calls=[("finish", {"summary": "nothing"})])] * 2)
    await lsp.code_action_resolve_async(fix)
    return vllm.chat_requests()[0]


async def test_an_unsaved_definition_and_a_file_created_on_disk_reach_the_repo_map(lsp, vllm, project):
    calc = open_doc(lsp, project, "calc.py")
    lsp.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=calc, version=2),
        [types.TextDocumentContentChangePartial(range=types.Range(types.Position(7, 0), types.Position(7, 0)),
                                               text="\n\ndef typed_but_not_saved(x):\n    return add(x, x)\n")],
    ))
    (project / "money.py").write_text("from calc import add\n\n\ndef created_on_disk(a):\n    return add(a, 1)\n")
    lsp.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=file_uri(project, "money.py"), type=types.FileChangeType.Created)]))

    # The focus file (unsaved too) now uses both: the map ranks what the focus file uses.
    test = open_doc(lsp, project, "test_calc.py")
    lsp.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=test, version=2),
        [types.TextDocumentContentChangePartial(range=types.Range(types.Position(5, 0), types.Position(5, 0)),
                                               text="\n\ndef test_more():\n    assert typed_but_not_saved(1) == 2\n"
                                                    "    assert created_on_disk(1) == 2\n")],
    ))
    repo_map = _map_section(await _first_fix_request(lsp, vllm, project))
    assert "def typed_but_not_saved(x)" in repo_map  # only in the buffer
    assert "def created_on_disk(a)" in repo_map


async def test_the_server_registers_a_file_watcher_when_the_client_can(lsp):
    registration = await wait_until(lambda: lsp.registrations, what="client/registerCapability")
    assert [r.method for r in registration] == [types.WORKSPACE_DID_CHANGE_WATCHED_FILES]


async def test_a_closed_file_changed_on_disk_loses_its_terminal_diagnostics(lsp, project):
    terminal_output(lsp, PYTEST, 1, PYTEST_OUTPUT, project)
    test_uri = file_uri(project, "test_calc.py")
    await wait_until(lambda: lsp.diagnostics.get(test_uri), what="the terminal diagnostic")
    (project / "test_calc.py").write_text("\n\n" + (project / "test_calc.py").read_text())  # the line moved
    lsp.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=test_uri, type=types.FileChangeType.Changed)]))
    await wait_until(lambda: test_uri in lsp.diagnostics and not lsp.diagnostics[test_uri], what="the stale diagnostic to go")


async def test_a_buffer_edited_after_its_prompt_was_prefetched_reaches_the_fix_as_edited(lsp, vllm, project):
    calc = open_doc(lsp, project, "calc.py")
    await _first_fix_request(lsp, vllm, project)  # the server has met the model server: prefetching is on
    vllm.requests.clear()
    test_uri = file_uri(project, "test_calc.py")
    diagnostics = await wait_until(lambda: lsp.diagnostics.get(test_uri))
    fix = next(a for a in await code_actions(lsp, test_uri, list(diagnostics)) if a.kind == types.CodeActionKind.QuickFix)
    await asyncio.sleep(1.0)  # past the prefetch delay: the prompt of the unedited state is ready
    lsp.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=calc, version=2),
        [types.TextDocumentContentChangePartial(range=types.Range(types.Position(0, 0), types.Position(0, 0)),
                                               text="# typed after the diagnostic appeared\n")],
    ))
    vllm.script(Reply(content=json.dumps(PLAN)), *[Reply(tool_calls=[("finish", {"summary": "nothing"})])] * 2)
    await lsp.code_action_resolve_async(fix)
    repo_map = _map_section(vllm.chat_requests()[0])
    assert "    2│def add(a, b):" in repo_map  # moved down a line by the edit; the prefetched map said 1


async def test_a_terminal_failure_is_assembled_at_once_and_a_cursor_move_does_not_cancel_it(lsp, vllm, project):
    await _first_fix_request(lsp, vllm, project)  # the server has met the model server: prefetching is on
    vllm.requests.clear()
    test_uri = file_uri(project, "test_calc.py")
    del lsp.diagnostics[test_uri]
    # The command fails again; right away the cursor moves over another diagnostic (listings debounce
    # and supersede each other, but not the failure the terminal just published).
    terminal_output(lsp, PYTEST, 1, PYTEST_OUTPUT.replace("0.01s", "0.02s"), project)
    published = await wait_until(lambda: lsp.diagnostics.get(test_uri), what="the second run's diagnostic")
    other = types.Diagnostic(range=types.Range(types.Position(0, 0), types.Position(0, 4)), message="unused import",
                             source="pyright")
    await code_actions(lsp, test_uri, [other])
    await asyncio.sleep(1.5)  # the background assembly has long finished
    # Changed on disk behind the server's back (no watcher event): only an assembly made before this
    # change, when the failure was published, can show the file without the line.
    (project / "test_calc.py").write_text((project / "test_calc.py").read_text() + "# written after the prefetch\n")
    fix = next(a for a in await code_actions(lsp, test_uri, list(published)) if a.kind == types.CodeActionKind.QuickFix)
    vllm.script(Reply(content=json.dumps(PLAN)), *[Reply(tool_calls=[("finish", {"summary": "nothing"})])] * 2)
    await lsp.code_action_resolve_async(fix)
    user = next(m["content"] for m in vllm.chat_requests()[0]["messages"] if m["role"] == "user")
    assert "assert add(2, 3) == 5" in user and "written after the prefetch" not in user
