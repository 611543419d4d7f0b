"""The language server's fix of a terminal diagnostic plans with the same context as qfix: the body
of what the failing test calls and the user's uncommitted edit, in a prefix the patch rounds share."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qwen_lsp.context.prompt import HEADINGS, assemble
from qwen_lsp.lsp.convert import file_uri
from qwen_lsp.settings import Settings
from qwen_lsp.types import Task, TaskKind
from tests.calc_project import BUGGY, FIXED, make_project
from tests.context.reach_project import commit_all
from tests.lsp.helpers import FIX_REPLIES, MAIN, PYTEST, PYTEST_OUTPUT, code_actions, plan_reply, terminal_output, wait_until


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The calc project with add() right in git and broken in the working tree (not saved in any commit)."""
    root = make_project(tmp_path / "proj")
    (root / "main.py").write_text(MAIN)
    (root / "calc.py").write_text(FIXED)
    commit_all(root, "calc: add and sub")
    (root / "calc.py").write_text(BUGGY)
    return root


def section(user: str, key: str) -> str:
    start = user.index(HEADINGS[key])
    later = [user.index(h) for h in HEADINGS.values() if user.index(h) > start]
    return user[start : min(later, default=len(user))]


async def test_the_fix_of_a_terminal_diagnostic_sees_the_callee_and_the_uncommitted_edit(lsp, vllm, project, tmp_path):
    terminal_output(lsp, PYTEST, 1, PYTEST_OUTPUT, project)
    test_uri = file_uri(project, "test_calc.py")
    diagnostics = await wait_until(lambda: lsp.diagnostics.get(test_uri))
    (fix, *_) = await code_actions(lsp, test_uri, list(diagnostics))

    vllm.script(plan_reply(), *FIX_REPLIES)
    await lsp.code_action_resolve_async(fix)
    plan, *patches = vllm.chat_requests()
    assert plan["chat_template_kwargs"]["enable_thinking"] is True
    user = plan["messages"][1]["content"]

    # add() is called by the failing test, never a frame of it, and edited: its body comes whole ...
    callees = section(user, "callees")
    assert "#### calc.py lines 1-3 (whole; changed in the working tree)" in callees
    assert "def add(a, b):\n    total = a - b\n    return total" in callees
    # ... and the edit that broke it, uncommitted, as a diff.
    changes = section(user, "changes")
    assert "Uncommitted changes (staged and unstaged):" in changes and "-    total = a + b\n+    total = a - b" in changes

    # The same sections qfix's one-shot assembly builds for the same output.
    task = Task(kind=TaskKind.command, description="fix", terminal_output=PYTEST_OUTPUT, command=PYTEST, exit_code=1)
    oneshot = assemble(task, project, Settings(), system="s", tools=[], cache_dir=tmp_path / "oneshot")
    other = oneshot.messages[1]["content"]
    assert section(other, "callees") == callees and section(other, "changes") == changes

    # Byte-stable prefix: every patch round resends the plan's system and context messages unchanged.
    assert patches and all(json.dumps(p["messages"][:2]) == json.dumps(plan["messages"][:2]) for p in patches)
