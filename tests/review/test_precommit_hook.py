"""The hook as users get it: the real pre-commit framework installs this repository's
`.pre-commit-hooks.yaml` (a local `repo:`), pip-installs the project into its own
environment, and runs `qwen-review` from `git commit` against the vLLM double."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.net import closed_port_url
from tests.review.helpers import (
    BUG_LINE,
    CALC_BUG,
    CALC_V1,
    CALC_V2,
    HISTORY_SUBJECT,
    bug_finding,
    findings_reply,
    validate_sarif,
)
from tests.review.gitrepo import GitRepo, git_env
from tests.vllm_double import VLLMDouble

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # the first hook run pip-installs the project

SOURCE = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A git repository holding this working tree (committed or not), as pre-commit needs a rev."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=SOURCE, env=git_env(), capture_output=True, check=True,
    ).stdout.decode().split("\0")
    dest = tmp_path_factory.mktemp("hook-repo")
    for relpath in filter(None, listed):
        src = SOURCE / relpath
        if src.is_file():  # tracked files deleted in the work tree are skipped
            (dest / relpath).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / relpath)
    repo = GitRepo(dest)
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "snapshot of the work tree")
    return dest, repo.head()


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One hook environment for the whole session: pip-installing the project is the slow part."""
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def project(tmp_path: Path, hook_repo: tuple[Path, str], pre_commit_home: Path) -> tuple[GitRepo, dict[str, str]]:
    """A user's repository that adds the hook with an ordinary `repos:` entry, with the bug staged."""
    path, rev = hook_repo
    sarif = tmp_path / "review.sarif"
    config = {
        "repos": [
            {
                "repo": str(path),
                "rev": rev,
                "hooks": [
                    {"id": "qwen-review", "stages": ["pre-commit"]},
                    {
                        "id": "qwen-review",
                        "alias": "qwen-review-sarif",
                        "args": ["--format", "sarif", "--output", str(sarif), "--fail-on", "never"],
                        "stages": ["manual"],
                    },
                ],
            }
        ]
    }
    env = {**git_env(), "PRE_COMMIT_HOME": str(pre_commit_home), "QWEN_LSP_CACHE_DIR": str(tmp_path / "cache")}
    repo = GitRepo(tmp_path / "project", env)
    # JSON is YAML: no YAML writer needed.
    repo.commit("Add mean", {"calc.py": CALC_V1, ".pre-commit-config.yaml": json.dumps(config, indent=2)})
    repo.commit(HISTORY_SUBJECT, {"calc.py": CALC_V2})
    repo.stage("calc.py", CALC_BUG)
    installed = subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=repo.root, env=env,
                               capture_output=True, text=True)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return repo, env


def commit(repo: GitRepo, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "commit", "-m", "Tweak mean"], cwd=repo.root, env=env, capture_output=True, text=True)


def test_staged_bug_blocks_the_commit(project: tuple[GitRepo, dict[str, str]], vllm: VLLMDouble) -> None:
    repo, env = project
    vllm.script(findings_reply(bug_finding()))
    before = repo.head()
    proc = commit(repo, {**env, "QWEN_LSP_BASE_URL": vllm.base_url})
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "qwen-review" in output and "Failed" in output
    assert "calc.py" in output and f"  {BUG_LINE}: error [bug] The loop skips the first value" in output
    assert f"{BUG_LINE:>5} |     for v in values[1:]:" in output
    assert repo.head() == before
    (request,) = vllm.chat_requests()
    assert "for v in values[1:]:" in request["messages"][1]["content"]


def test_server_down_warns_and_lets_the_commit_through(project: tuple[GitRepo, dict[str, str]]) -> None:
    repo, env = project
    before = repo.head()
    proc = commit(repo, {**env, "QWEN_LSP_BASE_URL": closed_port_url()})
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "the staged change was NOT reviewed" in output and "Cannot reach the model server" in output
    assert repo.head() != before


def test_manual_stage_writes_valid_sarif(project: tuple[GitRepo, dict[str, str]], vllm: VLLMDouble, tmp_path: Path) -> None:
    repo, env = project
    vllm.script(findings_reply(bug_finding()))
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--hook-stage", "manual", "qwen-review-sarif"],
        cwd=repo.root, env={**env, "QWEN_LSP_BASE_URL": vllm.base_url}, capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    log = json.loads((tmp_path / "review.sarif").read_text(encoding="utf-8"))
    validate_sarif(log)
    (result,) = log["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == BUG_LINE


def test_from_ref_to_ref_reviews_the_committed_range(project: tuple[GitRepo, dict[str, str]], vllm: VLLMDouble) -> None:
    """`pre-commit run --from-ref A --to-ref B` (what CI and pre-push use): the commits, not the index."""
    repo, env = project
    repo.git("commit", "-q", "--no-verify", "-m", "Tweak mean")
    vllm.script(findings_reply(bug_finding()))
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "qwen-review", "--from-ref", "HEAD~1", "--to-ref", "HEAD"],
        cwd=repo.root, env={**env, "QWEN_LSP_BASE_URL": vllm.base_url}, capture_output=True, text=True,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Failed" in output, output
    assert "of the change HEAD~1...HEAD" in output
    assert f"{BUG_LINE:>5} |     for v in values[1:]:" in output
    (request,) = vllm.chat_requests()
    assert "for v in values[1:]:" in request["messages"][1]["content"]


def test_all_files_with_nothing_staged_says_nothing_to_review(project: tuple[GitRepo, dict[str, str]], vllm: VLLMDouble) -> None:
    repo, env = project
    repo.git("commit", "-q", "--no-verify", "-m", "Tweak mean")
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "run", "qwen-review", "--all-files"],
                          cwd=repo.root, env={**env, "QWEN_LSP_BASE_URL": vllm.base_url}, capture_output=True, text=True)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "nothing to review: the staged change is empty" in output and "--from-ref" in output
    assert "no findings" not in output and vllm.chat_requests() == []
