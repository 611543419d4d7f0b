"""A crash never leaves a mix: a 5-file fix (and its undo) is killed with SIGKILL before each
disk-changing system call of the write in turn -- every open for writing, fsync, chmod,
mkdir, rename and unlink, so every rename boundary and every point between them -- and
after each, the next command leaves the workspace exactly as before the fix or exactly as
the fix has it, with no temporary file, no journal and an undo history that matches.

Each run is a forked child of the test process (the engine is already imported: a run takes
milliseconds), killed by a signal it sends itself; real `qfix` processes are the next command
in a few of them."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from qwen_lsp.journal import JournalError
from qwen_lsp.types import FileChange
from terminal_agent import undo
from tests.qfix.helpers import QFIX

OLD = {
    "a.py": b"a = 1\n",
    "b.py": b"b = 1\r\n",  # CRLF: byte for byte
    "c.py": b"c = 1\n",
    "d.py": b"d = 1\n",
}
NEW = {
    "a.py": b"a = 2\n",
    "b.py": b"b = 2\r\n",
    "c.py": b"c = 2\n",
    "d.py": b"d = 2\n",
    "pkg/sub/e.py": b"e = 2\n",  # created, with its two folders
}
CHANGES = [
    *(FileChange(path=p, original=OLD[p].decode(), updated=NEW[p].decode(), diff="") for p in OLD),
    FileChange(path="pkg/sub/e.py", original="", updated="e = 2\n", diff="", created=True),
]
WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT


def tree(root: Path) -> dict[str, bytes]:
    """Every file and folder under `root`, hidden and temporary ones included."""
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else b"<dir>")
            for p in sorted(root.rglob("*"))}


def as_tree(files: dict[str, bytes]) -> dict[str, bytes]:
    folders = {"pkg": b"<dir>", "pkg/sub": b"<dir>"} if "pkg/sub/e.py" in files else {}
    return dict(sorted({**files, **folders}.items()))


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("QFIX_STATE_DIR", str(tmp_path / "state"))
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    for name, data in OLD.items():
        (root / name).write_bytes(data)
    os.chmod(root / "a.py", 0o755)
    return root


def in_child(action: Callable[[], object], crash_at: int | None, counted: Path | None = None) -> int:
    """Run `action` in a forked process that SIGKILLs itself just before its `crash_at`-th
    disk-changing call (counted from 1); its wait status. `counted`: where it writes how many
    such calls it made when it was not killed."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            calls = _inject(crash_at)
            action()
            if counted is not None:
                counted.write_text(str(calls()))
        except BaseException:  # noqa: BLE001 - reported through the exit code (and shown)
            import traceback

            traceback.print_exc()
            code = 3
        os._exit(code)
    return os.waitpid(pid, 0)[1]


def _inject(crash_at: int | None) -> Callable[[], int]:
    seen = 0

    def counting(real: Callable, *, only_writing: bool = False) -> Callable:
        def call(*args, **kwargs):
            nonlocal seen
            if not only_writing or args[1] & WRITING:
                seen += 1
                if seen == crash_at:
                    os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)
        return call

    for name in ("replace", "rename", "unlink", "rmdir", "mkdir", "fsync", "chmod"):
        setattr(os, name, counting(getattr(os, name)))
    os.open = counting(os.open, only_writing=True)
    return lambda: seen


def steps(action: Callable[[], object], tmp_path: Path) -> int:
    """How many disk-changing calls `action` makes when nothing stops it."""
    counted = tmp_path / "count"
    assert in_child(action, None, counted) == 0
    return int(counted.read_text())


def killed(status: int) -> bool:
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def reset(ws: Path, state: Path, files: dict[str, bytes]) -> None:
    for path in sorted(ws.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    for name, data in files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_bytes(data)
    if (ws / "a.py").exists():
        os.chmod(ws / "a.py", 0o755)
    shutil.rmtree(state, ignore_errors=True)


def entries(state: Path) -> list[Path]:
    return sorted(state.glob("undo/*/*"))


def assert_all_old_or_all_new(ws: Path, state: Path) -> str:
    """The workspace is exactly one of the two, its undo history agrees, nothing is left over."""
    now = tree(ws)
    assert now in (as_tree(OLD), as_tree(NEW)), f"a mix: {now}"
    assert os.stat(ws / "a.py").st_mode & 0o777 == 0o755
    assert not list(state.glob("journal/*/journal.json*")), "the journal stayed"
    history = entries(state)
    if now == as_tree(OLD):
        assert history == []
        return "old"
    assert len(history) == 1 and history[0].suffix == ".json", history  # its entry, whole
    return "new"


def recover_in_child(ws: Path) -> None:
    assert in_child(lambda: undo.recover(ws), None) == 0


def qfix(args: list[str], ws: Path, state: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin", "HOME": str(state.parent),
           "QFIX_STATE_DIR": str(state), "QWEN_LSP_BASE_URL": "http://127.0.0.1:9/v1", "QWEN_LSP_MAX_RETRIES": "0",
           "QWEN_LSP_CACHE_DIR": str(state.parent / "cache"), "LANG": "C.UTF-8", "TERM": "dumb",
           **{k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "QFIX_WARM")}}
    return subprocess.run([QFIX, *args], cwd=ws, env=env, capture_output=True, text=True, timeout=120)


