"""Helpers for driving the language server as an editor would: the recording client,
document and terminal notifications, code-action requests, and the scripted fix."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Union

from lsprotocol import types
from pytest_lsp import LanguageClient, make_test_lsp_client

from qwen_lsp.lsp.convert import file_uri
from tests.calc_project import BUGGY, PYTEST, PYTEST_OUTPUT, TEST  # noqa: F401 (re-exported to the tests)
from tests.vllm_double import Reply

SERVER = [sys.executable, "-m", "qwen_lsp.cli"]
MAIN = "def main():\n    x = 1\n    print(undefined_name)\n\n\nmain()\n"
PLAN = {
    "hypotheses": ["add subtracts instead of adding"],
    "evidence": [{"path": "calc.py", "start_line": 2, "end_line": 2, "reason": "uses a - b"}],
    "steps": ["use a + b in add"],
    "verify_command": None,
}


def name_error_output(root: Path) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "{root}/main.py", line 6, in <module>\n'
        "    main()\n"
        f'  File "{root}/main.py", line 3, in main\n'
        "    print(undefined_name)\n"
        "          ^^^^^^^^^^^^^^\n"
        "NameError: name 'undefined_name' is not defined\n"
    )


def recording_client() -> LanguageClient:
    """pytest-lsp's client, plus what our custom protocol sends back."""
    client = make_test_lsp_client()
    client.statuses = []  # type: ignore[attr-defined]
    client.applied_edits = []  # type: ignore[attr-defined]
    converter = client.protocol._converter

    def command_or_action(obj: dict[str, Any], _type: Any) -> types.Command | types.CodeAction:
        # lsprotocol reads any object with a "command" key as a Command, which turns a CodeAction
        # whose `command` is a Command object into a Command with a stringified dict.
        return converter.structure(obj, types.Command if isinstance(obj.get("command"), str) else types.CodeAction)

    converter.register_structure_hook(Union[types.Command, types.CodeAction], command_or_action)

    @client.feature("qwen/status")
    def status(ls: LanguageClient, params: Any) -> None:
        ls.statuses.append(params._asdict() if hasattr(params, "_asdict") else params)  # type: ignore[attr-defined]

    client.registrations = []  # type: ignore[attr-defined]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register_capability(ls: LanguageClient, params: types.RegistrationParams) -> None:
        ls.registrations.extend(params.registrations)  # type: ignore[attr-defined]

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(ls: LanguageClient, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        ls.applied_edits.append(params)  # type: ignore[attr-defined]
        return types.ApplyWorkspaceEditResult(applied=True)

    return client


async def wait_until(predicate: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def open_doc(client: LanguageClient, root: Path, rel: str, version: int = 1, text: str | None = None) -> str:
    uri = file_uri(root, rel)
    body = (root / rel).read_text() if text is None else text
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=version, text=body))
    )
    return uri


def terminal_output(client: LanguageClient, command: str, exit_code: int, output: str, cwd: Path) -> None:
    client.protocol.notify(
        "qwen/terminalOutput", {"command": command, "exitCode": exit_code, "output": output, "cwd": str(cwd)}
    )


def whole_line(line: int) -> types.Range:
    return types.Range(types.Position(line, 0), types.Position(line, 0))


async def code_actions(
    client: LanguageClient, uri: str, diagnostics: list[types.Diagnostic], selection: types.Range | None = None,
    only: list[str] | None = None,
) -> list[types.CodeAction]:
    rng = selection or (diagnostics[0].range if diagnostics else whole_line(0))
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=rng,
            context=types.CodeActionContext(diagnostics=diagnostics, only=only),
        )
    )
    return [a for a in result or [] if isinstance(a, types.CodeAction)]



async def pytest_failure_fix(client: LanguageClient, project: Path) -> types.CodeAction:
    """The calc project's failing pytest run sent as a terminal run, as an editor's terminal does; the
    Qwen quick fix offered on the diagnostic it publishes (not yet resolved)."""
    terminal_output(client, PYTEST, 1, PYTEST_OUTPUT, project)
    test_uri = file_uri(project, "test_calc.py")
    diagnostics = await wait_until(lambda: client.diagnostics.get(test_uri))
    return next(a for a in await code_actions(client, test_uri, list(diagnostics)) if a.kind == types.CodeActionKind.QuickFix)


FIX_REPLIES = [
    Reply(tool_calls=[("read_file", {"path": "calc.py"})]),
    Reply(tool_calls=[("edit_file", {"path": "calc.py", "old_string": "total = a - b", "new_string": "total = a + b"})]),
    Reply(tool_calls=[("finish", {"summary": "add now adds"})]),
]


def plan_reply(**kwargs) -> Reply:
    return Reply(reasoning="add() computes a - b; the test expects 5.", content=json.dumps(PLAN), **kwargs)


def slow_plan_reply(seconds: float) -> Reply:
    words = 100
    return Reply(reasoning="thinking " * words, content=json.dumps(PLAN), chunk_delay=seconds / words)


def foreign_diagnostic(line: int = 1) -> types.Diagnostic:
    return types.Diagnostic(
        range=types.Range(types.Position(line, 4), types.Position(line, 17)),
        message="add() returns the difference", source="pylint", code="W9999",
    )


async def explain_first_lines(client: LanguageClient, uri: str) -> dict:
    """`qwen.server.explain` on lines 1-2 of `uri`, its answer as a plain dict."""
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="qwen.server.explain", arguments=[{"uri": uri, "range": {
            "start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 0}}}]))
    return dict(result._asdict() if hasattr(result, "_asdict") else result)


def as_dict(value: Any) -> dict[str, Any]:
    return value._asdict() if hasattr(value, "_asdict") else dict(value)


async def execute(lsp, command: str, argument: dict[str, Any]) -> dict[str, Any]:
    result = await lsp.workspace_execute_command_async(types.ExecuteCommandParams(command=command, arguments=[argument]))
    return as_dict(result)


def selection(first: int, last: int) -> dict[str, Any]:
    return {"start": {"line": first, "character": 0}, "end": {"line": last, "character": 0}}
