"""Shared fixtures of the model client's tests."""

from __future__ import annotations

import tempfile

import pytest


@pytest.fixture(autouse=True)
def _temp_under_tmp_path(tmp_path, monkeypatch):
    # the clients' cache folders (tempfile.mkdtemp) go under pytest's tmp_path, which pytest prunes:
    # a folder per test had piled up in /tmp
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
