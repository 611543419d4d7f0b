"""Writing a result's changes to disk, all or nothing, even across a crash.

    check      every change first: still as read (a file the user changed since the
               engine read it is never overwritten), inside the workspace, a fit name,
               no file where a folder must go, no folder where a file must go
    journal    with a journal folder: what each target was (its bytes) and will be (a hash),
               written and fsynced before anything else is (journal.py)
    stage      each new text to a temporary file in its target's own folder
    commit     `before_rename`, then rename each into place (and the caller's side files,
               e.g. qfix's undo entry), fsync, delete the journal: the commit point
    roll back  on any failure: put back every replaced file, remove every created
               file and folder, delete the temporary files; then raise. A process killed
               before the commit point leaves its journal: the next write (or
               `journal.recover`) rolls it back the same way.

Only whole renames touch the user's files, and the journal records every one before it
happens, so after a crash the files are all as they were or all as the fix has them.
Texts are written as UTF-8, exactly.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from qwen_lsp import journal as journals
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

    def __init__(self, why: BaseException, failed: list[str], changed: list[str]) -> None:
        parts = [f"these files could not be put back: {', '.join(failed)}"] if failed else []
        parts += [f"{', '.join(changed)} changed meanwhile and were left as they are"] if changed else []
        super().__init__(f"applying failed ({why}) and " + "; ".join(parts))
        self.failed = failed  # the journal stays: its next roll back tries these again


@dataclass(frozen=True)
class Write:
    """One file's change on disk: from `expected` (None: absent) to `text` (None: remove it)."""

    path: str  # workspace-relative
    expected: str | None
    text: str | None


@dataclass(frozen=True)
class SideFile:
    """A file outside the workspace written in the same transaction (qfix's undo entry): a
    path the caller chose (trusted, its folder exists); `data` None: remove it."""

    path: Path
    data: bytes | None


@dataclass
class _Staged:
    shown: str
    target: Path
    before: bytes | None  # exact bytes on disk when checked
    mode: int | None  # permission bits to keep
    data: bytes | None  # None: remove the file
    temp: Path | None = None


def writes_for(changes: list[FileChange]) -> list[Write]:
    return [Write(c.path, None if c.created else c.original, c.updated) for c in changes]


def check_fresh(root: Path, changes: list[FileChange]) -> list[str]:
    """Paths whose disk contents differ from what the engine read."""
    return [w.path for w in writes_for(changes) if _read(root / w.path) != w.expected]


def apply_changes(root: Path, changes: list[FileChange], *, journal: Path | None = None, label: str = "a fix",
                  side: Sequence[SideFile] = (), before_rename: Callable[[], object] | None = None) -> None:
    """Write every change, or none: see the module docstring and `apply_writes`."""
    apply_writes(root, writes_for(changes), journal=journal, label=label, side=side, before_rename=before_rename)


def new_folders(root: Path, paths: Sequence[str]) -> list[str]:
    """The folders (workspace-relative, outermost first) that writing `paths` creates."""
    made: list[str] = []
    for path in paths:
        made += [p for p in _parents(path) if p not in made and not (root / p).is_dir()]
    return made


def apply_writes(root: Path, writes: list[Write], *, journal: Path | None = None, label: str = "a fix",
                 side: Sequence[SideFile] = (), drop_dirs: Sequence[str] = (),
                 before_rename: Callable[[], object] | None = None) -> None:
    """`journal`: the folder of this workspace's journal (the user's own state, never the
    workspace); a write a dead process left there is rolled back first. `label` names the
    write in what a later roll back says. `drop_dirs`: workspace folders to remove once
    empty (an undo removing the folders its fix created). `before_rename` runs once
    everything is checked and staged, just before the first file is replaced."""
    root = Path(os.path.realpath(root))
    with journals.locked(journal) if journal is not None else contextlib.nullcontext():
        try:
            earlier = (journals.recover_locked(journal, root, [f.path.parent for f in side])
                       if journal is not None else None)
        except journals.JournalError as exc:
            raise ApplyError(f"not applied, nothing was changed: {exc}") from exc
        if earlier is not None:  # the files may differ from what the fix was computed from: the user decides again
            raise ApplyError(f"not applied, nothing was changed: {earlier.message()}; try again")
        staged = _check(root, writes)  # names first: a NUL byte or a folder is refused before any other check
        refuse_protected(root, [w.path for w in writes])  # .git/, virtualenvs, *.pth...: never written
        staged += [_check_side(f) for f in side]
        record = _plan(root, staged, label)
        record.dropped_dirs = [str(root / d) for d in reversed(drop_dirs) if inside(root, d) == d]
        try:
            if journal is not None:
                journals.begin(journal, record)
            for made in record.made_dirs:
                os.mkdir(made)
            for item in staged:
                _stage(item)
            if before_rename is not None:
                before_rename()
            for item in staged:
                _commit(item)
            for folder in record.dropped_dirs:
                with contextlib.suppress(OSError):
                    os.rmdir(folder)  # only when empty
            touched = [item.target.parent for item in staged] + [
                Path(d).parent for d in record.made_dirs + record.dropped_dirs]
            touched = [folder for folder in touched if folder.is_dir()]  # not a folder just dropped
            if journal is not None:
                journals.commit(journal, touched)
        except BaseException as exc:  # Ctrl-C included: never leave a fix half-applied
            undone = journals.roll_back(record, journal)
            if journal is not None and not undone.failed:
                journals.discard(journal)
            if undone.failed or undone.changed:
                raise RollbackFailed(exc, undone.failed, undone.changed) from exc
            if isinstance(exc, ApplyError) or not isinstance(exc, Exception):
                raise
            raise ApplyError(f"not applied, nothing was changed: {exc}") from exc


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
        data = w.text.encode("utf-8") if w.text is not None else None
        staged.append(_Staged(w.path, target, before, mode, data))
    if problems:
        raise UnsafeChange("not applied, nothing was changed: " + "; ".join(problems))
    if stale:
        raise StaleFile(stale)
    return staged


def _parents(rel: str) -> list[str]:
    """"a/b/c.py" -> ["a", "a/b"]."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


# -- plan, stage, commit ----------------------------------------------------------------------


def _check_side(side: SideFile) -> _Staged:
    before = _read_bytes(side.path)
    mode = stat.S_IMODE(side.path.stat().st_mode) if before is not None else None
    return _Staged(str(side.path), side.path, before, mode, side.data)


def _plan(root: Path, staged: list[_Staged], label: str) -> journals.Journal:
    """Every name the write will create, fixed up front so that the journal can list them."""
    txid = secrets.token_hex(6)
    for item in staged:
        item.temp = item.target.with_name(f".{item.target.name[:100]}.{txid}{journals.TEMP_SUFFIX}")
    created = [item.shown for item in staged if item.data is not None and item.target.is_relative_to(root)]
    made = [str(root / folder) for folder in new_folders(root, created)]
    targets = [
        journals.Target(shown=item.shown, path=str(item.target), old=item.before, mode=item.mode,
                        new_sha256=journals.new_sha256(item.data), temp=str(item.temp))
        for item in staged
    ]
    return journals.Journal(label=label, root=str(root), targets=targets, made_dirs=made)


def _stage(item: _Staged) -> None:
    if item.data is not None:
        assert item.temp is not None
        journals.write_file(item.temp, item.data, item.mode)


def _commit(item: _Staged) -> None:
    if item.data is None:
        item.target.unlink(missing_ok=True)
    else:
        assert item.temp is not None
        os.replace(item.temp, item.target)


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
