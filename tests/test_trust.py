"""The trust boundary, attacked by a scripted hostile model on the vLLM test double.

Each attack runs twice: with the bubblewrap sandbox, and with bwrap missing from PATH.
Every test asserts that no file outside the temporary copy changed, that no process the
attack started is left, that no secret was visible to the sandboxed code, and that the
result says what happened. Without a sandbox nothing model-influenced runs at all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from qwen_lsp.apply import apply_changes
from qwen_lsp.engine import sandbox
from qwen_lsp.engine.loop import Engine
from qwen_lsp.engine.protected import ProtectedPath
from qwen_lsp.lsp.convert import fix_title
from qwen_lsp.settings import Settings
from qwen_lsp.types import FileChange, Task, TaskKind
from tests.calc_project import BUGGY, FIXED, PYTEST, PYTEST_OUTPUT, make_project
from tests.hostile import API_KEY, CANARY_TEXT, Stage, path_without_bwrap
from tests.vllm_double import Reply, VLLMDouble

FIX_CALC = ("edit_file", {"path": "calc.py", "old_string": "total = a - b", "new_string": "total = a + b"})
FINISH = Reply(tool_calls=[("finish", {"summary": "fixed"})])
GIVE_UP = [Reply(content="I am done."), Reply(content="Nothing more to do.")]


def plan(verify_command: str | None = None) -> Reply:
    body = {"hypotheses": ["add subtracts"], "evidence": [], "steps": ["use +"], "verify_command": verify_command}
    return Reply(reasoning="add() subtracts", content=json.dumps(body))


@pytest.fixture(params=["bwrap", "no-sandbox"])
def mode(request, monkeypatch, tmp_path) -> str:
    """Run the test with the real sandbox, then with bwrap missing from PATH."""
    if request.param == "bwrap":
        if not sandbox.status().available:
            pytest.fail(f"bubblewrap is needed for these tests (scripts/test installs it): {sandbox.status().detail}")
    else:
        monkeypatch.setenv("PATH", path_without_bwrap(tmp_path / "shims"))
        assert not sandbox.status().available
    return request.param


@pytest.fixture
def stage(tmp_path, monkeypatch) -> Iterator[Stage]:
    workspace = make_project(tmp_path / "proj")
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    stage = Stage.make(tmp_path, workspace)
    monkeypatch.setenv("HOME", str(stage.home))
    monkeypatch.setenv("QWEN_LSP_API_KEY", API_KEY)
    yield stage
    stage.kill_survivors()


async def run_fix(vllm: VLLMDouble, stage: Stage, tmp_path: Path, task: Task | None = None):
    """The engine's fix, with the contained-ness checks every attack must pass."""
    before = stage.snapshot()
    settings = Settings(base_url=vllm.base_url, cache_dir=tmp_path / "cache", max_retries=0, api_key=API_KEY)
    engine = Engine(settings)
    try:
        result = await engine.fix(task or command_task(), stage.workspace)
    finally:
        await engine.client.close()
    assert stage.snapshot() == before, "a file outside the temporary copy changed"
    assert stage.survivors() == [], "a process the attack started is still running"
    outputs = json.dumps(result.model_dump()) + json.dumps(vllm.chat_requests())
    assert API_KEY not in outputs.replace(f"Bearer {API_KEY}", "") and CANARY_TEXT not in outputs
    return result


def command_task() -> Task:
    return Task.for_command(PYTEST, 1, PYTEST_OUTPUT, None)


def tool_results(vllm: VLLMDouble) -> list[str]:
    return [m["content"] for m in vllm.chat_requests()[-1]["messages"] if m["role"] == "tool"]


# -- attacks ---------------------------------------------------------------------------------------


async def test_a_conftest_that_attacks_runs_only_inside_the_sandbox(vllm, stage, mode, tmp_path):
    vllm.script(
        plan(),
        Reply(tool_calls=[FIX_CALC, ("create_file", {"path": "conftest.py", "content": stage.payload()})]),
        FINISH, *GIVE_UP,
    )
    result = await run_fix(vllm, stage, tmp_path)
    assert result.validation.runs_during_verification == ["conftest.py (pytest imports it)"]
    if mode == "bwrap":
        (verify,) = [c for c in result.validation.checks if c.name == PYTEST]
        assert stage.contained_report() in verify.detail  # it ran, saw no secret, wrote only into the copy
        assert result.outcome == "failed" and not result.changes
    else:
        assert result.outcome == "changed_unverified"
        assert result.validation.not_verified == "no sandbox" and "bwrap" in result.validation.not_verified_detail
        assert "HOSTILE-RAN secrets=[" not in json.dumps(vllm.chat_requests())  # nothing ran
        assert "not verified: no sandbox" in fix_title("AssertionError", result)
        assert "⚠ runs during verification: conftest.py" in fix_title("AssertionError", result)


