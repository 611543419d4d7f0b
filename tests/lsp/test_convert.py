"""lsp_convert: pure conversions, no server."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from qwen_lsp.lsp import convert as conv
from qwen_lsp.context.frames import parse_output
from qwen_lsp.engine.edits import unified_diff
from qwen_lsp.types import CheckOutcome, FileChange, FixResult, Risk, ShellSuggestion, Task, TaskKind, Validation

CASES = [
    ("a\nb\nc\n", "a\nB\nc\n"),  # one line replaced
    ("a\nb\nc\n", "a\nc\n"),  # deletion
    ("a\nb\nc\n", "x\na\nb\nc\ny\n"),  # insertion at both ends
    ("a\nb", "a\nb\nc"),  # no final newline
    ("a\nb", "a\nB"),
    ("a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n"),  # CRLF kept
    ("x = '😋'\ny = 1", "x = '😋'\ny = 2"),  # astral char on the changed last line: UTF-16 units
    ("f = 1\x0cg = 2\n", "f = 1\x0cg = 3\n"),  # a form feed is not a line break for LSP
    ("", "new\n"),
    ("def add(a, b):\n    total = a - b\n    return total\n\n\ndef sub(a, b):\n    return a - b\n",
     "def add(a, b):\n    total = a + b\n    return total\n\n\ndef sub(a, b):\n    return b - a\n"),
]


def change(original: str, updated: str, path: str = "m.py") -> FileChange:
    return FileChange(path=path, original=original, updated=updated, diff=unified_diff(path, original, updated))


@pytest.mark.parametrize(("original", "updated"), CASES)
def test_per_hunk_edits_turn_the_original_into_the_update(original, updated):
    edits = [edit for edit, _ in conv.text_edits(change(original, updated))]
    assert conv.apply_text_edits(original, edits) == updated


def test_one_annotated_edit_per_hunk_with_the_document_version(tmp_path):
    original, updated = CASES[-1]
    edit = conv.workspace_edit([change(original, updated, "calc.py")], tmp_path, {"calc.py": 7})
    (doc,) = edit.document_changes
    assert doc.text_document.version == 7 and doc.text_document.uri.endswith("/calc.py")
    assert [e.range.start.line for e in doc.edits] == [1, 6]
    assert {e.annotation_id for e in doc.edits} == set(edit.change_annotations)
    assert edit.change_annotations["calc.py#1"].label == "calc.py: line 2"
    assert "-    total = a - b\n+    total = a + b" == edit.change_annotations["calc.py#1"].description


def test_utf16_end_of_an_unterminated_last_line():
    (edit, _), = conv.text_edits(change("x = '😋'", "x = 1\n"))
    assert edit.range.end == types.Position(line=0, character=len("x = '") + 2 + 1)  # the emoji is 2 UTF-16 units


def test_a_created_file_is_a_create_operation_then_its_text(tmp_path):
    fc = FileChange(path="new.py", original="", updated="x = 1\n", diff="", created=True)
    edit = conv.workspace_edit([fc], tmp_path, {})
    create, text = edit.document_changes
    assert isinstance(create, types.CreateFile) and text.edits[0].new_text == "x = 1\n"
    assert text.text_document.version is None


def test_without_document_changes_support_a_plain_changes_map(tmp_path):
    original, updated = CASES[0]
    edit = conv.workspace_edit([change(original, updated)], tmp_path, {}, document_changes=False)
    assert edit.document_changes is None and list(edit.changes) == [conv.file_uri(tmp_path, "m.py")]


def result_with(checks, changes=(), suggestions=()) -> FixResult:
    return FixResult(
        task=Task(kind=TaskKind.diagnostic, description="x"), outcome="fixed", changes=list(changes),
        suggestions=list(suggestions), validation=Validation(checks=checks),
    )


def test_the_title_says_what_was_validated():
    checks = [CheckOutcome(name="parses: a.py", ok=True), CheckOutcome(name="parses: b.py", ok=True),
              CheckOutcome(name="pytest -x tests/test_a.py", ok=True)]
    title = conv.fix_title("NameError: name 'x' is not defined", result_with(checks, [change("a\n", "b\n")]))
    assert title == "Fix NameError (✓ parses, ✓ pytest -x tests/test_a.py)"
    assert conv.fix_title("E501 line too long", result_with([], [change("a\n", "b\n")])) == "Fix E501 line too long (not validated)"
    only_shell = result_with([], suggestions=[ShellSuggestion(command="pip install requests", reason="r", risk=Risk.network)])
    assert conv.fix_title("ModuleNotFoundError: requests", only_shell) == "Run `pip install requests` (network)"


def test_frames_become_diagnostics_with_the_stack_as_related_information(tmp_path):
    (tmp_path / "main.py").write_text("def main():\n    x = 1\n    print(undefined_name)\n\nmain()\n")
    output = f'''Traceback (most recent call last):
  File "{tmp_path}/main.py", line 5, in <module>
    main()
  File "{tmp_path}/main.py", line 3, in main
    print(undefined_name)
          ^^^^^^^^^^^^^^
NameError: name 'undefined_name' is not defined
'''
    frames = parse_output(output, cwd=tmp_path, workspace=tmp_path)
    by_uri = conv.frames_to_diagnostics(frames, tmp_path, lambda p: p.read_text(), data={"run": "k"})
    (diag,) = by_uri[conv.file_uri(tmp_path, "main.py")]
    assert diag.range == types.Range(types.Position(2, 10), types.Position(2, 25))
    assert diag.message == "NameError: name 'undefined_name' is not defined"
    assert diag.source == "qwen" and diag.severity == types.DiagnosticSeverity.Error and diag.data == {"run": "k"}
    (related,) = diag.related_information
    assert related.location.range.start.line == 4 and related.message == "called in <module>"


def test_edits_drop_diagnostics_on_touched_lines_and_shift_the_rest():
    def diag(line):
        return types.Diagnostic(range=types.Range(types.Position(line, 0), types.Position(line, 5)), message=str(line))

    diags = [diag(1), diag(5), diag(9)]
    insert_two_lines = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(5, 2), types.Position(5, 2)), text="a\nb\n"
    )
    kept = conv.adjust_for_change(diags, insert_two_lines)
    assert [(d.message, d.range.start.line) for d in kept] == [("1", 1), ("9", 11)]
    assert conv.adjust_for_change(diags, types.TextDocumentContentChangeWholeDocument(text="")) == []


def test_kind_filter_and_selection_lines():
    assert conv.kind_allowed("refactor.rewrite", ["refactor"]) and not conv.kind_allowed("quickfix", ["source"])
    sel = types.Range(types.Position(2, 0), types.Position(5, 0))
    assert conv.lines_of_range(sel) == (3, 5)


def test_shell_suggestions_are_client_commands_with_the_risk():
    s = ShellSuggestion(command="rm -rf build", reason="stale", risk=Risk.destructive, dangers=["deletes"])
    action = conv.suggestion_action(s)
    assert action.command.command == "qwen.runInTerminal"
    assert action.command.arguments == [{"command": "rm -rf build", "reason": "stale", "risk": "destructive", "dangers": ["deletes"]}]
    assert "destructive" in action.title


def test_diagnostics_per_run_are_capped_with_the_primary_first(tmp_path):
    (tmp_path / "gen.py").write_text("\n".join(f"x{i} = {i}" for i in range(600)) + "\n")
    (tmp_path / "app.py").write_text("def f():\n    return y\n")
    lint = "\n".join(f"gen.py:{i}:1: W291 trailing whitespace" for i in range(1, 501))
    crash = 'Traceback (most recent call last):\n  File "app.py", line 2, in f\nNameError: y\n'
    frames = parse_output(lint + "\n" + crash, cwd=tmp_path, workspace=tmp_path)
    by_uri = conv.frames_to_diagnostics(frames, tmp_path, lambda p: p.read_text(), max_diagnostics=50)
    assert sum(len(d) for d in by_uri.values()) == 50
    (app,) = [d for uri, d in by_uri.items() if uri.endswith("/app.py")]
    assert app[0].message == "NameError: y"


def test_a_fix_that_changes_what_runs_later_says_so_first_and_its_edit_asks_for_confirmation():
    result = result_with([CheckOutcome(name="parses: m.py", ok=True)],
                         [change("a\n", "b\n"), change("x\n", "y\n", "Makefile"), change("k=1\n", "k=2\n", ".env")])
    result.runs_later, result.not_tracked = ["Makefile (make runs its recipes)"], [".env"]
    assert conv.fix_title("NameError: x", result) == (
        "Fix NameError (⚠ runs later: Makefile; ⚠ not tracked by git: .env; ✓ parses)")
    edit = conv.workspace_edit(result.changes, Path("/w"), {}, confirm=["Makefile", ".env"])
    asks = {key.split("#")[0]: note.needs_confirmation for key, note in edit.change_annotations.items()}
    assert asks == {"m.py": None, "Makefile": True, ".env": True}
