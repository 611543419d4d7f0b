"""Fixtures for the review tests: git isolated from the user's config, the calc repository
with a bug staged, and QWEN_LSP_* pointing a hook process at the vLLM double."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.review.gitrepo import GitRepo, git_env
from tests.review.helpers import make_calc_repo
from tests.vllm_double import VLLMDouble


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
