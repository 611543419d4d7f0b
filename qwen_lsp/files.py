"""Reading workspace files as text: one reader, one set of rules.

A file is text when it can be read, has no NUL byte near its start, and decodes as
UTF-8 exactly. Anything else is None, never an exception: a workspace may hold a file
the user cannot read, a symlink loop, a binary, or a Latin-1 file, and none of those may
stop a fix, a search or a review of the other files.

Why strict UTF-8 (not `errors="replace"` or `"surrogateescape"`): what we read is shown
to the model and may be edited and written back. Replacement characters would be
written back as real text, and escaped surrogates cannot even be sent as JSON. A file we
cannot decode exactly is treated like a binary one: skipped, not guessed at.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

BINARY_SNIFF_BYTES = 8192  # a NUL in this prefix marks a binary file (as git does)


def read_text(path: Path, *, max_bytes: int | None = None) -> str | None:
    """The text of `path`; None when it is missing, unreadable, not a regular file, binary,
    not UTF-8, or (with `max_bytes`) larger than that."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is then refused as not a file.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:  # missing, permission denied, a symlink loop, ...
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
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def is_binary(data: bytes) -> bool:
    return b"\x00" in data[:BINARY_SNIFF_BYTES]
