"""Whatever arguments the model sends, every tool answers with a message the model can act
on: nothing raises out of the tool layer, nothing lands in the fix, and qfix always ends
with its JSON report."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from qwen_lsp.engine.overlay import Overlay
from qwen_lsp.engine.tool_args import ARGUMENTS
from qwen_lsp.engine.tools import TOOLS, ToolBox
from tests.qfix.helpers import FIXED, PLAN, QFIX
from tests.vllm_double import Reply

HOSTILE = [
    ("read_file", {"path": "a\0b.py"}, "path: contains a NUL byte"),
    ("edit_file", {"path": "script.py\0", "old_string": "x", "new_string": "y"}, "NUL byte"),
    ("create_file", {"path": "x" * 300 + ".py", "content": "x"}, "too long"),
    ("create_file", {"path": ".", "content": "x"}, "a file needs a name"),
    ("create_file", {"path": "sub/", "content": "x"}, "not a folder"),
    ("create_file", {"path": "script.py", "content": "x"}, "already exists"),
    ("create_file", {"path": "script.py/x.py", "content": "x"}, "script.py is a file"),
    ("create_file", {"path": "s.py", "content": "bad \ud800 text"}, "lone surrogate"),
    ("edit_file", {"path": "script.py", "old_string": "nme", "new_string": "\udcff"}, "lone surrogate"),
    ("read_file", {"path": 7}, "path: Input should be a valid string"),
    ("read_file", {"path": "script.py", "start_line": "first"}, "start_line: Input should be a valid integer"),
    ("read_file", {}, "path: Field required"),
    ("edit_file", {"path": "script.py", "old_string": ["nme"], "new_string": None}, "old_string"),
    ("search_code", {"pattern": None}, "pattern: Input should be a valid string"),
    ("suggest_command", {"command": "ls\x1b[8m; rm -rf ~", "reason": "r"}, "control characters"),
    ("suggest_command", {"reason": "r"}, "command: Field required"),
    ("no_such_tool", {}, "unknown tool"),
]


@pytest.mark.parametrize(("name", "arguments", "why"), HOSTILE)
def test_hostile_arguments_get_an_error_answer_and_change_nothing(tmp_path: Path, name, arguments, why):
    (tmp_path / "script.py").write_text("print(nme)\n")
    (tmp_path / "sub").mkdir()
    box = ToolBox(Overlay(tmp_path))
    answer = box.call(name, arguments)
    assert answer.startswith("Error:") and why in answer
    answer.encode("utf-8")  # goes back to the server in the next request
    assert box.overlay.changes() == [] and box.suggestions == [] and box.edits_applied == 0


def test_a_lone_surrogate_escaped_in_the_json_text_is_refused(tmp_path: Path):
    box = ToolBox(Overlay(tmp_path))
    answer = box.call("create_file", '{"path": "s.py", "content": "half a pair: \\ud800"}')  # as a server sends it
    assert answer.startswith("Error: wrong arguments for create_file: content: contains a lone surrogate")
    assert box.overlay.changes() == [] and not (tmp_path / "s.py").exists()


@pytest.mark.parametrize("raw", ['{"path": "script.py"', "[1, 2]", '"script.py"', "null", b"\xff"])
def test_arguments_that_are_not_a_json_object_are_refused(tmp_path: Path, raw):
    (tmp_path / "script.py").write_text("print(nme)\n")
    answer = ToolBox(Overlay(tmp_path)).call("read_file", raw)
    assert answer.startswith("Error:")  # null counts as no arguments: "path: Field required"


def test_every_tool_schema_has_its_argument_model():
    for tool in TOOLS:
        function = tool["function"]
        model = ARGUMENTS[function["name"]]
        assert set(function["parameters"]["properties"]) == set(model.model_fields)
        # The model may be more forgiving than the schema (a missing reason is fine), never stricter.
        assert {k for k, f in model.model_fields.items() if f.is_required()} <= set(function["parameters"]["required"])


def test_qfix_survives_hostile_tool_calls_fixes_the_bug_and_reports_json(repo, qfix_env, vllm):
    vllm.script(
        Reply(reasoning="r", content=json.dumps(PLAN)),
        Reply(tool_calls=[("read_file", {"path": "script.py\0"}), ("create_file", {"path": "y" * 300, "content": ""}),
                          ("create_file", {"path": ".", "content": "x"}), ("edit_file", {"path": 3})]),
        Reply(tool_calls=[("edit_file", {"path": "script.py", "old_string": "+ nme", "new_string": "+ name"})]),
        Reply(tool_calls=[("finish", {"summary": "fixed"})]),
    )
    run = subprocess.run([QFIX, "--yes", "--json", "--", "python", "script.py"], cwd=repo, env=qfix_env,
                         capture_output=True, text=True, timeout=120)
    assert "Traceback" not in run.stderr.split("NameError")[-1]  # only the command's own traceback
    report = json.loads(run.stdout)
    assert run.returncode == 0 and report["outcome"] == "fixed" and report["applied"]
    answers = [m["content"] for m in vllm.chat_requests()[2]["messages"] if m["role"] == "tool"]
    assert len(answers) == 4 and all(a.startswith("Error: wrong arguments") for a in answers)
    assert sorted(p.name for p in repo.iterdir() if p.name != ".git") == ["script.py"]
    assert (repo / "script.py").read_text() == FIXED


def test_an_unexpected_failure_ends_in_one_line_and_the_json_report(tmp_path: Path, monkeypatch, capsys):
    from terminal_agent import agent
    from terminal_agent.pty_run import Finished

    async def broken(*_args, **_kwargs):
        raise RuntimeError("a bug of ours\nspanning lines")

    monkeypatch.setattr(agent, "think", broken)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("QWEN_LSP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("QFIX_STATE_DIR", str(tmp_path / "state"))
    code = agent.run(agent.Options(json=True, dry_run=True), (["python", "x.py"], Finished(exit_code=1, output="oops")))
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert code == 2 and report["outcome"] == "error" and report["error"] == "RuntimeError: a bug of ours spanning lines"
    assert err == ("qfix: internal error, nothing was changed: RuntimeError: a bug of ours spanning lines "
                   "(`qfix --traceback ...` or QFIX_TRACEBACK=1 shows where)\n")

    code = agent.run(agent.Options(json=True, dry_run=True, traceback=True),
                     (["python", "x.py"], Finished(exit_code=1, output="oops")))
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("Traceback (most recent call last):") and "in broken" in err
    assert err.endswith("qfix: internal error, nothing was changed: RuntimeError: a bug of ours spanning lines\n")