def test_a_fix_killed_at_every_step_is_rolled_back_or_complete(ws, tmp_path):
    state = tmp_path / "state"
    fix = lambda: undo.apply_with_undo(ws, "make", CHANGES)  # noqa: E731 - what `qfix` runs to apply
    total = steps(fix, tmp_path)
    assert total >= 30  # 5 targets + the undo entry: staged, renamed; the journal; the folders
    outcomes = []
    for crash_at in range(1, total + 1):
        reset(ws, state, OLD)
        assert killed(in_child(fix, crash_at)), crash_at
        if crash_at == total // 2:  # the next command is a real `qfix` (its model server is down)
            run = qfix(["--", "false"], ws, state)
            assert "the fix for `make` was interrupted before it completed and is rolled back" in run.stderr + run.stdout
        elif crash_at == total - 3:
            run = qfix(["--undo"], ws, state)  # rolls back, or undoes the fix that had completed
            assert run.returncode == 0, run.stdout + run.stderr
            assert tree(ws) == as_tree(OLD)
        else:
            recover_in_child(ws)
        outcomes.append(assert_all_old_or_all_new(ws, state))
        if outcomes[-1] == "new":  # and the completed fix undoes cleanly
            assert in_child(lambda: undo.undo_last(ws), None) == 0
            assert tree(ws) == as_tree(OLD) and entries(state) == []
    assert "old" in outcomes and outcomes[-1] == "new"  # the kill before the journal's removal rolls back


def test_an_undo_killed_at_every_step_is_rolled_back_or_complete(ws, tmp_path):
    state = tmp_path / "state"
    reset(ws, state, OLD)
    undo.apply_with_undo(ws, "make", CHANGES)
    fixed_state = {p: p.read_bytes() for p in state.rglob("*") if p.is_file()}
    back = lambda: undo.undo_last(ws)  # noqa: E731 - what `qfix --undo` runs
    total = steps(back, tmp_path)
    assert total >= 20
    outcomes = []
    for crash_at in range(1, total + 1):
        reset(ws, state, NEW)
        for path, data in fixed_state.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        assert killed(in_child(back, crash_at)), crash_at
        recover_in_child(ws)
        outcomes.append(assert_all_old_or_all_new(ws, state))
    assert outcomes[0] == "new" and outcomes[-1] == "old"


def test_a_roll_back_killed_at_every_step_still_ends_all_old(ws, tmp_path):
    state = tmp_path / "state"
    fix = lambda: undo.apply_with_undo(ws, "make", CHANGES)  # noqa: E731
    total = steps(fix, tmp_path)
    reset(ws, state, OLD)
    crash_mid_renames = total - 8  # some files replaced, some not
    assert killed(in_child(fix, crash_mid_renames))
    assert tree(ws) not in (as_tree(OLD), as_tree(NEW))  # the mix the journal is there for
    mixed = {p: p.read_bytes() for p in [*ws.rglob("*"), *state.rglob("*")] if p.is_file()}
    recovery = steps(lambda: undo.recover(ws), tmp_path)
    for crash_at in range(1, recovery + 1):
        reset(ws, state, {})
        for path, data in mixed.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        os.chmod(ws / "a.py", 0o755)
        assert killed(in_child(lambda: undo.recover(ws), crash_at))
        recover_in_child(ws)
        assert assert_all_old_or_all_new(ws, state) == "old"


def test_a_file_the_user_changed_after_the_crash_is_left_alone_and_said(ws, tmp_path):
    state = tmp_path / "state"
    fix = lambda: undo.apply_with_undo(ws, "make", CHANGES)  # noqa: E731
    total = steps(fix, tmp_path)
    reset(ws, state, OLD)
    assert killed(in_child(fix, total - 2))  # every file renamed, the journal not yet deleted
    (ws / "c.py").write_bytes(b"c = 'mine'\n")  # the user edits before running qfix again
    rollback = undo.recover(ws)
    assert rollback is not None and rollback.changed == ["c.py"]
    assert "c.py changed since and were left as they are" in rollback.message()
    assert (ws / "c.py").read_bytes() == b"c = 'mine'\n"  # never clobbered
    assert rollback.saved is not None and (rollback.saved / "c.py").read_bytes() == OLD["c.py"]
    assert tree(ws) == as_tree({**OLD, "c.py": b"c = 'mine'\n"})  # the rest rolled back, no temporary file
    assert undo.recover(ws) is None  # said once: the journal is gone


