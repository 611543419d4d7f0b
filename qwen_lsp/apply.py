"""Writing a result's changes to disk, all or nothing.

    check      every change first: still as read (a file the user changed since the
               engine read it is never overwritten), inside the workspace, a fit name,
               no file where a folder must go, no folder where a file must go
    stage      each new text to a temporary file in its target's own folder
    commit     `before_rename` (the caller's undo record), then rename each into place
    roll back  on any failure: put back every replaced file, remove every created
               file and folder, delete the temporary files; then raise

Only whole renames touch the user's files, so a crash leaves each file either as it
was or as the fix has it, never half-written. Texts are written as UTF-8, exactly.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from qwen_lsp.engine.protected import refuse_protected
from qwen_lsp.files import inside, name_problem
from qwen_lsp.types import FileChange


class ApplyError(RuntimeError):
    """Nothing was written (or everything written was put back)."""


class StaleFile(ApplyError):
    def __init__(self, paths: list[str]) -> None:
        super().__init__("changed since the fix was computed, not overwritten: " + ", ".join(paths))
        self.paths = paths


class UnsafeChange(ApplyError):
    """A change that cannot be written as asked: a bad name, a path leaving the workspace,
    a file where a folder must go."""


class RollbackFailed(ApplyError):
    """Applying failed and some files could not be put back; the message names them."""


@dataclass(frozen=True)
class Write:
    """One file's change on disk: from `expected` (None: absent) to `text` (None: remove it)."""

    path: str  # workspace-relative
    expected: str | None
    text: str | None


@dataclass
class _Staged:
    write: Write
    target: Path
    before: bytes | None  # exact bytes on disk when checked
    mode: int | None  # permission bits to keep
    temp: Path | None = None
    done: bool = False


@dataclass
class _Transaction:
    staged: list[_Staged]
    made_dirs: list[Path] = field(default_factory=list)  # created here, outermost first


def writes_for(changes: list[FileChange]) -> list[Write]:
    return [Write(c.path, None if c.created else c.original, c.updated) for c in changes]


def check_fresh(root: Path, changes: list[FileChange]) -> list[str]:
    """Paths whose disk contents differ from what the engine read."""
    return [w.path for w in writes_for(changes) if _read(root / w.path) != w.expected]


def apply_changes(root: Path, changes: list[FileChange], *, before_rename: Callable[[], object] | None = None) -> None:
    """Write every change, or none: see the module docstring. `before_rename` runs once
    everything is checked and staged, just before the first file is replaced."""
    apply_writes(root, writes_for(changes), before_rename=before_rename)


def apply_writes(root: Path, writes: list[Write], *, before_rename: Callable[[], object] | None = None) -> None:
    root = Path(os.path.realpath(root))
    staged = _check(root, writes)  # names first: a NUL byte or a folder is refused before any other check
    refuse_protected(root, [w.path for w in writes])  # .git/, virtualenvs, *.pth...: never written
    txn = _Transaction(staged)
    try:
        for item in staged:
            _stage(root, item, txn)
        if before_rename is not None:
            before_rename()
        for item in staged:
            _commit(item)
    except BaseException as exc:  # Ctrl-C included: never leave a fix half-applied
        unrestored = _roll_back(txn)
        if unrestored:
            raise RollbackFailed(
                f"applying failed ({exc}) and these files could not be put back: {', '.join(unrestored)}"
            ) from exc
        if isinstance(exc, ApplyError) or not isinstance(exc, Exception):
            raise
        raise ApplyError(f"not applied, nothing was changed: {exc}") from exc
    finally:
        _remove_temps(staged)


# -- check -------------------------------------------------------------------------------------


def _check(root: Path, writes: list[Write]) -> list[_Staged]:
    problems: list[str] = []
    stale: list[str] = []
    staged: list[_Staged] = []
    if len({w.path for w in writes}) != len(writes):
        problems.append("the same file is changed twice")
    written = {w.path for w in writes if w.text is not None}
    for w in writes:
        rel = inside(root, w.path) if not name_problem(w.path) else None
        if rel is None or rel == "." or rel != Path(w.path).as_posix():
            problems.append(f"{w.path}: {name_problem(w.path) or 'not a file inside the workspace'}")
            continue
        clash = next((p for p in _parents(rel) if p in written), None)
        if w.text is not None and clash is not None:
            problems.append(f"{w.path}: another change makes {clash} a file")
            continue
        target = root / rel
        blocked = next((p for p in _parents(rel) if (root / p).exists() and not (root / p).is_dir()), None)
        if blocked is not None:
            problems.append(f"{w.path}: {blocked} is a file, not a folder")
            continue
        if target.is_dir():
            problems.append(f"{w.path} is a folder")
            continue
        if w.text is not None:
            try:
                w.text.encode("utf-8")
            except UnicodeEncodeError:
                problems.append(f"{w.path}: the text is not valid Unicode")
                continue
        try:
            before = _read_bytes(target)
            mode = stat.S_IMODE(target.stat().st_mode) if before is not None else None
        except OSError as exc:
            problems.append(f"{w.path}: cannot be read ({exc.strerror})")
            continue
        if before is not None and w.text is not None and not _is_utf8(before):
            problems.append(f"{w.path} is not UTF-8 text: it is never rewritten in another encoding")
            continue
        if (before.decode("utf-8", "surrogateescape") if before is not None else None) != w.expected:
            stale.append(w.path)
        staged.append(_Staged(w, target, before, mode))
    if problems:
        raise UnsafeChange("not applied, nothing was changed: " + "; ".join(problems))
    if stale:
        raise StaleFile(stale)
    return staged


def _parents(rel: str) -> list[str]:
    """"a/b/c.py" -> ["a", "a/b"]."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


# -- stage, commit, roll back ------------------------------------------------------------------


def _stage(root: Path, item: _Staged, txn: _Transaction) -> None:
    if item.write.text is None:
        return
    for parent in _parents(item.target.relative_to(root).as_posix()):
        folder = root / parent
        if not folder.is_dir():
            folder.mkdir()
            txn.made_dirs.append(folder)
    item.temp = _temp_with(item.target.parent, item.target.name, item.write.text.encode("utf-8"), item.mode)


def _temp_with(folder: Path, name: str, data: bytes, mode: int | None) -> Path:
    fd, temp = tempfile.mkstemp(dir=folder, prefix=f".{name[:100]}.", suffix=".qwen-tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode if mode is not None else 0o666 & ~_umask())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return Path(temp)


def _commit(item: _Staged) -> None:
    if item.write.text is None:
        item.target.unlink(missing_ok=True)
    else:
        assert item.temp is not None
        os.replace(item.temp, item.target)
        item.temp = None
    item.done = True


def _roll_back(txn: _Transaction) -> list[str]:
    """Undo what was committed; the paths that could not be put back."""
    _remove_temps(txn.staged)
    failed = []
    for item in reversed(txn.staged):
        if not item.done:
            continue
        try:
            if item.before is None:
                item.target.unlink(missing_ok=True)
            else:
                os.replace(_temp_with(item.target.parent, item.target.name, item.before, item.mode), item.target)
        except OSError:
            failed.append(item.write.path)
    for folder in reversed(txn.made_dirs):
        with contextlib.suppress(OSError):
            folder.rmdir()  # only when empty: nothing of the user's is removed
    return failed


def _remove_temps(staged: list[_Staged]) -> None:
    for item in staged:
        if item.temp is not None:
            with contextlib.suppress(OSError):
                item.temp.unlink()
            item.temp = None


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _read(path: Path) -> str | None:
    data = _read_bytes(path)
    return data.decode("utf-8", errors="surrogateescape") if data is not None else None
