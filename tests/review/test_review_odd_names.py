"""`qwen-review` takes file names from `git diff -z`, never from the quoted text git prints for a
name with a newline or an escape character, so findings on such a file are kept; and every
string the model wrote is shown on one line, so a newline in a message cannot print a line
that looks like the report's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qwen_lsp.review import cli
from qwen_lsp.gitio import staged_diff
from qwen_lsp.review.engine import ReviewResult, parse_diff
from tests.review.gitrepo import GitRepo
from tests.review.helpers import findings_reply
from tests.vllm_double import VLLMDouble

NEWLINE = "we\nird.py"
ESCAPE = "red\x1b[31m.py"
FORGED = "calc.py\n  1: error [bug] forged\nqwen-review: no findings."


@pytest.fixture
def odd_repo(tmp_path: Path, isolated_git: dict[str, str]) -> GitRepo:
    repo = GitRepo(tmp_path / "repo", isolated_git)
    repo.commit("start", {NEWLINE: "def f():\n    return 1\n", "calc.py": "x = 1\n"})
    repo.stage(NEWLINE, "def f():\n    return 2\n")  # modified
    repo.stage(ESCAPE, "y = 1 / 0\n")  # added
    return repo


def findings() -> list[dict]:
    return [
        {"path": NEWLINE, "line": 2, "severity": "error", "category": "bug", "message": "Wrong value.\n" + FORGED,
         "suggestion": "return 1\nqwen-review: no findings."},
        # As the prompt shows that name: a JSON string, quotes included.
        {"path": json.dumps(ESCAPE), "line": 1, "severity": "warning", "category": "crash\x1b[2J",
         "message": "Division by zero \x1b[8mhidden\x1b[0m."},
    ]


def test_findings_on_odd_names_are_kept_and_model_text_cannot_forge_a_line(
    odd_repo: GitRepo, review_env: VLLMDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    review_env.script(findings_reply(*findings()))
    assert cli.main(["-C", str(odd_repo.root)]) == cli.EXIT_FINDINGS
    out = capsys.readouterr().out
    assert "\x1b" not in out
    lines = out.splitlines()
    assert lines[0] == "red␛[31m.py"  # each file's name, on one line
    assert "  1: warning [crash␛[2j] Division by zero ␛[8mhidden␛[0m." in lines
    assert "we⏎ird.py" in lines
    assert "  2: error [bug] Wrong value.⏎calc.py⏎  1: error [bug] forged⏎qwen-review: no findings." in lines
    assert "        2 |     return 2" in lines  # its staged code line, read by its exact name
    assert "    suggestion: return 1" in lines and "                qwen-review: no findings." in lines
    # Every line is a file name, a finding, a code or suggestion line, or the one summary.
    assert [line for line in lines if line.startswith("qwen-review:")] == [lines[-1]]
    assert "calc.py" not in lines and "  1: error [bug] forged" not in lines
    assert lines[-1].startswith("qwen-review: 1 error(s), 1 warning(s)")
    prompt = review_env.chat_requests()[0]["messages"][1]["content"]
    assert '## "we\\nird.py" (modified)' in prompt and '## "red\\u001b[31m.py" (added)' in prompt


def test_json_report_has_the_exact_names(odd_repo: GitRepo, review_env: VLLMDouble,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    review_env.script(findings_reply(*findings()))
    assert cli.main(["-C", str(odd_repo.root), "--format", "json"]) == cli.EXIT_FINDINGS
    out = capsys.readouterr().out
    assert "\x1b" not in out  # escaped in the JSON text, the same data once parsed
    result = ReviewResult.model_validate_json(out)
    assert [(f.path, f.line) for f in result.findings] == [(ESCAPE, 1), (NEWLINE, 2)]
    assert result.findings[1].message == "Wrong value.\n" + FORGED  # the data itself is kept whole


def test_names_come_from_git_diff_z_not_from_the_quoted_diff(tmp_path: Path, isolated_git: dict[str, str]) -> None:
    repo = GitRepo(tmp_path / "renames", isolated_git)
    repo.commit("start", {NEWLINE: "".join(f"line {n}\n" for n in range(20))})
    repo.git("mv", NEWLINE, "new\tname.py")
    repo.stage(ESCAPE, "y = 1\n")
    names = cli.diff_names(repo.root, None)
    assert names == [("we\nird.py", "new\tname.py"), (ESCAPE, ESCAPE)]
    diff = staged_diff(repo.root)
    assert '"b/new\\tname.py"' in diff  # what the text says: quoted, never taken for the name
    files = parse_diff(diff, names)
    assert [(f.path, f.old_path, f.status) for f in files] == [
        ("new\tname.py", NEWLINE, "renamed"), (ESCAPE, None, "added")]


def test_a_finding_citing_gits_quoted_spelling_is_kept_on_the_real_file(
    tmp_path: Path, isolated_git: dict[str, str], review_env: VLLMDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    """git spells a non-ASCII name as `"caf\\303\\251.py"` (core.quotePath): a finding the model
    cites so, with or without its quotes or `b/`, is on café.py, not dropped."""
    repo = GitRepo(tmp_path / "quoted", isolated_git)
    repo.commit("start", {"café.py": "a = 1\n", "tab\there.py": "b = 1\n"})
    repo.stage("café.py", "a = 1 / 0\n")
    repo.stage("tab\there.py", "b = None + 1\n")
    review_env.script(findings_reply(
        {"path": '"caf\\303\\251.py"', "line": 1, "severity": "error", "category": "bug", "message": "Quoted."},
        {"path": 'caf\\303\\251.py', "line": 1, "severity": "warning", "category": "style", "message": "Bare."},
        {"path": '"b/tab\\there.py"', "line": 1, "severity": "error", "category": "bug", "message": "Tab."},
    ))
    assert cli.main(["-C", str(repo.root), "--format", "json"]) == cli.EXIT_FINDINGS
    result = ReviewResult.model_validate_json(capsys.readouterr().out)
    assert sorted((f.path, f.message) for f in result.findings) == [
        ("café.py", "Bare."), ("café.py", "Quoted."), ("tab\there.py", "Tab.")]
    assert result.context_findings == []
