"""Untrusted model answers and hostile workspaces: fixtures shared with the qfix, review and LSP tests."""

from tests.qfix.conftest import qfix_env, repo  # noqa: F401
from tests.review.conftest import calc_repo, isolated_git, review_env  # noqa: F401
