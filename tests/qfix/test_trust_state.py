"""qfix's own state is not the model's to write, and a journal never writes outside its workspace
(issue 35, item 1): a dotfiles repository at $HOME contains qfix's state folder; the model plants
a journal there for another workspace, which the next qfix in that workspace would "roll back"
by writing an executable file anywhere it names."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from qwen_lsp.engine import sandbox
from qwen_lsp.journal import Journal, Target
from tests.qfix.helpers import BUGGY, FIXED, QFIX, finish, fix_replies, git, spawn
from tests.vllm_double import Reply

EVIL = b"#!/bin/sh\ntouch \"$HOME/ran\"\n"


def key(workspace: Path) -> str:  # terminal_agent.undo's key of a workspace's journal folder
    return hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:16]


def planted_journal(workspace: Path, target: Path) -> str:
    """A journal as a killed qfix in `workspace` would leave it, but restoring `target` (absent now,
    so "the fix created it") to an executable script."""
    return Journal(label="the fix for `make`", root=str(workspace.resolve()), made_dirs=[], targets=[
        Target(shown="run.sh", path=str(target), old=EVIL, mode=0o755, new_sha256=None,
               temp=str(target.with_name(f".{target.name}.0.qwen-tmp"))),
    ]).model_dump_json()


@pytest.fixture
def other(tmp_path: Path) -> Path:
    """Another of the user's workspaces."""
    root = tmp_path / "other"
    root.mkdir()
    (root / "ok.py").write_text("print('ok')\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-qm", "init")
    return root


@pytest.fixture
def dotfiles(tmp_path: Path, qfix_env) -> tuple[Path, dict[str, str]]:
    """$HOME is a git repository (dotfiles) with a failing script; qfix's state is in its default
    place, ~/.local/state/qwen-lsp, inside that workspace."""
    home = Path(qfix_env["HOME"])
    (home / "script.py").write_text(BUGGY)
    git(home, "init", "-q")
    git(home, "add", ".")
    git(home, "commit", "-qm", "dotfiles")
    env = {k: v for k, v in qfix_env.items() if k != "QFIX_STATE_DIR"}
    return home, env


def qfix(cwd: Path, env: dict[str, str], *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    proc = subprocess.run([QFIX, "--json", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    return proc, json.loads(proc.stdout)


@pytest.mark.parametrize("how", ["[a]pply", "--yes"])
def test_the_model_cannot_plant_a_journal_in_qfix_state_inside_the_workspace(how, dotfiles, other, tmp_path, vllm):
    if how == "--yes" and not sandbox.status().available:
        pytest.skip("needs bubblewrap: --yes writes verified fixes only")
    home, env = dotfiles
    outside = tmp_path / "outside"
    outside.mkdir()
    planted = f".local/state/qwen-lsp/journal/{key(other)}/journal.json"
    replies = fix_replies()
    replies.insert(-1, Reply(tool_calls=[("create_file", {"path": planted,
                                                          "content": planted_journal(other, outside / "run.sh")})]))
    vllm.script(*replies, Reply(content="done"))
    if how == "--yes":
        proc, report = qfix(home, env, "--yes", "--", "python", "script.py")
        assert report["applied"] and report["refused_writes"] == [planted], proc.stderr
    else:
        child = spawn(["--", "python", "script.py"], env, home)
        child.expect_exact(f"refused: the model tried to change {planted}")
        child.expect_exact("Apply the changes to 1 file(s)?")
        child.sendline("a")
        assert finish(child) == 0
    # The fix itself is good and applied; the write into qfix's state was refused, and the model was told why.
    assert (home / "script.py").read_text() == FIXED
    assert any("qfix's state folder" in json.dumps(r["messages"]) for r in vllm.chat_requests())
    assert not (home / planted).exists()
    # The next qfix in the other workspace finds nothing to roll back: nothing outside appears.
    proc, report = qfix(other, env, "--", "python", "ok.py")
    assert report["outcome"] == "passed" and "rolled back" not in proc.stderr
    assert not (outside / "run.sh").exists() and not (home / "ran").exists()


@pytest.mark.parametrize("where", ["outside", "another workspace"])
def test_a_journal_naming_a_target_outside_its_workspace_is_refused(repo, other, qfix_env, tmp_path, where):
    """However a journal got there, roll back writes only inside the journal's own workspace."""
    target = tmp_path / "outside" / "run.sh" if where == "outside" else other / "run.sh"
    target.parent.mkdir(exist_ok=True)
    folder = Path(qfix_env["QFIX_STATE_DIR"]) / "journal" / key(repo)
    folder.mkdir(parents=True)
    journal = planted_journal(repo if where == "outside" else other, target)
    (folder / "journal.json").write_text(journal)
    proc, report = qfix(repo, qfix_env, "--", "python", "-c", "pass")
    assert report["outcome"] == "passed"
    assert not target.exists()
    assert "outside its workspace" in proc.stderr and "nothing was rolled back" in proc.stderr
    assert str(target) in proc.stderr or where == "another workspace"
    # Kept aside for the user to look at, never acted on again.
    assert not (folder / "journal.json").exists()
    kept = [p for p in folder.iterdir() if p.name.startswith("unreadable-")]
    assert [p.read_text() for p in kept] == [journal]
    proc, _ = qfix(repo, qfix_env, "--", "python", "-c", "pass")
    assert "journal" not in proc.stderr and not target.exists()


def test_a_journal_of_its_own_workspace_still_rolls_back(repo, qfix_env):
    """The check refuses nothing qwen-lsp itself wrote: an interrupted fix of script.py is put back."""
    folder = Path(qfix_env["QFIX_STATE_DIR"]) / "journal" / key(repo)
    folder.mkdir(parents=True)
    (repo / "script.py").write_text(FIXED)
    target = repo.resolve() / "script.py"
    journal = Journal(label="the fix for `python script.py`", root=str(repo.resolve()), made_dirs=[], targets=[
        Target(shown="script.py", path=str(target), old=BUGGY.encode(), mode=0o644,
               new_sha256=hashlib.sha256(FIXED.encode()).hexdigest(), temp=str(repo.resolve() / ".script.py.1.qwen-tmp")),
    ])
    (folder / "journal.json").write_text(journal.model_dump_json())
    proc, report = qfix(repo, qfix_env, "--", "python", "-c", "pass")
    assert "script.py put back as before" in proc.stderr
    assert (repo / "script.py").read_text() == BUGGY
    assert stat.S_IMODE(os.stat(repo / "script.py").st_mode) == 0o644
