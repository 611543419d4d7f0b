"""Writing a reviewed fix: all files or none, and never over a change the user made meanwhile."""

from __future__ import annotations

import pytest

from qwen_lsp.apply import StaleFile, apply_changes
from qwen_lsp.engine.overlay import Overlay


def test_apply_refuses_files_changed_since_they_were_read(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 1\n")
    overlay = Overlay(tmp_path)
    overlay.write("a.py", "x = 2\n")
    overlay.write("b.py", "y = 2\n")
    changes = overlay.changes()
    (tmp_path / "b.py").write_text("y = 99\n")  # the user edits meanwhile
    with pytest.raises(StaleFile, match="b.py"):
        apply_changes(tmp_path, changes)
    assert (tmp_path / "a.py").read_text() == "x = 1\n"  # all or nothing
    (tmp_path / "b.py").write_text("y = 1\n")
    apply_changes(tmp_path, changes)
    assert (tmp_path / "a.py").read_text() == "x = 2\n" and (tmp_path / "b.py").read_text() == "y = 2\n"
