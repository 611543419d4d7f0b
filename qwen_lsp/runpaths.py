"""Where a running qwen-lsp keeps files other processes find: the side channel's Unix socket,
qfix's state folder, and the list of every folder qwen-lsp keeps its own files in (`own_dirs`:
what the model may never write, wherever those folders lie, even inside a workspace).

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

from platformdirs import user_cache_dir, user_state_dir

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


def state_dir() -> Path:
    """qfix's per-user state (journals, undo history, shell sessions, warm sockets):
    QFIX_STATE_DIR overrides the platform's per-user state directory (tests use it)."""
    return Path(os.environ.get("QFIX_STATE_DIR") or user_state_dir("qwen-lsp"))


def own_dirs(cache_dir: Path | None = None) -> list[tuple[Path, str]]:
    """Every folder qwen-lsp or qfix keeps its own files in, with what it holds: a file there is
    read back and acted on later (a journal is rolled back, a cached plan reused, a tokenizer
    loaded), so the model may never write one, even where a workspace contains the folder
    (a dotfiles repository at $HOME). `cache_dir`: the settings' cache folder, when known."""
    cache = "qwen-lsp's cache directory"
    state = "qfix's state folder (journals, undo history, sessions, warm sockets)"
    dirs = [(Path(cache_dir), cache)] if cache_dir is not None else []
    if os.environ.get("QWEN_LSP_CACHE_DIR"):  # the tokenizer cache follows it (llm/tokens.py)
        dirs.append((Path(os.environ["QWEN_LSP_CACHE_DIR"]), cache))
    dirs += [(Path(user_cache_dir("qwen-lsp")), cache), (state_dir(), state), (Path(user_state_dir("qwen-lsp")), state)]
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    dirs.append((Path(cache_home) / "qwen-lsp-build", "qwen-lsp's build cache (ops/llama_install.py)"))
    dirs += [(d, "qwen-lsp's socket folder") for d in _fallback_dirs()]
    return [(d, why) for d, why in dirs if d.is_absolute()]