async def test_a_hostile_makefile_recipe_runs_only_inside_the_sandbox(vllm, stage, mode, tmp_path):
    (stage.workspace / "Makefile").write_text(f"test:\n\t{sys.executable} -m pytest -q -p no:cacheprovider\n")
    recipe = f"\t{sys.executable} -m pytest -q -p no:cacheprovider\n"
    vllm.script(
        plan(),
        Reply(tool_calls=[
            FIX_CALC,
            ("create_file", {"path": "tools/check.py", "content": stage.payload()}),
            ("edit_file", {"path": "Makefile", "old_string": recipe, "new_string": f"\t{sys.executable} tools/check.py\n"}),
        ]),
        FINISH, *GIVE_UP,
    )
    task = Task.for_command("make test", 2, PYTEST_OUTPUT, None)
    result = await run_fix(vllm, stage, tmp_path, task)
    assert result.validation.runs_during_verification == ["Makefile (make runs its recipes)"]
    if mode == "bwrap":
        (verify,) = [c for c in result.validation.checks if c.name == "make test"]
        assert stage.contained_report() in verify.detail
        assert result.outcome == "failed"
    else:
        assert result.outcome == "changed_unverified" and result.validation.not_verified == "no sandbox"
        assert "HOSTILE-RAN secrets=[" not in json.dumps(vllm.chat_requests())


@pytest.mark.parametrize("option", ["--junitxml={outside}/report.xml", "--basetemp={outside}/base",
                                    "--rootdir=..", "-p evil_plugin"])
async def test_a_plan_command_writing_outside_the_workspace_is_refused(vllm, stage, mode, tmp_path, option):
    command = f"pytest {option.format(outside=stage.outside)} test_calc.py"
    vllm.script(plan(command), Reply(tool_calls=[FIX_CALC]), FINISH)
    task = Task(kind=TaskKind.diagnostic, description="add() returns the difference", path="calc.py",
                start_line=2, end_line=2)
    result = await run_fix(vllm, stage, tmp_path, task)
    assert not (stage.outside / "report.xml").exists() and not (stage.outside / "base").exists()
    assert result.outcome == "changed_unverified" and result.validation.not_verified == "no command to run"
    assert "was refused" in result.validation.not_verified_detail
    assert [c.name for c in result.validation.checks] == ["parses: calc.py"]


