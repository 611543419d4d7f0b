"""Workspace files as the engine may see and touch them: one rule for which paths
are inside the workspace, one reader, one check of a name before it is written.

- `inside`: a path counts as inside only once symlinks are resolved, so a link to
  a file elsewhere is never read into a prompt, searched or written through.
- `read_text`: decoded as UTF-8; a file that is not valid UTF-8 is decoded with
  replacement characters and marked `utf8=False`: shown to the model, never edited
  (writing it back as UTF-8 would change every byte the model never saw).
- `name_problem`: what makes a workspace-relative name unfit to be created.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

NAME_MAX = 255  # bytes in one path component (Linux, macOS, Windows)
PATH_MAX = 4096  # bytes in a whole path
BINARY_SNIFF = 8192  # a NUL byte in the first this-many bytes: binary (as git does)
BINARY_SNIFF_BYTES = BINARY_SNIFF


@dataclass(frozen=True)
class FileText:
    text: str
    utf8: bool  # False: decoded with replacement characters; read-only for edits


def inside(root: Path, path: str | Path) -> str | None:
    """`path` (absolute, or relative to `root`) as a workspace-relative POSIX path once every
    symlink is resolved; None when it leads outside `root` or cannot be resolved at all."""
    try:
        real_root = Path(os.path.realpath(root))
        candidate = Path(path)
        full = Path(os.path.realpath(candidate if candidate.is_absolute() else real_root / candidate))
    except (OSError, ValueError):  # a NUL byte, a name the OS refuses
        return None
    if full != real_root and real_root not in full.parents:
        return None
    return full.relative_to(real_root).as_posix()


def decode(data: bytes) -> FileText:
    try:
        return FileText(data.decode("utf-8"), True)
    except UnicodeDecodeError:
        return FileText(data.decode("utf-8", errors="replace"), False)


def read_text(path: Path, *, max_bytes: int | None = None) -> FileText | None:
    """The text of a regular file; None when it is missing, unreadable, not a regular file,
    binary or over `max_bytes`. Never raises: a workspace may hold a file the user cannot read,
    a symlink loop or a FIFO, and none of those may stop a fix, a search or a review."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is then refused as not a file.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):  # missing, permission denied, a symlink loop, a NUL byte in the name
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or (max_bytes is not None and info.st_size > max_bytes):
                return None
            data = fh.read()
    except OSError:  # an I/O error while reading
        return None
    if is_binary(data):
        return None
    return decode(data)


def text_of(path: Path, *, max_bytes: int | None = None) -> str | None:
    """`read_text(...).text`: for readers that only show text (context, diagnostics, reviews)."""
    found = read_text(path, max_bytes=max_bytes)
    return found.text if found is not None else None


def is_binary(data: bytes) -> bool:
    return b"\x00" in data[:BINARY_SNIFF]


def name_problem(relpath: str) -> str | None:
    """Why `relpath` cannot be created as a file name in a workspace; None when it can."""
    if not relpath or relpath.strip() in {"", ".", "/"}:
        return "a file needs a name"
    if "\0" in relpath:
        return "a path cannot contain a NUL byte"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in relpath):
        return "a path cannot contain control characters"
    try:
        encoded = relpath.encode("utf-8")
    except UnicodeEncodeError:
        return "a path must be valid Unicode"
    if len(encoded) > PATH_MAX:
        return f"the path is longer than {PATH_MAX} bytes"
    for part in relpath.split("/"):
        if len(part.encode("utf-8")) > NAME_MAX:
            return f"the name {part[:40]}… is longer than {NAME_MAX} bytes"
    if relpath.endswith("/") or relpath.rstrip("/").split("/")[-1] in {"", "."}:
        return "a file needs a name, not a folder"
    return None


def folder_problem(path: Path) -> str | None:
    """Why `path` cannot be (or become) a folder: it, or a folder it would be created in, is a file."""
    for candidate in (path, *path.parents):
        try:
            if candidate.is_dir():
                return None
            if candidate.exists():
                return f"{candidate} is a file, not a folder"
        except OSError as exc:  # permission denied on the way, a name too long
            return f"{candidate} cannot be used ({exc.strerror or exc})"
    return None
