"""A fix that edits a file inside a git submodule (issue 35, item 11): another repository, so it is
marked like a file git does not track, names the submodule, and needs an explicit [a]pply."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from qwen_lsp.engine import sandbox
from tests.qfix.helpers import BUGGY, PLAN, QFIX, finish, git, spawn
from tests.vllm_double import Reply

NOTES = "version 1\n"


@pytest.fixture
def with_submodule(repo: Path, tmp_path: Path) -> Path:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "notes.txt").write_text(NOTES)
    git(lib, "init", "-q")
    git(lib, "add", ".")
    git(lib, "commit", "-qm", "lib")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "vendor/lib")
    git(repo, "commit", "-qm", "submodule")
    return repo


def replies() -> list[Reply]:
    return [
        Reply(reasoning="typo", content=json.dumps(PLAN)),
        Reply(tool_calls=[
            ("edit_file", {"path": "script.py", "old_string": '"Hello, " + nme', "new_string": '"Hello, " + name'}),
            ("edit_file", {"path": "vendor/lib/notes.txt", "old_string": "version 1", "new_string": "version 2"}),
        ]),
        Reply(tool_calls=[("finish", {"summary": "fixed"})]),
        Reply(content="done"),
    ]


def test_the_report_names_the_submodule(with_submodule, qfix_env, vllm):
    vllm.script(*replies())
    run = subprocess.run([QFIX, "--json", "--", "python", "script.py"], cwd=with_submodule, env=qfix_env,
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    report = json.loads(run.stdout)
    assert report["in_submodule"] == ["vendor/lib/notes.txt (submodule vendor/lib)"], run.stderr
    assert "⚠ another repository: vendor/lib/notes.txt (submodule vendor/lib)" in run.stderr


def test_applying_it_takes_an_explicit_apply(with_submodule, qfix_env, vllm):
    vllm.script(*replies())
    child = spawn(["--", "python", "script.py"], qfix_env, with_submodule)
    child.expect_exact("⚠ another repository: vendor/lib/notes.txt (submodule vendor/lib)")
    child.expect_exact("including the ones marked ⚠ above?")
    child.sendline("s")
    assert finish(child) == 1
    assert (with_submodule / "vendor/lib/notes.txt").read_text() == NOTES


@pytest.mark.skipif(not sandbox.status().available, reason="needs bubblewrap: --yes writes verified fixes only")
def test_yes_never_writes_it(with_submodule, qfix_env, vllm):
    vllm.script(*replies())
    run = subprocess.run([QFIX, "--yes", "--json", "--", "python", "script.py"], cwd=with_submodule, env=qfix_env,
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    report = json.loads(run.stdout)
    assert not report["applied"] and "another repository" in report["not_applied"]
    assert (with_submodule / "script.py").read_text() == BUGGY
