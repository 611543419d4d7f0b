"""The overlay: a fix's edits in memory, over the editor's buffers, never on disk."""

from __future__ import annotations

import pytest

from qwen_lsp.engine.overlay import Overlay, PathOutsideWorkspace


def test_overlay_never_touches_disk_and_refuses_escapes(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    overlay = Overlay(tmp_path, read_buffer=lambda rel: "x = 2\n" if rel == "a.py" else None)
    assert overlay.read("a.py") == "x = 2\n"  # the unsaved editor buffer wins
    overlay.write("a.py", "x = 3\n")
    overlay.write("new/b.py", "y\n")
    assert (tmp_path / "a.py").read_text() == "x = 1\n" and not (tmp_path / "new").exists()
    assert [(c.path, c.original, c.created) for c in overlay.changes()] == [("a.py", "x = 2\n", False), ("new/b.py", "", True)]
    for bad in ("../x.py", "/etc/passwd"):
        with pytest.raises(PathOutsideWorkspace):
            overlay.read(bad)


def test_overlay_reads_each_file_once(tmp_path):
    buffers = iter(["x = 1\n", "x = 1\nz = 3\n"])  # the file changes between two reads
    overlay = Overlay(tmp_path, lambda rel: next(buffers))
    assert overlay.read("m.py") == overlay.read("m.py") == "x = 1\n"
    overlay.write("m.py", "x = 2\n")
    assert overlay.changes()[0].original == "x = 1\n"
