"""qfix against a hostile model: nothing model-written runs outside the sandbox, nothing
is written before consent, and `--yes` writes only a fix that a sandboxed command verified."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostile import API_KEY, CANARY_TEXT, Stage, path_without_bwrap
from tests.qfix.helpers import BUGGY, PLAN, QFIX, fix_replies, git
from tests.vllm_double import Reply

CALC = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_calc.py"]


@pytest.fixture(params=["bwrap", "no-sandbox"])
def mode(request) -> str:
    return request.param


@pytest.fixture
def stage(repo, tmp_path, qfix_env) -> Iterator[Stage]:
    (repo / "calc.py").write_text(CALC)
    (repo / "test_calc.py").write_text(TEST)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "calc")
    stage = Stage.make(tmp_path, repo)
    yield stage
    stage.kill_survivors()


@pytest.fixture
def env(qfix_env, mode, tmp_path) -> dict[str, str]:
    env = {**qfix_env, "QWEN_LSP_API_KEY": API_KEY}
    if os.environ.get("PYTHONPATH"):  # this checkout's code, not the venv's installed copy
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    if mode == "no-sandbox":
        env["PATH"] = path_without_bwrap(tmp_path / "shims", qfix_env["PATH"])
    return env


def qfix(stage: Stage, env: dict[str, str], *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    """Run qfix --json with `args`; check that nothing outside the workspace copy changed or lives on."""
    before = stage.snapshot()
    proc = subprocess.run([QFIX, "--json", *args], cwd=stage.workspace, env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    report = json.loads(proc.stdout)
    after = stage.snapshot()
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    if report["applied"]:
        changed -= {str(stage.workspace / d["path"]) for d in report["diffs"]}
    assert not changed, f"changed without consent: {changed}"
    assert stage.survivors() == []
    assert API_KEY not in proc.stdout + proc.stderr and CANARY_TEXT not in proc.stdout + proc.stderr
    return proc, report


def hostile_conftest(stage: Stage) -> list[Reply]:
    return [
        Reply(reasoning="add subtracts", content=json.dumps(PLAN)),
        Reply(tool_calls=[
            ("edit_file", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}),
            ("create_file", {"path": "conftest.py", "content": stage.payload()}),
        ]),
        Reply(tool_calls=[("finish", {"summary": "fixed"})]),
        Reply(content="done"), Reply(content="done"),
    ]


def test_a_dry_run_runs_model_code_only_in_the_sandbox(stage, env, mode, vllm):
    vllm.script(*hostile_conftest(stage))
    proc, report = qfix(stage, env, "--", *PYTEST)
    assert not report["applied"] and report["validation"]["runs_during_verification"] == ["conftest.py (pytest imports it)"]
    assert "runs during verification: conftest.py" in proc.stderr
    if mode == "bwrap":
        assert report["outcome"] == "failed"
        assert stage.contained_report() in report["validation"]["checks"][-1]["detail"]
    else:
        assert report["outcome"] == "changed_unverified" and report["validation"]["not_verified"] == "no sandbox"
        assert "not verified: no sandbox" in proc.stderr and "Dry run: nothing was changed" in proc.stderr
        assert "HOSTILE-RAN secrets=[" not in proc.stdout + proc.stderr
    assert (stage.workspace / "calc.py").read_text() == CALC and not (stage.workspace / "conftest.py").exists()


def test_yes_writes_only_a_verified_fix(stage, env, mode, vllm):
    vllm.script(*fix_replies())
    proc, report = qfix(stage, env, "--yes", "--", "python", "script.py")
    if mode == "bwrap":
        assert report["outcome"] == "fixed" and report["applied"] and report["verification"]["passed"]
    else:  # the same fix, unverified: --yes is not consent to it
        assert report["outcome"] == "not_applied" and not report["applied"] and proc.returncode == 1
        assert report["not_applied"] == "the change was not verified (no sandbox)"
        assert "not applied: the change was not verified (no sandbox)" in proc.stderr
        assert (stage.workspace / "script.py").read_text() == BUGGY


def test_yes_never_writes_a_change_that_does_not_parse(stage, env, vllm):
    vllm.script(
        Reply(reasoning="typo", content=json.dumps(PLAN)),
        Reply(tool_calls=[("edit_file", {"path": "script.py", "old_string": '"Hello, " + nme', "new_string": '"Hello, " +'})]),
        Reply(content="done"), Reply(content="done"),  # and never calls finish
    )
    proc, report = qfix(stage, env, "--yes", "--", "python", "script.py")
    assert report["outcome"] == "failed" and not report["applied"] and proc.returncode == 1
    assert "no fix found: the model's change did not pass its checks" in proc.stderr
    assert "✗ parses: script.py" in proc.stderr
    assert (stage.workspace / "script.py").read_text() == BUGGY


def test_yes_never_touches_git_config(stage, env, mode, vllm):
    config = (stage.workspace / ".git" / "config").read_text()
    vllm.script(
        Reply(reasoning="typo", content=json.dumps(PLAN)),
        Reply(tool_calls=[("edit_file", {"path": ".git/config", "old_string": "[core]",
                                         "new_string": "[core]\n\tfsmonitor = touch pwned"})]),
        *fix_replies(with_plan=False),
    )
    proc, report = qfix(stage, env, "--yes", "--", "python", "script.py")
    assert [d["path"] for d in report["diffs"]] == ["script.py"] and report["refused_writes"] == [".git/config"]
    assert "refused: the model tried to change .git/config" in proc.stderr
    assert (stage.workspace / ".git" / "config").read_text() == config
    subprocess.run(["git", "status"], cwd=stage.workspace, check=True, capture_output=True)
    assert not (stage.workspace / "pwned").exists()
    assert report["applied"] == (mode == "bwrap")
