"""An in-memory overlay of the workspace: the model's edits land here, never on disk.

Reads come from the overlay, then the editor's unsaved buffers, then disk; the
first read of every file is remembered so a result can say exactly which
contents it was computed from (and refuse to apply over anything else).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from qwen_lsp.engine.edits import unified_diff
from qwen_lsp.files import read_text
from qwen_lsp.types import FileChange

BufferReader = Callable[[str], "str | None"]

# Never copied into a verification sandbox: large, generated, or VCS data.
SANDBOX_SKIP = {".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache", "target", ".tox"}


class PathOutsideWorkspace(ValueError):
    pass


class Overlay:
    def __init__(self, root: Path, read_buffer: BufferReader | None = None) -> None:
        self.root = root.resolve()
        self._read_buffer = read_buffer
        self._written: dict[str, str] = {}
        self.originals: dict[str, str | None] = {}  # None: did not exist when first looked at

    def relpath(self, path: str) -> str:
        """Workspace-relative POSIX path; refuses anything that escapes the workspace."""
        candidate = Path(path)
        joined = candidate if candidate.is_absolute() else self.root / candidate
        try:
            full = joined.resolve()
        except RuntimeError:  # a symlink loop (Python < 3.13): it leads nowhere, so judge the path as written
            full = Path(os.path.normpath(joined))
        if full != self.root and self.root not in full.parents:
            raise PathOutsideWorkspace(f"{path} is outside the workspace {self.root}")
        return full.relative_to(self.root).as_posix()

    def read(self, path: str) -> str | None:
        rel = self.relpath(path)
        if rel in self._written:
            return self._written[rel]
        if rel in self.originals:  # read once: a file changing mid-run must not leak into the diff
            return self.originals[rel]
        text = self._read_buffer(rel) if self._read_buffer else None
        if text is None:
            text = read_text(self.root / rel)
        self.originals.setdefault(rel, text)
        return text

    def write(self, path: str, text: str) -> None:
        rel = self.relpath(path)
        if rel not in self.originals:
            self.read(rel)
        self._written[rel] = text

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

    def materialize(self, dest: Path) -> Path:
        """A copy of the workspace at `dest` with the overlay applied (for verify commands)."""
        shutil.copytree(self.root, dest, ignore=lambda _d, names: [n for n in names if n in SANDBOX_SKIP], symlinks=True)
        for rel, text in self._written.items():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8", errors="surrogateescape", newline="")
        return dest

    def files(self) -> list[str]:
        """Workspace files (relative), skipping the sandbox-skip directories."""
        out = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = [d for d in dirnames if d not in SANDBOX_SKIP and not d.startswith(".")]
            for name in filenames:
                out.append((Path(dirpath) / name).relative_to(self.root).as_posix())
        out.extend(rel for rel in self._written if rel not in out)
        return sorted(out)
