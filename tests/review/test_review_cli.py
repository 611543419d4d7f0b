"""`qwen-review` in throwaway repositories, run in-process against the vLLM double."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from qwen_lsp.review.engine import ReviewResult
from qwen_lsp.review import cli
from tests.net import closed_port_url
from tests.review.helpers import BUG_LINE, bug_finding, findings_reply, validate_sarif
from tests.review.gitrepo import GitRepo
from tests.vllm_double import VLLMDouble

def run(repo: GitRepo, *args: str) -> int:
    return cli.main(["-C", str(repo.root), *args])


def test_text_report_blocks_on_error(calc_repo: GitRepo, review_env: VLLMDouble, capsys: pytest.CaptureFixture[str]) -> None:
    review_env.script(findings_reply(bug_finding()))
    assert run(calc_repo) == cli.EXIT_FINDINGS
    out = capsys.readouterr().out
    assert out.startswith("calc.py\n")
    assert f"  {BUG_LINE}: error [bug] The loop skips the first value" in out
    assert f"    {BUG_LINE:>5} |     for v in values[1:]:" in out  # the staged code line
    assert "suggestion: Iterate over `values`" in out
    assert "Commit blocked: 1 finding(s) at or above 'error'" in out


@pytest.mark.parametrize(
    ("severity", "fail_on", "code"),
    [("warning", "error", 0), ("warning", "warning", 1), ("error", "never", 0), ("info", "warning", 0)],
)
def test_fail_on_policy(calc_repo: GitRepo, review_env: VLLMDouble, severity: str, fail_on: str, code: int) -> None:
    review_env.script(findings_reply(bug_finding(severity=severity)))
    assert run(calc_repo, "--fail-on", fail_on, "--no-cache") == code


def test_code_line_comes_from_the_index(calc_repo: GitRepo, review_env: VLLMDouble, capsys: pytest.CaptureFixture[str]) -> None:
    calc_repo.write("calc.py", "print('unstaged work in progress')\n")
    review_env.script(findings_reply(bug_finding()))
    run(calc_repo)
    out = capsys.readouterr().out
    assert "for v in values[1:]:" in out and "unstaged" not in out
    prompt = review_env.chat_requests()[0]["messages"][1]["content"]
    assert "unstaged" not in prompt


def test_json_format(calc_repo: GitRepo, review_env: VLLMDouble, capsys: pytest.CaptureFixture[str]) -> None:
    review_env.script(findings_reply(bug_finding()))
    assert run(calc_repo, "--format", "json") == cli.EXIT_FINDINGS
    captured = capsys.readouterr()
    result = ReviewResult.model_validate_json(captured.out)
    assert result.reviewed and [(f.path, f.line) for f in result.findings] == [("calc.py", BUG_LINE)]
    assert "1 error(s)" in captured.err  # the human summary goes to stderr


def test_rdjsonl_uses_byte_columns(tmp_path: Path, isolated_git: dict[str, str], review_env: VLLMDouble,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.commit("start", {"greet.py": "def greet():\n    pass\n"})
    repo.stage("greet.py", 'def greet():\n    return "héllo 𐐀"  # ok\n')
    finding = {"path": "greet.py", "line": 2, "severity": "warning", "category": "i18n", "message": "Hard-coded text."}
    review_env.script(findings_reply(finding))
    assert run(repo, "--format", "rdjsonl") == 0
    (line,) = capsys.readouterr().out.splitlines()
    diagnostic = json.loads(line)
    code = '    return "héllo 𐐀"  # ok'
    assert diagnostic["location"] == {
        "path": "greet.py",
        "range": {"start": {"line": 2, "column": 5}, "end": {"line": 2, "column": len(code.encode()) + 1}},
    }
    assert len(code.encode()) == len(code) + 4  # é is 2 bytes, 𐐀 is 4: columns count bytes
    assert diagnostic["severity"] == "WARNING" and diagnostic["code"] == {"value": "i18n"}
    assert diagnostic["source"] == {"name": "qwen-review"}


def test_sarif_validates(calc_repo: GitRepo, review_env: VLLMDouble, tmp_path: Path) -> None:
    review_env.script(findings_reply(bug_finding(), {**bug_finding(line=BUG_LINE + 3, severity="info"),
                                                     "category": "performance", "message": "Sum with math.fsum."}))
    out = tmp_path / "review.sarif"
    assert run(calc_repo, "--format", "sarif", "--output", str(out)) == cli.EXIT_FINDINGS
    log = json.loads(out.read_text(encoding="utf-8"))
    validate_sarif(log)
    (run_,) = log["runs"]
    assert run_["invocations"] == [{"executionSuccessful": True}]
    assert [r["id"] for r in run_["tool"]["driver"]["rules"]] == ["bug", "performance"]
    first = run_["results"][0]
    assert first["level"] == "error" and first["ruleId"] == "bug"
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "calc.py", "uriBaseId": "SRCROOT"}
    assert location["region"]["startLine"] == BUG_LINE
    assert location["region"]["snippet"] == {"text": "    for v in values[1:]:"}
    assert run_["results"][1]["level"] == "note"


def test_server_down_warns_and_passes(calc_repo: GitRepo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("QWEN_LSP_BASE_URL", closed_port_url())
    monkeypatch.setenv("QWEN_LSP_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "review.sarif"
    assert run(calc_repo, "--format", "sarif", "--output", str(out)) == cli.EXIT_OK
    err = capsys.readouterr().err
    assert "the staged change was NOT reviewed" in err and "this is NOT a passed review" in err
    log = json.loads(out.read_text(encoding="utf-8"))
    validate_sarif(log)
    (invocation,) = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False and log["runs"][0]["results"] == []

    assert run(calc_repo, "--on-unavailable", "block") == cli.EXIT_UNAVAILABLE
    assert "Blocking the commit (--on-unavailable block)" in capsys.readouterr().err


def test_a_bad_setting_is_ignored_with_a_warning_and_the_review_runs(
        calc_repo: GitRepo, review_env: VLLMDouble, capsys: pytest.CaptureFixture[str]) -> None:
    (calc_repo.root / "pyproject.toml").write_text('[tool.qwen-lsp]\nmax_retries = "often"\n')  # not staged
    review_env.script(findings_reply(bug_finding()))
    assert run(calc_repo) == cli.EXIT_FINDINGS
    assert "qwen-review: ignoring invalid setting max_retries (from pyproject.toml:" in capsys.readouterr().err


def test_rerun_after_aborted_commit_is_cached(calc_repo: GitRepo, review_env: VLLMDouble,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    review_env.script(findings_reply(bug_finding()))
    assert run(calc_repo) == cli.EXIT_FINDINGS
    assert run(calc_repo, "--all") == cli.EXIT_FINDINGS  # --all: reported again (test_quiet_review.py: once)
    assert len(review_env.chat_requests()) == 1
    assert "(cached review of this diff)" in capsys.readouterr().out
    calc_repo.stage("calc.py", (calc_repo.root / "calc.py").read_text().replace("values[1:]", "list(values)"))
    review_env.script(findings_reply())
    assert run(calc_repo) == cli.EXIT_OK  # a new staged diff: asked again
    assert len(review_env.chat_requests()) == 2


def test_nothing_staged(tmp_path: Path, isolated_git: dict[str, str], review_env: VLLMDouble,
                        capsys: pytest.CaptureFixture[str]) -> None:
    repo = GitRepo(tmp_path / "repo")
    assert run(repo) == cli.EXIT_OK
    captured = capsys.readouterr()
    assert "nothing to review: the staged change is empty" in captured.err and "--from" in captured.err
    assert "no findings" not in captured.out + captured.err  # not a review that passed
    assert review_env.chat_requests() == []


def test_a_range_reviews_the_commits_with_their_code(calc_repo: GitRepo, review_env: VLLMDouble,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    calc_repo.git("commit", "-q", "-m", "Tweak mean")  # the bug is committed, nothing is staged
    calc_repo.write("calc.py", "print('unstaged work in progress')\n")
    review_env.script(findings_reply(bug_finding()))
    assert run(calc_repo, "--from", "HEAD~1", "--to", "HEAD") == cli.EXIT_FINDINGS
    captured = capsys.readouterr()
    assert "of the change HEAD~1...HEAD" in captured.err
    assert f"    {BUG_LINE:>5} |     for v in values[1:]:" in captured.out  # the line as committed
    prompt = review_env.chat_requests()[0]["messages"][1]["content"]
    assert "for v in values[1:]:" in prompt and "unstaged" not in prompt


def test_pre_commits_refs_select_the_range(calc_repo: GitRepo, review_env: VLLMDouble,
                                           monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    calc_repo.git("commit", "-q", "-m", "Tweak mean")
    monkeypatch.setenv("PRE_COMMIT_FROM_REF", "HEAD~1")
    monkeypatch.setenv("PRE_COMMIT_TO_REF", "HEAD")
    review_env.script(findings_reply(bug_finding()))
    assert run(calc_repo) == cli.EXIT_FINDINGS
    assert "HEAD~1...HEAD" in capsys.readouterr().err


def test_an_empty_range_is_nothing_to_review(calc_repo: GitRepo, review_env: VLLMDouble,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert run(calc_repo, "--from", "HEAD", "--format", "sarif") == cli.EXIT_OK
    captured = capsys.readouterr()
    assert "nothing to review: the change HEAD...HEAD is empty" in captured.err
    validate_sarif(json.loads(captured.out))  # an empty report, still valid for code scanning
    assert review_env.chat_requests() == []


def test_to_without_from_is_a_usage_error(calc_repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(calc_repo, "--to", "HEAD") == cli.EXIT_USAGE
    assert "--to needs --from" in capsys.readouterr().err


def test_outside_a_repository(tmp_path: Path, isolated_git: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["-C", str(tmp_path)]) == cli.EXIT_USAGE
    assert "qwen-review:" in capsys.readouterr().err


def test_install_writes_a_plain_git_hook(calc_repo: GitRepo, review_env: VLLMDouble, isolated_git: dict[str, str]) -> None:
    assert run(calc_repo, "--install", "--fail-on", "warning") == 0
    hook = calc_repo.root / ".git" / "hooks" / "pre-commit"
    assert os.access(hook, os.X_OK)
    assert "--fail-on warning" in hook.read_text()
    assert run(calc_repo, "--install") == 0  # its own hook may be rewritten

    review_env.script(findings_reply(bug_finding()))
    env = {**isolated_git, "QWEN_LSP_BASE_URL": review_env.base_url, "QWEN_LSP_CACHE_DIR": os.environ["QWEN_LSP_CACHE_DIR"]}
    before = calc_repo.head()
    commit = subprocess.run(["git", "commit", "-m", "bug"], cwd=calc_repo.root, env=env, capture_output=True, text=True)
    assert commit.returncode != 0
    assert f"{BUG_LINE}: error [bug]" in commit.stdout + commit.stderr  # git sends hook output to stderr
    assert calc_repo.head() == before


def test_install_keeps_a_foreign_hook(calc_repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    hook = calc_repo.root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho mine\n")
    assert run(calc_repo, "--install") == cli.EXIT_USAGE
    assert "--force" in capsys.readouterr().err and hook.read_text() == "#!/bin/sh\necho mine\n"
    assert run(calc_repo, "--install", "--force") == 0
    assert cli.HOOK_MARKER in hook.read_text()


def test_first_commit_of_a_repository(tmp_path: Path, isolated_git: dict[str, str], review_env: VLLMDouble,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    repo = GitRepo(tmp_path / "repo")  # no HEAD yet: no history, everything is new
    repo.stage("src/app.py", "import os\n\n\ndef main():\n    os.system(input())\n")
    review_env.script(findings_reply({"path": "src/app.py", "line": 5, "severity": "error",
                                      "category": "security", "message": "Runs user input as a shell command."}))
    assert run(repo) == cli.EXIT_FINDINGS
    out = capsys.readouterr().out
    assert "src/app.py\n  5: error [security]" in out and "    5 |     os.system(input())" in out


def test_a_finding_outside_the_staged_hunks_is_context_and_does_not_block(
    calc_repo: GitRepo, review_env: VLLMDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    review_env.script(findings_reply(bug_finding(line=250)))  # far below the staged change (calc.py is 22 lines)
    assert run(calc_repo) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert "Context: outside the staged hunks (not blocking)" in out and "  250: error [bug]" in out
    assert f"  {BUG_LINE}:" not in out  # not moved onto the changed line
    assert "1 more outside the staged hunks" in out and "Commit blocked" not in out


def test_an_unknown_severity_is_counted_shown_and_can_block(
    calc_repo: GitRepo, review_env: VLLMDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    review_env.script(findings_reply(bug_finding(severity="catastrophic")))
    assert run(calc_repo, "--fail-on", "warning") == cli.EXIT_FINDINGS
    out = capsys.readouterr().out
    assert f"  {BUG_LINE}: warning (model said 'catastrophic') [bug]" in out
    assert "no findings" not in out
    assert "1 finding(s) had an unknown severity ('catastrophic' x1), counted as warning." in out


def test_uninstall_removes_the_hooks_install_wrote_and_leaves_a_foreign_one(
        tmp_path: Path, calc_repo: GitRepo, isolated_git: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    from tests.review.helpers import make_calc_repo

    other, foreign = make_calc_repo(tmp_path / "other", isolated_git), make_calc_repo(tmp_path / "foreign", isolated_git)
    for repo in (calc_repo, other):
        assert run(repo, "--install") == 0
    mine = "#!/bin/sh\necho mine\n"
    (foreign.root / ".git" / "hooks" / "pre-commit").write_text(mine)
    assert run(foreign, "--uninstall") == 0
    assert "not written by qwen-review, left alone" in capsys.readouterr().out
    assert run(calc_repo, "--uninstall") == 0  # this repository's
    assert not (calc_repo.root / ".git" / "hooks" / "pre-commit").exists()
    assert (other.root / ".git" / "hooks" / "pre-commit").exists()
    capsys.readouterr()
    assert cli.main(["--uninstall", "--all", "-C", str(tmp_path)]) == 0  # every other one, from anywhere
    assert f"{other.root / '.git' / 'hooks' / 'pre-commit'}: removed" in capsys.readouterr().out
    assert not (other.root / ".git" / "hooks" / "pre-commit").exists()
    assert (foreign.root / ".git" / "hooks" / "pre-commit").read_text() == mine


def test_the_hook_once_qwen_review_is_gone_lets_the_commit_through_and_says_how_to_remove_it(
        tmp_path: Path, calc_repo: GitRepo, isolated_git: dict[str, str]) -> None:
    hook = calc_repo.root / ".git" / "hooks" / "pre-commit"
    assert run(calc_repo, "--install") == 0
    hook.write_text(hook.read_text().replace(f"PYTHON={cli.shlex.quote(cli.sys.executable)}",
                                             f"PYTHON={tmp_path / 'uninstalled' / 'python'}"))
    commit = subprocess.run(["git", "commit", "-m", "after uninstalling"], cwd=calc_repo.root, env=isolated_git,
                            capture_output=True, text=True)
    assert commit.returncode == 0, commit.stderr
    assert "this commit was NOT reviewed" in commit.stderr and "qwen-review --install again" in commit.stderr
    assert "or remove this hook: rm " in commit.stderr and "hooks/pre-commit" in commit.stderr


def test_a_range_review_with_the_server_down_speaks_of_the_range_not_of_a_commit(
        calc_repo: GitRepo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("QWEN_LSP_BASE_URL", closed_port_url())
    monkeypatch.setenv("QWEN_LSP_CACHE_DIR", str(tmp_path / "cache"))
    assert run(calc_repo, "--from", "HEAD~1") == cli.EXIT_OK
    err = capsys.readouterr().err
    assert "the change HEAD~1...HEAD was NOT reviewed" in err and "Passing (--on-unavailable pass)" in err
    assert "staged" not in err and "commit" not in err
    assert run(calc_repo, "--from", "HEAD~1", "--on-unavailable", "block") == cli.EXIT_UNAVAILABLE
    assert "Failing (--on-unavailable block)" in capsys.readouterr().err
