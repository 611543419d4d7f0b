"""Writing a fix is all or nothing: every change is checked first, each file is staged
next to its target and renamed into place, and any failure puts back what was replaced
(and removes what was created) before the error is reported."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from qwen_lsp import apply
from qwen_lsp.apply import ApplyError, UnsafeChange, apply_changes
from qwen_lsp.types import FileChange
from tests.qfix.helpers import BUGGY, FIXED, PLAN, QFIX
from tests.vllm_double import Reply


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` (temporary files included) with its bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def edit(path: str, before: str, after: str) -> FileChange:
    return FileChange(path=path, original=before, updated=after, diff="")


def new(path: str, text: str) -> FileChange:
    return FileChange(path=path, original="", updated=text, diff="", created=True)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("a = 1\n")
    (root / "b.py").write_text("b = 1\r\n")  # CRLF: restored byte for byte
    os.chmod(root / "a.py", 0o755)
    return root


def test_a_file_and_a_file_inside_it_are_refused_together_and_nothing_is_written(ws):
    before = tree(ws)
    changes = [edit("a.py", "a = 1\n", "a = 2\n"), new("zz", "x\n"), new("zz/y", "y\n")]
    with pytest.raises(UnsafeChange, match="another change makes zz a file"):
        apply_changes(ws, changes)
    assert tree(ws) == before


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (new("b.py/inner.py", "x"), "b.py is a file, not a folder"),
        (new("sub\0x.py", "x"), "NUL"),
        (new("x" * 300 + ".py", "x"), "longer than 255 bytes"),
        (new(".", "x"), "needs a name"),
        (new("../outside.py", "x"), "not a file inside the workspace"),
        (new("s.py", "bad \ud800"), "not valid Unicode"),
    ],
)
def test_a_change_that_cannot_be_written_is_refused_before_anything_is_written(ws, change, why):
    before = tree(ws)
    with pytest.raises(UnsafeChange, match=why):
        apply_changes(ws, [edit("a.py", "a = 1\n", "a = 2\n"), change])
    assert tree(ws) == before and not (ws.parent / "outside.py").exists()


def test_a_failure_at_the_second_rename_puts_everything_back(ws, monkeypatch):
    before = tree(ws)
    _fail_replacing(monkeypatch, lambda name, before: name == "b.py")
    changes = [edit("a.py", "a = 1\n", "a = 2\n"), edit("b.py", "b = 1\r\n", "b = 2\r\n"), new("new/dir/c.py", "c\n")]
    with pytest.raises(ApplyError, match="nothing was changed"):
        apply_changes(ws, changes)
    assert tree(ws) == before  # a.py put back, new/dir/c.py removed, no temporary file left behind
    assert not (ws / "new").exists()  # the folders it created are gone too
    assert os.stat(ws / "a.py").st_mode & 0o777 == 0o755


def test_the_undo_record_is_written_after_the_checks_and_before_the_first_rename(ws):
    seen: list[dict[str, bytes]] = []
    apply_changes(ws, [edit("a.py", "a = 1\n", "a = 2\n")], before_rename=lambda: seen.append(tree(ws)))
    (staged,) = seen
    assert staged["a.py"] == b"a = 1\n"  # nothing replaced yet when the record is taken
    assert (ws / "a.py").read_text() == "a = 2\n" and os.stat(ws / "a.py").st_mode & 0o777 == 0o755

    with pytest.raises(UnsafeChange):  # refused at the checks: no record is ever written
        apply_changes(ws, [new("a.py/x", "x")], before_rename=lambda: pytest.fail("record written"))


def test_qfix_creating_zz_then_zz_y_writes_one_file_keeps_its_undo_and_reports(repo, qfix_env, vllm):
    vllm.script(
        Reply(reasoning="r", content=json.dumps(PLAN)),
        Reply(tool_calls=[("create_file", {"path": "zz", "content": "first\n"})]),
        Reply(tool_calls=[("create_file", {"path": "zz/y", "content": "second\n"})]),
        Reply(tool_calls=[("edit_file", {"path": "script.py", "old_string": "+ nme", "new_string": "+ name"})]),
        Reply(tool_calls=[("finish", {"summary": "created"})]),
    )
    run = subprocess.run([QFIX, "--yes", "--json", "--", "python", "script.py"], cwd=repo, env=qfix_env,
                         capture_output=True, text=True, timeout=120)
    report = json.loads(run.stdout)
    assert run.returncode == 0, run.stderr
    refused = vllm.chat_requests()[3]["messages"][-1]["content"]
    assert "zz is a file, so zz/y cannot be created" in refused  # the model was told, nothing crashed
    assert report["applied"] and [d["path"] for d in report["diffs"]] == ["script.py", "zz"]
    assert (repo / "zz").read_text() == "first\n" and (repo / "script.py").read_text() == FIXED
    undone = subprocess.run([QFIX, "--undo"], cwd=repo, env=qfix_env, capture_output=True, text=True, timeout=60)
    assert undone.returncode == 0 and not (repo / "zz").exists() and (repo / "script.py").read_text() == BUGGY


def test_a_file_that_is_not_utf8_is_never_rewritten(ws):
    (ws / "l1.py").write_bytes("x = 'café'\n".encode("latin-1"))
    before = tree(ws)
    shown = (ws / "l1.py").read_bytes().decode("utf-8", "replace")  # what a model would have seen
    with pytest.raises(UnsafeChange, match="l1.py is not UTF-8 text"):
        apply_changes(ws, [edit("l1.py", shown, shown.replace("x", "y"))])
    assert tree(ws) == before



_REAL_REPLACE = os.replace


def _fail_replacing(monkeypatch, fails) -> None:
    """os.replace fails (a full disk) when `fails(name, times_seen_before)` says so."""
    real_replace = os.replace
    seen: dict[str, int] = {}

    def replace(src, dst):
        name = Path(dst).name
        seen[name] = seen.get(name, 0) + 1
        if fails(name, seen[name] - 1):
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(apply.os, "replace", replace)


def test_qfix_keeps_no_undo_entry_for_a_rolled_back_fix_and_its_journal_when_rollback_fails(ws, monkeypatch, tmp_path):
    from terminal_agent import agent, undo

    monkeypatch.setenv("QFIX_STATE_DIR", str(tmp_path / "state"))
    failure = agent.Failure(command="python a.py", exit_code=1, output="", cwd=ws, workspace=ws)
    changes = [edit("a.py", "a = 1\n", "a = 2\n"), edit("b.py", "b = 1\r\n", "b = 2\r\n")]

    def entries() -> list[Path]:
        return list((tmp_path / "state").glob("undo/*/*.json"))

    _fail_replacing(monkeypatch, lambda name, before: name == "b.py")  # a.py replaced, then put back
    with pytest.raises(ApplyError, match="nothing was changed"):
        agent.apply_with_undo(failure, changes)
    assert entries() == [] and (ws / "a.py").read_text() == "a = 1\n"

    # ...and now a.py cannot be put back either (its second replace fails too).
    _fail_replacing(monkeypatch, lambda name, before: name == "b.py" or (name == "a.py" and before > 0))
    with pytest.raises(apply.RollbackFailed, match="could not be put back: a.py"):
        agent.apply_with_undo(failure, changes)
    assert (ws / "a.py").read_text() == "a = 2\n" and entries() == []
    (journal,) = (tmp_path / "state").glob("journal/*/journal.json")  # kept: the next qfix puts a.py back
    monkeypatch.setattr(apply.os, "replace", _REAL_REPLACE)  # the disk has room again
    rollback = undo.recover(ws)
    assert rollback is not None and rollback.restored == ["a.py"] and not rollback.failed
    assert (ws / "a.py").read_text() == "a = 1\n" and not journal.exists()
    assert tree(ws) == {"a.py": b"a = 1\n", "b.py": b"b = 1\r\n"}  # and no temporary file
