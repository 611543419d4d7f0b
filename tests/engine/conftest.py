"""Fixtures shared by the engine tests."""

from __future__ import annotations

import pytest

from qwen_lsp.engine import sandbox


@pytest.fixture
def jail():
    """bubblewrap's status; these tests fail (not skip) without it: scripts/test installs it."""
    status = sandbox.status()
    if not status.available:
        pytest.fail(f"bubblewrap is needed for these tests (scripts/test installs it): {status.detail}")
    return status
