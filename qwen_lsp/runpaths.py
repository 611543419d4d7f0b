"""Where a running qwen-lsp keeps files other processes find: the side channel's Unix socket.

Pure path arithmetic, below the engine in the layers, so that the verification sandbox can
hide every directory a socket may live in (engine/sandbox.py) and the side channel
(sidechannel.py) can listen and connect there.

Socket: `<cache_dir>/run/<sha256(real workspace path)[:16]>.sock`; when that path is too long
for a socket address, `$XDG_RUNTIME_DIR/qwen-lsp/` or else `$TMPDIR/qwen-lsp-<uid>/`.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

# sun_path is 108 bytes on Linux and 104 on macOS, including the final NUL.
MAX_SOCKET_PATH = 103


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _fallback_dirs() -> list[Path]:
    """The short per-user directories used when the cache directory is too deep, in order."""
    out = []
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        out.append(Path(runtime) / "qwen-lsp")
    out.append(Path(tempfile.gettempdir()) / f"qwen-lsp-{os.getuid()}")
    return out


def socket_path(workspace: Path, cache_dir: Path) -> Path:
    """Where a server for `workspace` listens. Deep cache directories (long temp paths) would
    exceed the Unix socket address limit; then a short per-user directory is used instead,
    keyed by both paths so both sides still agree."""
    real = os.path.realpath(workspace)
    path = Path(cache_dir) / "run" / f"{_key(real)}.sock"
    if len(os.fsencode(str(path))) <= MAX_SOCKET_PATH:
        return path
    name = f"{_key(os.path.realpath(cache_dir) + os.sep + real)}.sock"
    for directory in _fallback_dirs():
        if len(os.fsencode(str(directory / name))) <= MAX_SOCKET_PATH:
            return directory / name
    return _fallback_dirs()[-1] / name


def socket_dirs(cache_dir: Path) -> list[Path]:
    """Every directory a server's socket may be in, for any workspace (what a sandbox hides)."""
    return [Path(cache_dir) / "run", *_fallback_dirs()]