def test_an_unreadable_journal_is_set_aside_and_touches_nothing(ws, tmp_path):
    folder = undo.journal_dir(ws)
    folder.mkdir(parents=True)
    (folder / "journal.json").write_text('{"version": 1, "label": "x", "root": "/", "targets": [{"path": ')
    with pytest.raises(JournalError, match=r"cannot be read \(not a journal qwen-lsp wrote\); nothing was rolled back"):
        undo.recover(ws)
    assert tree(ws) == as_tree(OLD) and len(list(folder.glob("unreadable-*"))) == 1
    assert undo.recover(ws) is None  # said once; qfix goes on
    undo.apply_with_undo(ws, "make", CHANGES)
    assert tree(ws) == as_tree(NEW)


def git(args: list[str], cwd: Path) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


def test_temporary_files_a_kill_left_are_swept_by_the_next_qfix_anywhere(ws, tmp_path):
    """SIGKILL between staging and renaming leaves `.NAME.*.qwen-tmp` files in that workspace; a
    qfix that exits cleanly in another workspace removes them (in `git status` terms nothing is
    left), and leaves the roll back itself, and its message, to the next qfix there."""
    state = tmp_path / "state"
    fix = lambda: undo.apply_with_undo(ws, "make", CHANGES)  # noqa: E731
    total = steps(fix, tmp_path)
    for crash_at in range(total, 0, -1):  # the latest kill with every temporary file still there
        reset(ws, state, OLD)
        assert killed(in_child(fix, crash_at))
        temps = sorted(p.name for p in ws.rglob("*.qwen-tmp"))
        if len(temps) == len(CHANGES) and all((ws / n).read_bytes() == d for n, d in OLD.items()):
            break
    else:
        pytest.fail("no kill left every temporary file")
    git(["init", "-q"], ws)
    git(["add", *OLD], ws)
    git(["commit", "-qm", "base"], ws)
    leftovers = [line for line in git(["status", "--porcelain", "-uall"], ws).splitlines() if "qwen-tmp" in line]
    assert len(leftovers) == len(CHANGES)  # what the user saw before the fix

    other = (tmp_path / "other").resolve()
    other.mkdir()
    git(["init", "-q"], other)
    run = qfix(["--", "true"], other, state)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "qwen-tmp" not in git(["status", "--porcelain", "-uall", "--ignored"], ws)
    assert not list(ws.rglob("*.qwen-tmp"))
    assert list(state.glob("journal/*/journal.json"))  # its roll back waits for a qfix there

    run = qfix(["--", "false"], ws, state)
    assert "the fix for `make` was interrupted before it completed and is rolled back" in run.stdout + run.stderr
    assert git(["status", "--porcelain", "-uall"], ws) == ""
    assert not list(state.glob("journal/*/journal.json"))


def test_a_journal_planted_under_another_workspace_key_sweeps_nothing(ws, tmp_path):
    """The sweep trusts a journal only in the folder its own root names, and only its own
    temporary files beside its targets: a planted one naming a bystander file deletes nothing."""
    from qwen_lsp import journal as journals

    state = tmp_path / "state"
    victim = ws / ".a.py.0.qwen-tmp"
    victim.write_bytes(b"someone's\n")
    record = journals.Journal(label="x", root=str(ws), made_dirs=[], targets=[journals.Target(
        shown="a.py", path=str(ws / "a.py"), old=OLD["a.py"], mode=0o755, new_sha256=None, temp=str(victim))])
    folder = state / "journal" / ("0" * 16)  # not the key of `ws`
    folder.mkdir(parents=True)
    (folder / "journal.json").write_text(record.model_dump_json())
    assert undo.sweep_stray_temps() == []
    assert victim.read_bytes() == b"someone's\n"
    outside = tmp_path / "outside.qwen-tmp"
    outside.write_bytes(b"x")
    record.targets[0].temp = str(outside)  # not beside its target
    real = undo.journal_dir(ws)
    real.mkdir(parents=True)
    (real / "journal.json").write_text(record.model_dump_json())
    assert undo.sweep_stray_temps() == []
    assert outside.exists() and victim.exists()
