"""Terminal output in -> diagnostics out, and their lifetime."""

from __future__ import annotations

from lsprotocol import types

from qwen_lsp.lsp.convert import file_uri
from qwen_lsp.sidechannel import socket_path
from tests.lsp.helpers import PYTEST, PYTEST_OUTPUT, name_error_output, open_doc, terminal_output, wait_until


async def test_terminal_output_publishes_diagnostics_at_the_right_line_until_the_command_succeeds(lsp, project):
    uri = file_uri(project, "main.py")
    terminal_output(lsp, "python main.py", 1, name_error_output(project), project)
    (diag,) = await wait_until(lambda: lsp.diagnostics.get(uri), what="diagnostics")

    assert diag.range == types.Range(types.Position(2, 10), types.Position(2, 25))  # `undefined_name`, 0-based line 2
    assert diag.message == "NameError: name 'undefined_name' is not defined"
    assert diag.source == "qwen" and diag.severity == types.DiagnosticSeverity.Error
    (caller,) = diag.related_information
    assert caller.location.uri == uri and caller.location.range.start.line == 5

    terminal_output(lsp, "python main.py", 0, "", project)
    await wait_until(lambda: uri in lsp.diagnostics and not lsp.diagnostics[uri], what="cleared diagnostics")


async def test_pytest_output_points_at_the_test_line(lsp, project):
    terminal_output(lsp, PYTEST, 1, PYTEST_OUTPUT, project)
    (diag,) = await wait_until(lambda: lsp.diagnostics.get(file_uri(project, "test_calc.py")))
    assert diag.range.start.line == 4 and "assert -1 == 5" in diag.message


async def test_editing_the_line_clears_its_diagnostic_and_edits_above_move_it(lsp, project):
    uri = open_doc(lsp, project, "main.py")
    terminal_output(lsp, "python main.py", 1, name_error_output(project), project)
    await wait_until(lambda: lsp.diagnostics.get(uri))

    insert_above = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(0, 0), types.Position(0, 0)), text="import os\n"
    )
    lsp.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=2), [insert_above]
    ))
    await wait_until(lambda: lsp.diagnostics[uri] and lsp.diagnostics[uri][0].range.start.line == 3, what="moved")

    edit_there = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(3, 10), types.Position(3, 24)), text="x"
    )
    lsp.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=3), [edit_there]
    ))
    await wait_until(lambda: not lsp.diagnostics[uri], what="cleared by the edit")


async def test_an_added_workspace_folder_gets_diagnostics_and_a_side_channel(lsp, project, tmp_path, cache_dir):
    other = tmp_path / "other"
    other.mkdir()
    (other / "main.py").write_text((project / "main.py").read_text())
    lsp.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        types.WorkspaceFoldersChangeEvent(added=[types.WorkspaceFolder(uri=file_uri(other, ""), name="other")], removed=[])
    ))
    await wait_until(socket_path(other, cache_dir).exists, what="the new folder's socket")

    terminal_output(lsp, "python main.py", 1, name_error_output(other), other)
    (diag,) = await wait_until(lambda: lsp.diagnostics.get(file_uri(other, "main.py")))
    assert diag.data["cwd"] == "" and diag.data["command"] == "python main.py"  # relative to its own folder