async def test_a_plan_command_writing_inside_the_workspace_runs_sandboxed(vllm, stage, mode, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    command = "python -m pytest -q -p no:cacheprovider --junitxml=reports/junit.xml test_calc.py"
    vllm.script(plan(command), Reply(tool_calls=[FIX_CALC]), FINISH)
    task = Task(kind=TaskKind.diagnostic, description="add() returns the difference", path="calc.py",
                start_line=2, end_line=2)
    result = await run_fix(vllm, stage, tmp_path, task)
    if mode == "bwrap":
        assert result.outcome == "fixed" and result.validation.checks[-1].name == command
    else:
        assert result.outcome == "changed_unverified" and result.validation.not_verified == "no sandbox"
    assert not (stage.workspace / "reports").exists()  # it wrote into the temporary copy only


async def test_an_edit_of_git_config_or_hooks_is_refused_and_the_rest_goes_on(vllm, stage, mode, tmp_path):
    config = (stage.workspace / ".git" / "config").read_text()
    vllm.script(
        plan(),
        Reply(tool_calls=[
            ("edit_file", {"path": ".git/config", "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = touch /tmp/x"}),
            ("create_file", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ntouch /tmp/x\n"}),
            ("create_file", {"path": "sub/.GIT/config", "content": "x"}),
        ]),
        Reply(tool_calls=[FIX_CALC]),
        FINISH,
    )
    result = await run_fix(vllm, stage, tmp_path)
    errors = tool_results(vllm)[:3]
    assert all(e.startswith("Error:") and "protected" in e for e in errors), errors
    assert ".git/config is inside .git/" in errors[0]
    assert result.refused_writes == [".git/config", ".git/hooks/pre-commit", "sub/.GIT/config"]
    assert "refused: .git/config, .git/hooks/pre-commit, sub/.GIT/config" in fix_title("AssertionError", result)
    assert [c.path for c in result.changes] == ["calc.py"]
    assert (stage.workspace / ".git" / "config").read_text() == config
    assert result.outcome == ("fixed" if mode == "bwrap" else "changed_unverified")


async def test_a_pth_file_or_a_virtualenv_edit_is_refused(vllm, stage, mode, tmp_path):
    site = stage.workspace / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (stage.workspace / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (stage.workspace / "env").mkdir()
    (stage.workspace / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    vllm.script(
        plan(),
        Reply(tool_calls=[
            ("create_file", {"path": ".venv/lib/python3.11/site-packages/evil.pth", "content": "import os\n"}),
            ("create_file", {"path": "evil.pth", "content": "import os\n"}),
            ("create_file", {"path": "env/bin/activate_this.py", "content": "import os\n"}),
            ("create_file", {"path": "node_modules/x/index.js", "content": "1"}),
            FIX_CALC,
        ]),
        FINISH,
    )
    result = await run_fix(vllm, stage, tmp_path)
    errors = tool_results(vllm)[:4]
    assert all(e.startswith("Error:") and "protected" in e for e in errors), errors
    assert "virtualenv env/" in errors[2]
    assert len(result.refused_writes) == 4
    assert [c.path for c in result.changes] == ["calc.py"]
    assert not list(stage.workspace.rglob("*.pth"))


async def test_no_finish_with_a_broken_file_is_still_validated_and_dropped(vllm, stage, mode, tmp_path):
    broken = ("edit_file", {"path": "calc.py", "old_string": "total = a - b", "new_string": "total = a +"})
    vllm.script(plan(), Reply(tool_calls=[broken]), *GIVE_UP)
    result = await run_fix(vllm, stage, tmp_path)
    assert result.outcome == "failed" and not result.changes
    assert "syntax error" in (result.error or "")
    assert (stage.workspace / "calc.py").read_text() == BUGGY


async def test_no_finish_with_a_good_fix_is_verified_before_it_is_offered(vllm, stage, mode, tmp_path):
    vllm.script(plan(), Reply(tool_calls=[FIX_CALC]), *GIVE_UP)
    result = await run_fix(vllm, stage, tmp_path)
    assert [c.updated for c in result.changes] == [FIXED]
    if mode == "bwrap":
        assert result.outcome == "fixed" and [c.name for c in result.validation.checks][-1] == PYTEST
    else:
        assert result.outcome == "changed_unverified" and result.validation.not_verified == "no sandbox"


# -- the second line: apply_changes ----------------------------------------------------------------


@pytest.mark.parametrize("path", [".git/config", ".git/hooks/pre-commit", "x.pth", "node_modules/a/b.js",
                                  "lib/site-packages/a.py", ".hg/hgrc", "__pycache__/calc.cpython-311.pyc"])
def test_apply_changes_refuses_a_protected_path_and_writes_nothing(tmp_path, path):
    (tmp_path / "calc.py").write_text(BUGGY)
    changes = [
        FileChange(path="calc.py", original=BUGGY, updated=FIXED, diff=""),
        FileChange(path=path, original="", updated="evil", diff="", created=True),
    ]
    with pytest.raises(ProtectedPath, match="nothing was written"):
        apply_changes(tmp_path, changes)
    assert (tmp_path / "calc.py").read_text() == BUGGY
    assert not (tmp_path / path).exists()


async def test_verification_can_be_turned_off_but_then_says_so(vllm, stage, tmp_path):
    vllm.script(plan(), Reply(tool_calls=[FIX_CALC]), FINISH)
    settings = Settings(base_url=vllm.base_url, cache_dir=tmp_path / "cache", max_retries=0, verify=False)
    engine = Engine(settings)
    try:
        result = await engine.fix(command_task(), stage.workspace)
    finally:
        await engine.client.close()
    assert result.outcome == "changed_unverified" and result.validation.not_verified == "verification is off"
    assert fix_title("AssertionError", result) == "Fix AssertionError (✓ parses, not verified: verification is off)"
