"""An in-memory overlay of the workspace: the model's edits land here, never on disk.

Reads come from the overlay, then the editor's unsaved buffers, then disk; the
first read of every file is remembered so a result can say exactly which
contents it was computed from (and refuse to apply over anything else).

Paths follow the workspace rule of qwen_lsp.files (symlinks resolved first). A
file that is not UTF-8 is read with replacement characters and is read-only;
a write that could not land on disk as asked (a file where a folder must go, a
folder, text that is not valid Unicode) is refused here, before the user sees it.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from qwen_lsp.engine.edits import unified_diff
from qwen_lsp.engine.protected import ProtectedPath, check_writable
from qwen_lsp.files import inside, read_text
from qwen_lsp.types import FileChange

BufferReader = Callable[[str], "str | None"]

# Never copied into a verification sandbox: large, generated, or VCS data.
SANDBOX_SKIP = {".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache", "target", ".tox"}


class PathOutsideWorkspace(ValueError):
    pass


class UnwritablePath(ValueError):
    """A write the overlay refuses; the message says why, for the model."""


class Overlay:
    def __init__(self, root: Path, read_buffer: BufferReader | None = None, protected: tuple[Path, ...] = (),
                 executed: dict[str, str] | None = None) -> None:
        self.root = root.resolve()
        self.protected = protected  # more directories the model may not write (qwen-lsp's cache)
        self.executed = executed or {}  # what git runs here (protected.git_executed): never written
        self.refused: list[str] = []  # protected paths the model tried to write, for the result
        self._read_buffer = read_buffer
        self._written: dict[str, str] = {}
        self.originals: dict[str, str | None] = {}  # None: did not exist when first looked at
        self.read_only: dict[str, str] = {}  # path -> why it cannot be edited
        self.read_max_bytes: int | None = None  # larger files on disk are never read whole (ToolBox sets it)

    def relpath(self, path: str) -> str:
        """Workspace-relative POSIX path; refuses anything that escapes the workspace."""
        rel = inside(self.root, path)
        if rel is None:
            raise PathOutsideWorkspace(f"{path} is outside the workspace {self.root}")
        return rel

    def read(self, path: str) -> str | None:
        rel = self.relpath(path)
        if rel in self._written:
            return self._written[rel]
        if rel in self.originals:  # read once: a file changing mid-run must not leak into the diff
            return self.originals[rel]
        text = self._read_buffer(rel) if self._read_buffer else None
        if text is None:
            if self.too_large(rel) is not None:
                return None  # never kept: a later read_file may read it in parts (ToolBox)
            found = read_text(self.root / rel, max_bytes=self.read_max_bytes)
            text = found.text if found is not None else None
            if found is not None and not found.utf8:
                self.read_only[rel] = (
                    f"{rel} is not UTF-8 text: it was read with replacement characters (�) and cannot be "
                    "edited without changing its encoding; suggest a command instead"
                )
        self.originals.setdefault(rel, text)
        return text

    def too_large(self, rel: str) -> int | None:
        """The size of `rel` on disk when it is over `read_max_bytes` and this fix has neither
        read nor written it (a git-ignored dataset of gigabytes), else None."""
        if self.read_max_bytes is None or rel in self._written or rel in self.originals:
            return None
        try:
            info = os.stat(self.root / rel)
        except (OSError, ValueError):
            return None
        return info.st_size if stat.S_ISREG(info.st_mode) and info.st_size > self.read_max_bytes else None

    def exists(self, path: str) -> bool:
        """Something is at `path`: a file of this fix, or anything on disk (a binary file, a folder)."""
        rel = self.relpath(path)
        return rel in self._written or os.path.lexists(self.root / rel)

    def write(self, path: str, text: str) -> None:
        rel = self.relpath(path)
        try:
            check_writable(self.root, rel, self.protected, self.executed)
        except ProtectedPath:
            self.refused.append(rel)
            raise
        if rel not in self.originals:
            self.read(rel)
        problem = self._write_problem(rel, text)
        if problem is not None:
            raise UnwritablePath(problem)
        self._written[rel] = text

    def _write_problem(self, rel: str, text: str) -> str | None:
        if rel in self.read_only:
            return self.read_only[rel]
        if rel == "." or (self.root / rel).is_dir():
            return f"{rel} is a folder"
        parts = rel.split("/")
        for n in range(1, len(parts)):
            parent = "/".join(parts[:n])
            if parent in self._written or (self.root / parent).is_file():
                return f"{parent} is a file, so {rel} cannot be created"
        if any(other.startswith(rel + "/") for other in self._written):
            return f"{rel} is a folder of files created in this fix"
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "the text contains a lone surrogate (\\ud800-\\udfff), which is not valid Unicode"
        return None

    def changes(self) -> list[FileChange]:
        out = []
        for rel, text in sorted(self._written.items()):
            before = self.originals.get(rel)
            if before == text:
                continue
            out.append(
                FileChange(
                    path=rel,
                    original=before or "",
                    updated=text,
                    diff=unified_diff(rel, before or "", text),
                    created=before is None,
                )
            )
        return out

    def materialize(self, dest: Path, max_file_bytes: int = 0) -> tuple[Path, list[str]]:
        """A copy of the workspace at `dest` with the overlay applied (for verify commands), and
        what it left out: special files (a FIFO would block the copy, a socket or device cannot
        be copied) and files over `max_file_bytes` (0: no limit), each as "path (why)"."""
        left_out: list[str] = []
        _copy_tree(self.root, dest, self.root, max_file_bytes, left_out)
        for rel, text in self._written.items():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8", errors="surrogateescape", newline="")
        return dest, left_out

    def files(self) -> list[str]:
        """Workspace files (relative), skipping the sandbox-skip directories."""
        out = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = [d for d in dirnames if d not in SANDBOX_SKIP and not d.startswith(".")]
            for name in filenames:
                if not os.path.islink(os.path.join(dirpath, name)):  # a link leads outside, or is a second name
                    out.append((Path(dirpath) / name).relative_to(self.root).as_posix())
        out.extend(rel for rel in self._written if rel not in out)
        return sorted(out)



def _copy_tree(src: Path, dest: Path, root: Path, max_file_bytes: int, left_out: list[str]) -> None:
    """shutil.copytree for a verification copy: symlinks as links, only regular files copied."""
    dest.mkdir(parents=True, exist_ok=True)
    with os.scandir(src) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.name in SANDBOX_SKIP:
                continue
            source, target = Path(entry.path), dest / entry.name
            rel = source.relative_to(root).as_posix()
            try:
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISLNK(info.st_mode):
                    os.symlink(os.readlink(source), target)
                elif stat.S_ISDIR(info.st_mode):
                    _copy_tree(source, target, root, max_file_bytes, left_out)
                elif not stat.S_ISREG(info.st_mode):
                    left_out.append(f"{rel} ({_special_kind(info.st_mode)})")
                elif max_file_bytes and info.st_size > max_file_bytes:
                    left_out.append(f"{rel} ({info.st_size / 1e6:.0f} MB, over the copy limit)")
                else:
                    shutil.copy2(source, target, follow_symlinks=False)
            except OSError as exc:  # unreadable: the command sees it missing, and the result says so
                left_out.append(f"{rel} (unreadable: {exc.strerror or exc})")


def _special_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"
