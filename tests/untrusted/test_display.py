"""Model text is shown, never obeyed: escape sequences, carriage returns and bidi
overrides from the model reach no terminal or editor raw, and the diff a user
reviews before [a]pply shows every byte that will be written."""

from __future__ import annotations

import io
import json
import re

import pexpect
import pytest
from lsprotocol import types

from qwen_lsp.lsp import convert
from qwen_lsp.review import cli as review_cli
from qwen_lsp.sanitize import diff_lines, json_safe, visible
from qwen_lsp.types import FileChange, FixResult, Risk, ShellSuggestion, Task, TaskKind, Validation
from tests.lsp.helpers import code_actions, open_doc
from tests.qfix.helpers import BUGGY, PLAN, QFIX
from tests.review.helpers import bug_finding, findings_reply
from tests.vllm_double import Reply

SGR = re.compile(r"\x1b\[[0-9;]*m")  # rich's own colors
# Printed raw, this line erases itself and moves the cursor up: the line above it is what the user sees.
HIDDEN = '    __import__("os").system("touch pwned")  # \x1b[2K\x1b[1A\r    return "Hello, " + name'


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a\x1b[31mb", "a␛[31mb"),
        ("ok\rbad", "ok␍bad"),
        ("x\x00y\x07z\x7f", "x␀y␇z␡"),
        ("csi\x9b31m", "csi\\u009b31m"),
        ("if admin\u202e } \u2066", "if admin\\u202e } \\u2066"),
        ("zero\u200bwidth\u2028line", "zero\\u200bwidth\\u2028line"),
        ("latin-1 caf\udce9", "latin-1 caf\\xe9"),
        ("kept:\ttab\nnewline é 𐐀", "kept:\ttab\nnewline é 𐐀"),
    ],
)
def test_hidden_characters_are_shown_as_visible_stand_ins(raw, shown):
    assert visible(raw) == shown


def test_a_whitespace_only_change_and_a_carriage_return_are_visible_in_the_diff():
    diff = "--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-x = 1\n+x = 1 \t\n@@ -5 +5 @@\n-y = 2\n+y = 2\rz = 3\n"
    shown = ["".join(text for text, _ in parts) for _, parts in diff_lines(diff)]
    assert shown[4] == "+x = 1·→"  # differs from "-x = 1" on screen as it does on disk
    assert shown[7] == "+y = 2␍z = 3"  # one line, as written; not two lines with the second unmarked


def test_json_output_keeps_the_data_and_escapes_what_a_terminal_would_obey():
    data = {"message": "a\x9b2J\u202eb é"}
    text = json_safe(json.dumps(data, ensure_ascii=False))
    assert json.loads(text) == data
    assert "\x9b" not in text and "\u202e" not in text and "é" in text


def test_the_qfix_diff_shows_a_line_that_tries_to_hide_itself(repo, qfix_env, vllm):
    vllm.script(
        Reply(reasoning="typo", content=json.dumps(PLAN)),
        Reply(tool_calls=[("edit_file", {"path": "script.py", "old_string": '    return "Hello, " + nme',
                                         "new_string": HIDDEN})]),
        Reply(tool_calls=[("suggest_command", {"command": "pip install x", "reason": "why\x1b[8m hidden"})]),
        Reply(tool_calls=[("finish", {"summary": "fixed\x1b]0;owned\x07 the typo"})]),
    )
    child = pexpect.spawn(QFIX, ["--", "python", "script.py"], cwd=str(repo), env=qfix_env, encoding="utf-8",
                          timeout=90, dimensions=(40, 200))
    child.logfile_read = seen = io.StringIO()  # everything the terminal received
    child.expect_exact("[a]pply / [s]kip / [e]dit command / [q]uit")
    child.sendline("q")
    child.expect(pexpect.EOF)
    child.close()
    screen = SGR.sub("", seen.getvalue())
    assert '+    __import__("os").system("touch pwned")  # ␛[2K␛[1A␍    return "Hello, " + name' in screen
    assert "fixed␛]0;owned␇ the typo" in screen  # the summary
    assert "why␛[8m hidden" in screen  # the suggestion's reason
    raw = seen.getvalue()  # none of the model's sequences reached the terminal (the spinner has its own)
    assert "# \x1b[2K" not in raw and "\x1b[8m" not in raw and "\x1b]0;owned" not in raw and "\x07" not in raw
    assert (repo / "script.py").read_text() == BUGGY and not (repo / "pwned").exists()


def test_qwen_review_text_output_shows_escapes_in_findings(calc_repo, review_env, capsys):
    finding = bug_finding()
    finding["message"] = "looks fine\x1b[2K\r\u202eevil"
    finding["suggestion"] = "none\x1b[8m"
    review_env.script(findings_reply(finding))
    review_cli.main(["-C", str(calc_repo.root)])
    out = capsys.readouterr().out
    assert "looks fine␛[2K␍\\u202eevil" in out and "none␛[8m" in out
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out


def test_lsp_titles_and_messages_carry_no_hidden_characters():
    suggestion = ShellSuggestion(command="ls\x1b[8m; rm -rf ~", reason="r", risk=Risk.read_only)
    result = FixResult(task=Task(kind=TaskKind.instruction, description="d"), outcome="no_change", summary="s",
                       suggestions=[suggestion], validation=Validation())
    assert convert.fix_title("NameError", result) == "Run `ls␛[8m; rm -rf ~` (read-only)"
    assert "\x1b" not in convert.suggestion_action(suggestion).title
    change = FileChange(path="a.py", original="x = 1\n", updated="x = 1\u202e\n", diff="")
    (_, note), = convert.text_edits(change)
    assert note.description == "-x = 1\n+x = 1\\u202e"

    class Finding:
        path, line, end_line, severity, category = "a.py", 1, None, "warning", "bug\x1b"
        message, suggestion = "msg\x1b[31m", "fix\u2066"

    (diag,) = convert.findings_to_diagnostics([Finding()], "a.py", "x = 1\n")
    assert diag.message == "msg␛[31m\nSuggestion: fix\\u2066" and diag.code == "bug␛"
    assert isinstance(diag, types.Diagnostic)


async def test_a_fix_the_editor_shows_carries_the_models_words_visibly(lsp, vllm, project):
    uri = open_doc(lsp, project, "calc.py")
    diagnostic = types.Diagnostic(range=types.Range(types.Position(1, 4), types.Position(1, 17)), message="wrong op")
    (fix, *_) = await code_actions(lsp, uri, [diagnostic])
    vllm.script(
        Reply(reasoning="r", content=json.dumps(PLAN)),
        *[Reply(tool_calls=[("finish", {"summary": "nothing\x1b[2K to \u202edo"})])] * 2,  # an early finish is sent back once
    )
    resolved = await lsp.code_action_resolve_async(fix)
    assert resolved.edit is None and resolved.disabled.reason.endswith("the model says: “nothing␛[2K to \\u202edo”")
