"""The language server against a hostile model: it never offers an edit of a protected
path, and a fix it could not verify in the sandbox says so in its title."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from qwen_lsp.lsp.convert import file_uri
from tests.calc_project import make_project
from tests.hostile import path_without_bwrap
from tests.lsp.helpers import MAIN, PLAN, PYTEST, pytest_failure_fix
from tests.vllm_double import Reply


@pytest.fixture(params=["bwrap", "no-sandbox"], autouse=True)
def mode(request, tmp_path: Path, monkeypatch) -> str:
    """Autouse, so it runs before the server starts: the second run has no bwrap on the server's PATH."""
    if request.param == "no-sandbox":
        monkeypatch.setenv("PATH", path_without_bwrap(tmp_path / "shims"))
    return request.param


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The usual project, as a git repository."""
    root = make_project(tmp_path / "proj")
    (root / "main.py").write_text(MAIN)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


async def test_a_fix_never_carries_a_protected_edit_and_its_title_says_how_far_it_was_checked(lsp, vllm, project, mode):
    config = (project / ".git" / "config").read_text()
    fix = await pytest_failure_fix(lsp, project)

    vllm.script(
        Reply(reasoning="add() subtracts", content=json.dumps(PLAN)),
        Reply(tool_calls=[
            ("edit_file", {"path": ".git/config", "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = touch x"}),
            ("create_file", {"path": "evil.pth", "content": "import os\n"}),
            ("edit_file", {"path": "calc.py", "old_string": "total = a - b", "new_string": "total = a + b"}),
        ]),
        Reply(tool_calls=[("finish", {"summary": "add now adds"})]),
    )
    resolved = await lsp.code_action_resolve_async(fix)

    uris = [change.text_document.uri for change in resolved.edit.document_changes]
    assert uris == [file_uri(project, "calc.py")]  # never .git/config, never a .pth file
    if mode == "no-sandbox":
        assert resolved.title == "Fix AssertionError (✓ parses, not verified: no sandbox; refused: .git/config, evil.pth)"
        assert not resolved.is_preferred
    else:
        assert resolved.title == f"Fix AssertionError (✓ parses, ✓ {PYTEST}; refused: .git/config, evil.pth)"
    assert (project / ".git" / "config").read_text() == config
