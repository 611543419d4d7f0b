from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.review.gitrepo import GitRepo, git_env
from tests.vllm_double import Reply, VLLMDouble

CALC_V1 = '''"""Small statistics helpers."""

import math


def mean(values):
    """The arithmetic mean of `values`.

    Empty input has no mean; callers get 0.0 so reports stay printable.
    """
    if not values:
        return 0.0
    total = 0
    count = 0
    for v in values:
        total += v
        count += 1
    return total / count
'''

# Second commit: the history the review should see for the loop.
CALC_V2 = CALC_V1.replace(
    "        total += v\n",
    "        if v is None or math.isnan(v):\n            continue\n        total += v\n",
)

# The staged bug: the loop drops the first sample.
CALC_BUG = CALC_V2.replace("    for v in values:\n", "    for v in values[1:]:\n")
BUG_LINE = CALC_BUG.splitlines().index("    for v in values[1:]:") + 1
HISTORY_SUBJECT = "Skip missing samples in mean"


def findings_reply(*findings: dict) -> Reply:
    return Reply(content=json.dumps({"findings": list(findings)}))


def bug_finding(line: int = BUG_LINE + 1, path: str = "calc.py", severity: str = "error") -> dict:
    """What the model answers about the staged bug; by default one line off, as models are."""
    return {
        "path": path,
        "line": line,
        "severity": severity,
        "category": "bug",
        "message": "The loop skips the first value, so the mean is wrong.",
        "suggestion": "Iterate over `values`, not `values[1:]`.",
    }


def make_calc_repo(root: Path, env: dict[str, str] | None = None) -> GitRepo:
    """A repository with two commits of calc.py and the bug staged."""
    repo = GitRepo(root, env)
    repo.commit("Add mean", {"calc.py": CALC_V1})
    repo.commit(HISTORY_SUBJECT, {"calc.py": CALC_V2})
    repo.stage("calc.py", CALC_BUG)
    return repo


@pytest.fixture
def isolated_git(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """This process's environment made safe for throwaway repositories (the CLI runs git with it)."""
    env = git_env()
    for key in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX"):
        monkeypatch.delenv(key, raising=False)
    for key in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
                "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(key, env[key])
    return env


@pytest.fixture
def calc_repo(tmp_path: Path, isolated_git: dict[str, str]) -> GitRepo:
    return make_calc_repo(tmp_path / "repo", isolated_git)


@pytest.fixture
def review_env(monkeypatch: pytest.MonkeyPatch, vllm: VLLMDouble, tmp_path: Path) -> Iterator[VLLMDouble]:
    """QWEN_LSP_* pointing at the double and a private cache, as a hook process would get them."""
    monkeypatch.setenv("QWEN_LSP_BASE_URL", vllm.base_url)
    monkeypatch.setenv("QWEN_LSP_CACHE_DIR", str(tmp_path / "cache"))
    yield vllm
