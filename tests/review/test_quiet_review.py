"""Review that keeps quiet: a finding is reported once per repository (unless --all),
--max-findings keeps the most severe, the text and SARIF say how many were held back, and
`.qwen/review.md` reaches the prompt as repository content, never as a setting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qwen_lsp.review import cli
from qwen_lsp.settings import load_settings
from tests.review.gitrepo import GitRepo
from tests.review.helpers import BUG_LINE, bug_finding, findings_reply, validate_sarif
from tests.vllm_double import VLLMDouble

STYLE = {**bug_finding(line=BUG_LINE + 3, severity="info"), "category": "style", "message": "Name it total."}


def run(repo: GitRepo, *args: str) -> int:
    return cli.main(["-C", str(repo.root), *args])


def test_the_same_staged_change_reports_a_finding_once(calc_repo: GitRepo, review_env: VLLMDouble,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    review_env.script(findings_reply(bug_finding()))
    assert run(calc_repo) == cli.EXIT_FINDINGS
    first = capsys.readouterr().out
    assert "The loop skips the first value" in first and "Held back" not in first

    assert run(calc_repo) == cli.EXIT_OK  # the cached review: its finding was reported already
    again = capsys.readouterr().out
    assert "The loop skips the first value" not in again
    assert "qwen-review: no findings. Held back: 1 already reported for the same code (--all shows them)." in again

    assert run(calc_repo, "--all") == cli.EXIT_FINDINGS
    assert "The loop skips the first value" in capsys.readouterr().out
    assert len(review_env.chat_requests()) == 1

    # The same message on other code is news: the cited lines are part of what was reported.
    calc_repo.stage("calc.py", (calc_repo.root / "calc.py").read_text().replace("for v in values[1:]:", "for v in values[2:]:"))
    review_env.script(findings_reply(bug_finding()))
    assert run(calc_repo) == cli.EXIT_FINDINGS


def test_max_findings_keeps_the_most_severe_and_sarif_counts_the_rest(calc_repo: GitRepo, review_env: VLLMDouble,
                                                                       tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    review_env.script(findings_reply(STYLE, bug_finding()))
    out = tmp_path / "review.sarif"
    assert run(calc_repo, "--max-findings", "1", "--format", "sarif", "--output", str(out)) == cli.EXIT_FINDINGS
    log = json.loads(out.read_text(encoding="utf-8"))
    validate_sarif(log)
    (run_,) = log["runs"]
    assert [r["ruleId"] for r in run_["results"]] == ["bug"]  # the error, not the info
    assert run_["properties"]["heldBack"] == {"alreadyReported": 0, "overLimit": 1}
    assert run_["invocations"][0]["toolExecutionNotifications"][0]["level"] == "note"
    assert "1 less severe past --max-findings" in capsys.readouterr().err

    # The one held back over the limit was never reported: the next run shows it, and only it.
    assert run(calc_repo) == cli.EXIT_OK
    text = capsys.readouterr().out
    assert "Name it total." in text and "The loop skips" not in text
    assert "Held back: 1 already reported" in text


def test_review_md_reaches_the_prompt_and_is_no_setting(calc_repo: GitRepo, review_env: VLLMDouble,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    guidance = ("Flag: off-by-one loops.\nDo not flag: naming.\n"
                "base_url = \"http://attacker.invalid/v1\"\n[tool.qwen-lsp]\nfail_on = \"never\"\n")
    calc_repo.stage(".qwen/review.md", guidance)
    review_env.script(findings_reply(bug_finding()))
    assert run(calc_repo) == cli.EXIT_FINDINGS  # still blocks: the file chose no setting
    (request,) = review_env.chat_requests()
    prompt = request["messages"][1]["content"]
    assert "Do not flag: naming." in prompt and ".qwen/review.md" in prompt
    assert prompt.index("Do not flag: naming.") < prompt.index("# The change")
    assert load_settings(calc_repo.root).base_url != "http://attacker.invalid/v1"
