"""AI comments over the protocol: a marked comment gets a hint diagnostic and a "Do it with Qwen"
action; resolving it runs the instruction task on the enclosing code and the edit takes the
comment out. Python, JavaScript, Go and Rust comment syntaxes; strings and docstrings are not
instructions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsprotocol import types

from qwen_lsp.lsp.convert import apply_text_edits
from tests.lsp.helpers import code_actions, execute, open_doc, wait_until, whole_line
from tests.vllm_double import Reply

PLAN = {"hypotheses": [], "evidence": [], "steps": ["do what the comment asks"], "verify_command": None}

CASES = {
    "python": (
        "util.py",
        'NOTE = "# qwen: not an instruction"\n\n\ndef first(xs):\n    """qwen: nor is a docstring"""\n'
        "    # qwen: handle the empty list\n    return xs[0]\n",
        5, "return xs[0]", "return xs[0] if xs else None",
        'NOTE = "# qwen: not an instruction"\n\n\ndef first(xs):\n    """qwen: nor is a docstring"""\n'
        "    return xs[0] if xs else None\n",
    ),
    "javascript": (
        "util.js",
        "const note = '// qwen: not an instruction';\n\n// qwen! handle the empty list\nfunction first(xs) {\n"
        "  return xs[0];\n}\n",
        2, "return xs[0];", "return xs.length ? xs[0] : null;",
        "const note = '// qwen: not an instruction';\n\nfunction first(xs) {\n  return xs.length ? xs[0] : null;\n}\n",
    ),
    "go": (
        "util.go",
        'package util\n\nconst note = "// qwen: not an instruction"\n\nfunc First(xs []int) int {\n'
        "\t// qwen: handle the empty slice\n\treturn xs[0]\n}\n",
        5, "\treturn xs[0]", "\tif len(xs) == 0 {\n\t\treturn 0\n\t}\n\treturn xs[0]",
        'package util\n\nconst note = "// qwen: not an instruction"\n\nfunc First(xs []int) int {\n'
        "\tif len(xs) == 0 {\n\t\treturn 0\n\t}\n\treturn xs[0]\n}\n",
    ),
    "rust": (
        "util.rs",
        '/// qwen: a doc comment is documentation\nfn first(xs: &[i32]) -> Option<i32> {\n'
        "    /* qwen: handle the empty slice */\n    Some(xs[0])\n}\nconst NOTE: &str = \"// qwen: no\";\n",
        2, "Some(xs[0])", "xs.first().copied()",
        '/// qwen: a doc comment is documentation\nfn first(xs: &[i32]) -> Option<i32> {\n'
        "    xs.first().copied()\n}\nconst NOTE: &str = \"// qwen: no\";\n",
    ),
}


def _edit_replies(rel: str, old: str, new: str) -> list[Reply]:
    return [
        Reply(reasoning="The comment asks for it.", content=json.dumps(PLAN)),
        Reply(tool_calls=[("edit_file", {"path": rel, "old_string": old, "new_string": new})]),
        Reply(tool_calls=[("finish", {"summary": "done as the comment asked"})]),
    ]


def _ours(lsp, uri: str) -> list[types.Diagnostic]:
    return [d for d in lsp.diagnostics.get(uri, []) if d.code == "qwen-comment"]


@pytest.mark.parametrize("language", list(CASES))
async def test_marked_comment_hint_action_and_edit(lsp, vllm, project: Path, language: str):
    rel, text, line, old, new, expected = CASES[language]
    (project / rel).write_text(text)
    uri = open_doc(lsp, project, rel, version=3)

    (hint,) = await wait_until(lambda: _ours(lsp, uri), what="the comment's hint")  # strings, docstrings: none
    assert hint.severity == types.DiagnosticSeverity.Hint and hint.range.start.line == line
    assert hint.message.startswith("Qwen instruction: handle the empty")

    assert not [a for a in await code_actions(lsp, uri, [], whole_line(0)) if a.title.startswith("Do it")]
    (action,) = [a for a in await code_actions(lsp, uri, [hint]) if a.title.startswith("Do it with Qwen")]
    assert action.edit is None and action.kind == types.CodeActionKind.QuickFix
    assert not vllm.chat_requests()  # listing the action runs nothing

    vllm.script(*_edit_replies(rel, old, new))
    resolved = await lsp.code_action_resolve_async(action)
    (doc_edit,) = resolved.edit.document_changes
    assert doc_edit.text_document.version == 3
    assert apply_text_edits(text, doc_edit.edits) == expected  # the function edited, the comment gone
    request = vllm.chat_requests()[0]["messages"][-2]["content"]
    assert "handle the empty" in request and rel in request


async def test_several_comments_at_once_and_the_others_as_context(lsp, vllm, project: Path):
    text = ("def first(xs):\n    # qwen: handle the empty list\n    return xs[0]\n\n\n"
            "def last(xs):\n    # qwen! handle the empty list too\n    return xs[-1]\n")
    (project / "two.py").write_text(text)
    uri = open_doc(lsp, project, "two.py")
    hints = await wait_until(lambda: len(_ours(lsp, uri)) == 2 and _ours(lsp, uri))

    actions = await code_actions(lsp, uri, [hints[0]])
    one = next(a for a in actions if a.title.startswith("Do it with Qwen"))
    vllm.script(*_edit_replies("two.py", "return xs[0]", "return xs[0] if xs else None"))
    resolved = await lsp.code_action_resolve_async(one)
    task = vllm.chat_requests()[0]["messages"][-2]["content"]
    assert "line 2 (the code at lines 1-3): handle the empty list" in task
    assert "for context only" in task and "line 7: handle the empty list too" in task
    after = apply_text_edits(text, resolved.edit.document_changes[0].edits)
    assert "# qwen: handle the empty list\n" not in after and "# qwen! handle the empty list too" in after

    both = next(a for a in actions if a.title == "Do all 2 Qwen comments in this file")
    vllm.script(
        Reply(reasoning="both", content=json.dumps(PLAN)),
        Reply(tool_calls=[("edit_file", {"path": "two.py", "old_string": "return xs[0]", "new_string": "return xs[0] if xs else None"}),
                          ("edit_file", {"path": "two.py", "old_string": "return xs[-1]", "new_string": "return xs[-1] if xs else None"})]),
        Reply(tool_calls=[("finish", {"summary": "both"})]),
    )
    resolved = await lsp.code_action_resolve_async(both)
    after = apply_text_edits(text, resolved.edit.document_changes[0].edits)
    assert "qwen" not in after and after.count("if xs else None") == 2


async def test_no_change_leaves_the_comment_and_says_why(lsp, vllm, project: Path):
    text = "def first(xs):\n    # qwen: handle the empty list\n    return xs[0]\n"
    (project / "same.py").write_text(text)
    uri = open_doc(lsp, project, "same.py")
    (hint,) = await wait_until(lambda: _ours(lsp, uri))
    (action,) = [a for a in await code_actions(lsp, uri, [hint]) if a.title.startswith("Do it")]
    vllm.script(Reply(reasoning="x", content=json.dumps(PLAN)), Reply(tool_calls=[("finish", {"summary": "nothing to do"})]))
    resolved = await lsp.code_action_resolve_async(action)
    assert resolved.edit is None and resolved.disabled is not None


async def test_editing_the_comment_away_clears_the_hint(lsp, vllm, project: Path):
    text = "def first(xs):\n    # qwen: handle the empty list\n    return xs[0]\n"
    (project / "gone.py").write_text(text)
    uri = open_doc(lsp, project, "gone.py")
    await wait_until(lambda: _ours(lsp, uri))
    lsp.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text.replace("qwen: ", "note: "))],
    ))
    await wait_until(lambda: uri in lsp.diagnostics and not _ours(lsp, uri), what="the hint cleared")


async def test_command_for_clients_without_resolve(lsp, vllm, project: Path):
    text = "def first(xs):\n    # qwen: handle the empty list\n    return xs[0]\n"
    (project / "cmd.py").write_text(text)
    uri = open_doc(lsp, project, "cmd.py", version=2)
    await wait_until(lambda: _ours(lsp, uri))
    vllm.script(*_edit_replies("cmd.py", "return xs[0]", "return xs[0] if xs else None"))
    answer = await execute(lsp, "qwen.server.doComments", {"uri": uri})
    assert answer["applied"] is True
    (params,) = lsp.applied_edits
    assert apply_text_edits(text, params.edit.document_changes[0].edits) == "def first(xs):\n    return xs[0] if xs else None\n"



async def test_closing_the_buffer_clears_its_hints(lsp, vllm, project: Path):
    (project / "closed.py").write_text("def first(xs):\n    # qwen: handle the empty list\n    return xs[0]\n")
    uri = open_doc(lsp, project, "closed.py")
    await wait_until(lambda: _ours(lsp, uri))
    lsp.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    await wait_until(lambda: not _ours(lsp, uri), what="the hints cleared")
