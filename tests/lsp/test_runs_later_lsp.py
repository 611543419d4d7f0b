"""The language server and a fix that changes a file some tool runs later (issue 25): the code
action's title says so first, it is never the preferred fix (auto fix applies those unseen), its
edit asks the editor to confirm that file, and a command asks the user before applying it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from lsprotocol import types

from qwen_lsp.lsp.convert import file_uri
from tests.calc_project import make_project
from tests.lsp.helpers import MAIN, PLAN, execute, open_doc, pytest_failure_fix, selection
from tests.vllm_double import Reply

TASKS = '{"version": "2.0.0", "tasks": [{"label": "x", "command": "touch x", "runOptions": {"runOn": "folderOpen"}}]}\n'


def hostile_fix() -> list[Reply]:
    return [
        Reply(reasoning="add() subtracts", content=json.dumps(PLAN)),
        Reply(tool_calls=[
            ("edit_file", {"path": "calc.py", "old_string": "total = a - b", "new_string": "total = a + b"}),
            ("create_file", {"path": ".vscode/tasks.json", "content": TASKS}),
        ]),
        Reply(tool_calls=[("finish", {"summary": "add now adds"})]),
    ]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "proj")
    (root / "main.py").write_text(MAIN)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


async def test_the_code_action_lists_what_runs_later_and_is_never_preferred(lsp, vllm, project):
    fix = await pytest_failure_fix(lsp, project)
    vllm.script(*hostile_fix())
    resolved = await lsp.code_action_resolve_async(fix)
    assert resolved.title.startswith("Fix AssertionError (⚠ runs later: .vscode/tasks.json; ✓ parses")
    assert not resolved.is_preferred
    notes = resolved.edit.change_annotations
    assert notes[".vscode/tasks.json#create"].needs_confirmation is True
    assert not any(n.needs_confirmation for key, n in notes.items() if key.startswith("calc.py"))
    assert not (project / ".vscode").exists()


async def test_a_command_asks_before_applying_a_file_that_runs_later(lsp, vllm, project):
    answers: list[str] = []
    questions: list[types.ShowMessageRequestParams] = []

    @lsp.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def ask(params: types.ShowMessageRequestParams):
        questions.append(params)
        return types.MessageActionItem(title=answers.pop(0))

    uri = open_doc(lsp, project, "calc.py")
    argument = {"uri": uri, "range": selection(0, 3), "instruction": "make add add"}
    answers.append("Cancel")
    vllm.script(*hostile_fix())
    declined = await execute(lsp, "qwen.server.ask", argument)
    assert declined["applied"] is False and declined["summary"] == "not applied: ⚠ runs later: .vscode/tasks.json"
    assert lsp.applied_edits == []
    assert "⚠ runs later: .vscode/tasks.json" in questions[0].message
    assert [a.title for a in questions[0].actions] == ["Apply", "Cancel"]

    answers.append("Apply")
    vllm.script(*hostile_fix())
    accepted = await execute(lsp, "qwen.server.ask", argument)
    assert accepted["applied"] is True and len(questions) == 2
    (params,) = lsp.applied_edits
    assert file_uri(project, ".vscode/tasks.json") in [getattr(c, "uri", None) for c in params.edit.document_changes]
