"""A rollback journal that makes writing a fix crash-consistent (SQLite's rollback journal, small).

    lock      one writer per journal folder at a time (flock: a killed process lets go at once)
    begin     the journal -- each target's bytes before, the hash of its bytes after, the
              temporary name it is staged under, the folders the write creates -- is written,
              fsynced and renamed into place before any temporary file or folder exists
    (apply)   stage, rename: apply.py
    commit    the touched folders fsynced, then the journal deleted: the commit point
    roll back a journal that is still there means the writer died (or failed) before committing:
              each target the fix already replaced gets its old bytes back, every temporary file
              and created folder goes, then the journal. So the files are all as before or all
              as the fix has them, never a mix, and no temporary file stays behind.

A target that is neither as before nor as the fix has it was changed by someone since the
write: it is never overwritten; it is named in the result and its old bytes are saved next
to the journal. The journal folder is the user's own state (never inside the workspace):
a repository cannot plant a journal that "restores" its own text. And should a journal
be planted all the same (qfix's state inside a dotfiles repository at $HOME, before that
folder was protected), roll back touches only the journal's own workspace and the side
folders its caller names (the undo history): a journal naming any other path is refused
whole, with a message, and kept aside unread.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from qwen_lsp.files import inside

JOURNAL = "journal.json"
TEMP_SUFFIX = ".qwen-tmp"


class JournalError(RuntimeError):
    """A journal left behind could not be read; it was moved aside, nothing was touched."""


class Target(BaseModel):
    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")  # bytes exactly, in JSON

    shown: str  # for messages: workspace-relative, or absolute for a file outside the workspace
    path: str  # absolute
    old: bytes | None  # None: absent before
    mode: int | None  # permission bits before (or for a new file)
    new_sha256: str | None  # None: the write removes it
    temp: str  # absolute, beside `path`: the new bytes are staged here, the old ones when put back


class Journal(BaseModel):
    version: Literal[1] = 1
    label: str  # "the fix for `make`": what was interrupted, in the user's words
    root: str
    targets: list[Target]
    made_dirs: list[str]  # created by the write, outermost first
    dropped_dirs: list[str] = []  # removed by the write once empty, innermost first


@dataclass
class Rollback:
    """What rolling back did."""

    label: str
    restored: list[str] = field(default_factory=list)  # had the new bytes, have the old ones again
    changed: list[str] = field(default_factory=list)  # neither old nor new: someone wrote it, left alone
    failed: list[str] = field(default_factory=list)  # could not be put back (the journal stays)
    saved: Path | None = None  # the old bytes of `changed`

    def message(self) -> str:
        text = f"{self.label} was interrupted before it completed and is rolled back"
        if self.restored:
            text += f": {', '.join(self.restored)} put back as before"
        if self.changed:
            kept = f"their text before the fix is in {self.saved}" if self.saved else "their text before could not be saved"
            text += f"; {', '.join(self.changed)} changed since and were left as they are ({kept})"
        if self.failed:
            text += f"; {', '.join(self.failed)} could not be put back yet (the next run tries again)"
        return text


def new_sha256(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold the folder's lock: one writer at a time, and no roll back of a live writer."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def begin(folder: Path, journal: Journal) -> None:
    """The journal on disk, whole, before anything else is written."""
    partial = folder / (JOURNAL + ".partial")
    write_file(partial, journal.model_dump_json().encode(), 0o600)
    os.replace(partial, folder / JOURNAL)
    sync_dir(folder)


def commit(folder: Path, touched: Iterable[Path]) -> None:
    """Every rename durable first, then the journal gone: from here on the write stands."""
    for parent in dict.fromkeys(touched):
        sync_dir(parent)
    discard(folder)


def discard(folder: Path) -> None:
    (folder / JOURNAL).unlink(missing_ok=True)
    sync_dir(folder)


def recover(folder: Path, root: Path, side_dirs: Sequence[Path] = ()) -> Rollback | None:
    """Roll back the write a dead process left in `folder`; None when there is none. `root`: the
    workspace this journal folder belongs to; `side_dirs`: the only folders outside it the
    journal may name (the undo history its writes go with)."""
    with locked(folder):
        return recover_locked(folder, root, side_dirs)


def recover_locked(folder: Path, root: Path, side_dirs: Sequence[Path] = ()) -> Rollback | None:
    (folder / (JOURNAL + ".partial")).unlink(missing_ok=True)  # died writing the journal: nothing else was
    path = folder / JOURNAL
    try:
        journal = Journal.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValidationError, ValueError) as exc:
        aside = _aside(path)
        why = exc.strerror if isinstance(exc, OSError) else "not a journal qwen-lsp wrote"
        raise JournalError(f"an interrupted write's journal cannot be read ({why}); nothing was rolled back; "
                           f"it is kept as {aside}") from exc
    stray = outside_paths(journal, root, side_dirs)
    if stray:
        aside = _aside(path)
        raise JournalError(f"an interrupted write's journal names {', '.join(stray[:3])}, outside its workspace "
                           f"{os.path.realpath(root)}; it was not written by qwen-lsp for this workspace, so nothing "
                           f"was rolled back; it is kept as {aside}")
    result = roll_back(journal, folder)
    if not result.failed:
        discard(folder)
    return result


def sweep_temps(folder: Path, root: Path, side_dirs: Sequence[Path] = ()) -> list[str]:
    """Remove the temporary files a dead writer's journal in `folder` names, leaving the journal
    (and so its roll back) for the next qfix in `root`: a temporary file is never needed to roll
    back. Only a journal of `root` that names nothing outside it, and only while no live writer
    holds the folder's lock (its temporary files are about to be renamed into place); anything
    else is left for `recover` there, which says what it finds. The names removed."""
    path = folder / JOURNAL
    if not path.is_file():
        return []
    fd = os.open(folder / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return []  # a live writer
        try:
            journal = Journal.model_validate_json(path.read_bytes())
        except (OSError, ValidationError, ValueError):
            return []
        if outside_paths(journal, root, side_dirs):
            return []
        removed = []
        for target in journal.targets:
            if os.path.lexists(target.temp) and _remove_temp(target):
                removed.append(target.temp)
        return removed
    finally:
        os.close(fd)


def _aside(path: Path) -> Path:
    aside = path.with_name(f"unreadable-{os.getpid()}-{JOURNAL}")
    os.replace(path, aside)
    return aside


def outside_paths(journal: Journal, root: Path, side_dirs: Sequence[Path] = ()) -> list[str]:
    """Every path `journal` would write that is not in `root` (symlinks resolved) or directly in one
    of `side_dirs`; its root too when that is not `root`. Empty for every journal qwen-lsp wrote."""
    real_root = os.path.realpath(root)
    stray = [] if os.path.realpath(journal.root) == real_root else [journal.root]
    sides = {os.path.realpath(d) for d in side_dirs}

    def ours(path: str, *, folder: bool = False) -> bool:
        if not os.path.isabs(path):
            return False
        rel = inside(Path(real_root), path)
        if rel is not None and rel != "." and os.path.normpath(path) == os.path.join(real_root, rel):
            return True  # in the workspace, spelled as apply spells it: no symlink on the way
        return not folder and os.path.realpath(os.path.dirname(path)) in sides

    for target in journal.targets:
        if not ours(target.path):
            stray.append(target.path)
        elif Path(target.temp).parent != Path(target.path).parent:
            stray.append(target.temp)
    stray += [d for d in journal.made_dirs + journal.dropped_dirs if not ours(d, folder=True)]
    return stray


def roll_back(journal: Journal, folder: Path | None) -> Rollback:
    """Put back every target that has its new bytes; `folder` keeps the old bytes of changed ones."""
    result = Rollback(journal.label)
    for target in journal.targets:
        _remove_temp(target)
    for target in reversed(journal.targets):
        try:
            now = _read(Path(target.path))
        except OSError:
            result.failed.append(target.shown)
            continue
        if now == target.old:
            continue
        if new_sha256(now) != target.new_sha256:
            result.changed.append(target.shown)
            continue
        try:
            _put_back(target)
        except OSError:
            result.failed.append(target.shown)
            _remove_temp(target)
        else:
            result.restored.append(target.shown)
    for made in reversed(journal.made_dirs):
        with contextlib.suppress(OSError):
            os.rmdir(made)  # only when empty: nothing of anyone's is removed
    for parent in dict.fromkeys(Path(t.path).parent for t in journal.targets):
        with contextlib.suppress(OSError):
            sync_dir(parent)
    if result.changed and folder is not None:
        with contextlib.suppress(OSError):  # a full disk: the message says the copy is missing
            result.saved = _save_old(journal, result.changed, folder)
    result.restored.reverse()
    return result


def _put_back(target: Target) -> None:
    path = Path(target.path)
    if target.old is None:
        path.unlink(missing_ok=True)
        return
    temp = Path(target.temp)
    temp.parent.mkdir(parents=True, exist_ok=True)  # a folder the write dropped comes back
    temp.unlink(missing_ok=True)
    write_file(temp, target.old, target.mode)
    os.replace(temp, path)


def _remove_temp(target: Target) -> bool:
    temp = Path(target.temp)
    # Only our own staging name, beside its target: a journal never deletes anything else.
    if temp.parent == Path(target.path).parent and temp.name.endswith(TEMP_SUFFIX):
        with contextlib.suppress(OSError):
            temp.unlink()
            return True
    return False


def _save_old(journal: Journal, shown: list[str], folder: Path) -> Path:
    saved = folder / f"before-{time.time_ns()}"
    for target in journal.targets:
        if target.shown in shown and target.old is not None:
            copy = saved / target.shown.lstrip("/")  # workspace-relative; a side file by its full path
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(target.old)
    return saved


def write_file(path: Path, data: bytes, mode: int | None) -> None:
    """A new file with exactly `data`, on disk before this returns (O_EXCL: never someone else's)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(path, mode if mode is not None else 0o666 & ~_umask())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise


def sync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
