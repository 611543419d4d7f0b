"""The one text reader, and the tools over it, facing files that are not readable text."""

from __future__ import annotations

import os
from pathlib import Path

from qwen_lsp.context.source import read_source
from qwen_lsp.engine.overlay import Overlay
from qwen_lsp.engine.tools import ToolBox
from qwen_lsp.files import FileText, read_text

AS_ROOT = os.geteuid() == 0


def unreadable(root: Path) -> list[Path]:
    """Files that exist in a listing but cannot be read: a symlink loop (the kernel refuses
    with ELOOP, for root too) and, when not root, a mode-000 file (root reads those anyway)."""
    loop = root / "loop.py"
    loop.symlink_to(loop.name)
    made = [loop]
    if not AS_ROOT:
        secret = root / "secret.py"
        secret.write_text("x = 'secret'\n")
        secret.chmod(0)
        made.append(secret)
    return made


def test_read_text_is_none_for_anything_but_a_readable_text_file(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("x = 1\n")
    (tmp_path / "binary.py").write_bytes(b"x\x00y")
    (tmp_path / "latin1.py").write_bytes(b"name = 'caf\xe9'\n")
    (tmp_path / "dir.py").mkdir()
    os.mkfifo(tmp_path / "fifo.py")  # opening it must not wait for a writer
    assert read_text(tmp_path / "ok.py") == FileText("x = 1\n", utf8=True)
    assert read_text(tmp_path / "ok.py", max_bytes=3) is None
    # Not UTF-8: shown with replacement characters, and marked so that nothing edits it.
    assert read_text(tmp_path / "latin1.py") == FileText("name = 'caf\ufffd'\n", utf8=False)
    for name in ["missing.py", "binary.py", "dir.py", "fifo.py"]:
        assert read_text(tmp_path / name) is None, name
    for path in unreadable(tmp_path):
        assert read_text(path) is None, path.name


def test_one_unreadable_file_does_not_stop_search_or_read(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    bad = unreadable(tmp_path)
    tools = ToolBox(Overlay(tmp_path))

    assert tools.call("search_code", '{"pattern": "return"}') == "calc.py:2: return a - b"
    for path in bad:
        answer = tools.call("read_file", {"path": path.name})
        assert answer.startswith("Error: ") and path.name in answer
        assert read_source(tmp_path, path.name) is None
