"""Server commands (ask, explain, fix, review), shell suggestions, configuration, review on save."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from qwen_lsp.lsp.convert import apply_text_edits
from tests.lsp.helpers import (
    execute,
    selection,
    BUGGY,
    FIX_REPLIES,
    PYTEST,
    PYTEST_OUTPUT,
    code_actions,
    foreign_diagnostic,
    open_doc,
    plan_reply,
    terminal_output,
    wait_until,
)
from tests.net import closed_port_url
from tests.vllm_double import Reply


async def test_ask_applies_a_versioned_edit_through_the_client(lsp, vllm, project):
    uri = open_doc(lsp, project, "calc.py", version=4)
    vllm.script(plan_reply(), *FIX_REPLIES)
    answer = await execute(lsp, "qwen.server.ask", {"uri": uri, "range": selection(0, 3), "instruction": "make add add"})

    assert answer == {"applied": True, "summary": "the model says: “add now adds”", "title": lsp.applied_edits[0].label}
    (params,) = lsp.applied_edits
    (doc_edit,) = params.edit.document_changes
    assert doc_edit.text_document.version == 4
    assert apply_text_edits(BUGGY, doc_edit.edits) == BUGGY.replace("total = a - b", "total = a + b")
    task = vllm.chat_requests()[0]["messages"][-2]["content"]
    assert "make add add" in task and "calc.py" in task


async def test_explain_answers_markdown_and_shows_it(lsp, vllm, project):
    uri = open_doc(lsp, project, "calc.py")
    vllm.script(Reply(content="`add` returns **a - b**, not the sum."))
    answer = await execute(lsp, "qwen.server.explain", {"uri": uri, "range": selection(0, 3)})
    assert answer == {"markdown": "`add` returns **a - b**, not the sum."}
    assert lsp.messages[-1].message == answer["markdown"]
    assert vllm.chat_requests()[0]["chat_template_kwargs"]["enable_thinking"] is False


async def test_fix_command_fixes_our_diagnostic_in_range(lsp, vllm, project):
    open_doc(lsp, project, "calc.py")
    test_uri = open_doc(lsp, project, "test_calc.py")
    terminal_output(lsp, PYTEST, 1, PYTEST_OUTPUT, project)
    await wait_until(lambda: lsp.diagnostics.get(test_uri))
    vllm.script(plan_reply(), *FIX_REPLIES)

    answer = await execute(lsp, "qwen.server.fix", {"uri": test_uri, "range": selection(4, 4)})
    assert answer["applied"] is True
    (params,) = lsp.applied_edits
    assert params.label == f"Fix AssertionError (✓ parses, ✓ {PYTEST})"


async def test_review_command_publishes_review_diagnostics(lsp, vllm, project):
    uri = open_doc(lsp, project, "calc.py")
    finding = {"path": "calc.py", "line": 2, "end_line": 3, "severity": "error", "category": "bug",
               "message": "add() subtracts.", "suggestion": "use a + b"}
    vllm.script(Reply(content=json.dumps({"findings": [finding]})))

    assert await execute(lsp, "qwen.server.review", {"uri": uri}) == {"findings": 1, "reviewed": True}
    (diag,) = lsp.diagnostics[uri]
    assert diag.source == "qwen-review" and diag.severity == types.DiagnosticSeverity.Warning and diag.code == "bug"
    assert diag.range == types.Range(types.Position(1, 4), types.Position(2, 16))
    assert diag.message == "add() subtracts.\nSuggestion: use a + b"
    diff = vllm.chat_requests()[0]["messages"][-1]["content"]
    assert "## calc.py (added)" in diff and "7 +     return a - b" in diff  # the whole file, as new


class TestConfigurationAndSuggestions:
    @pytest.fixture
    def server_options(self, cache_dir: Path) -> dict[str, Any]:
        return {"baseUrl": closed_port_url(), "cacheDir": str(cache_dir), "maxRetries": 0}

    @pytest.fixture
    def client_config(self, vllm) -> dict[str, Any]:
        return {"qwen": {"baseUrl": vllm.base_url}}  # workspace/configuration wins over initializationOptions

    async def test_shell_suggestions_become_run_in_terminal_actions(self, lsp, vllm, project):
        uri = open_doc(lsp, project, "calc.py")
        vllm.script(
            plan_reply(),
            Reply(tool_calls=[("suggest_command", {"command": "pip install requests", "reason": "missing module"})]),
            Reply(tool_calls=[("finish", {"summary": "install it"})]),
        )
        (fix, *_) = await code_actions(lsp, uri, [foreign_diagnostic()])
        resolved = await lsp.code_action_resolve_async(fix)

        assert resolved.title == "Run `pip install requests` (network)" and resolved.edit is None
        assert resolved.command.command == "qwen.runInTerminal"
        assert list(resolved.command.arguments) == [
            {"command": "pip install requests", "reason": "missing module", "risk": "network", "dangers": []}
        ]
        again = await code_actions(lsp, uri, [foreign_diagnostic()])
        run = next(a for a in again if a.command and a.command.command == "qwen.runInTerminal")
        assert run.title == "Run in terminal: pip install requests (network)" and run.kind == "quickfix"


class TestReviewOnSave:
    @pytest.fixture
    def server_options(self, vllm, cache_dir: Path) -> dict[str, Any]:
        return {"baseUrl": vllm.base_url, "cacheDir": str(cache_dir), "maxRetries": 0,
                "reviewOnSave": True, "reviewDebounceSeconds": 0.3}

    @pytest.fixture
    def project(self, project: Path) -> Path:
        git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
        subprocess.run([*git, "init", "-q"], cwd=project, check=True)
        subprocess.run([*git, "add", "."], cwd=project, check=True)
        subprocess.run([*git, "commit", "-qm", "init"], cwd=project, check=True)
        return project

    async def test_saves_are_debounced_into_one_review_of_the_changed_hunk(self, lsp, vllm, project):
        uri = open_doc(lsp, project, "calc.py")
        change = types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(6, 11), types.Position(6, 16)), text="a * 2"
        )
        lsp.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=2), [change]))
        finding = {"path": "calc.py", "line": 7, "severity": "warning", "category": "bug", "message": "sub() no longer subtracts."}
        vllm.script(Reply(content=json.dumps({"findings": [finding]})))
        for _ in range(3):
            lsp.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri=uri)))

        (diag,) = await wait_until(lambda: lsp.diagnostics.get(uri), what="review diagnostics")
        assert diag.source == "qwen-review" and diag.range.start.line == 6
        (request,) = vllm.chat_requests()  # one review for three saves
        assert request["chat_template_kwargs"]["enable_thinking"] is False
        diff = request["messages"][-1]["content"]
        assert "7 +     return a * 2" in diff and "-     return a - b" in diff  # the hunk against HEAD
        assert "## calc.py (modified)" in diff and "1 + def add" not in diff
