"""The sandbox every verification command runs in: bubblewrap (`bwrap`).

A command the engine runs to check a fix (the user's own failing command, or an
allow-listed test runner from the plan) executes code the model may have written:
a conftest.py, a Makefile recipe, a test. So it runs with
- the scratch directory (the workspace copy, a HOME and a TMPDIR) as the only writable path;
- the rest of the filesystem read-only, and homes, /tmp, /run, /mnt and /media hidden, apart
  from the toolchains the command needs (the interpreter and its virtualenv, PATH entries,
  pyenv/rustup/nvm...), shown read-only; the copy is mounted over the real workspace;
- no network, its own PID/IPC/UTS namespaces, a new session (no typing into the terminal);
- an environment built from an allow-list (no API keys, no tokens), HOME in the scratch dir;
- --die-with-parent and its own process group, so killing it at the timeout or on cancel
  takes everything it started with it (the PID namespace dies with its first process);
- limits on memory, processes, file size and CPU time (engine/sandbox_limits.py), set by a
  launcher inside the sandbox;
- qwen-lsp's own cache directory and every directory its side-channel socket may be in hidden,
  wherever they are (a cache under /var/cache too): sandboxed code must not reach a running server.

Where bwrap is missing or cannot create namespaces, `status()` says so and nothing runs.
Only argument lists are built here: no shell strings, and the command itself is one argv word.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from qwen_lsp.engine.sandbox_limits import DROP_UID_RANGE, SandboxLimits, drop_root
from qwen_lsp.runpaths import socket_dirs

# Environment variables a verification may see. Everything else is dropped.
ENV_ALLOW = {
    "PATH", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "NO_COLOR",
    "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYTHONPATH", "PYENV_ROOT", "PYENV_VERSION",
    "PYTHONUTF8", "PYTHONIOENCODING", "GOPATH", "GOROOT", "GOFLAGS", "CARGO_HOME", "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN", "JAVA_HOME", "NODE_PATH", "NVM_DIR", "NVM_BIN", "VOLTA_HOME",
}
# Never passed on, even if a name above matched: an allow-list can be extended by mistake.
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE", re.IGNORECASE)

# Toolchain roots under a home directory: (environment variable, default under HOME, parts to show).
# Only these parts are shown, e.g. never ~/.cargo/credentials.toml.
_TOOLCHAINS: list[tuple[str, str, tuple[str, ...]]] = [
    ("PYENV_ROOT", ".pyenv", ("",)),
    ("RUSTUP_HOME", ".rustup", ("toolchains", "settings.toml", "update-hashes")),
    ("CARGO_HOME", ".cargo", ("bin", "registry", "git")),
    ("GOPATH", "go", ("bin", "pkg/mod")),
    ("NVM_DIR", ".nvm", ("",)),
    ("VOLTA_HOME", ".volta", ("",)),
    ("", ".local/share/uv", ("python", "tools")),
    ("", ".local/share/pipx", ("venvs", "shared")),
    ("", ".local/lib", ("",)),  # pip --user site-packages
]
# Workspace directories the copy leaves out but a command may need (read-only, at both places).
WORKSPACE_TOOL_DIRS = (".venv", "venv", "node_modules")
_SECRET_DIRS = {".ssh", ".aws", ".gnupg", ".config", ".docker", ".kube", ".azure", ".password-store", ".netrc",
                ".git-credentials", ".pypirc", ".npmrc"}
# Hidden behind empty tmpfs mounts (besides HOME and the real workspace).
_HIDDEN = ("/home", "/root", "/tmp", "/var/tmp", "/run", "/mnt", "/media")

ENABLE_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap) and allow "
    "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 "
    "kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap)"
)


@dataclass(frozen=True)
class SandboxStatus:
    available: bool
    detail: str  # "bwrap at /usr/bin/bwrap" or why not
    fix: str = ""  # how to enable it
    bwrap: str = ""  # the binary, when available


@dataclass(frozen=True)
class SandboxCommand:
    argv: list[str]
    env: dict[str, str]


def status() -> SandboxStatus:
    """Whether commands can run sandboxed here (checked once per bwrap binary, by really starting one)."""
    if not sys.platform.startswith("linux"):
        return SandboxStatus(False, f"no sandbox on {sys.platform} (bubblewrap is Linux-only)", "run qwen-lsp on Linux")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return SandboxStatus(False, "bwrap is not installed (not on PATH)", ENABLE_HINT)
    return _probe(bwrap)


@lru_cache(maxsize=4)
def _probe(bwrap: str) -> SandboxStatus:
    try:
        with tempfile.TemporaryDirectory(prefix="qwen-sandbox-probe-") as scratch:
            probe = build(bwrap, "true", scratch=Path(scratch), workdir=Path(scratch), workspace=None,
                          environ={"PATH": "/usr/bin:/bin"}, limits=SandboxLimits())
            done = subprocess.run(probe.argv, env=probe.env, capture_output=True, text=True, timeout=20,
                                  stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return SandboxStatus(False, f"bwrap at {bwrap} could not start: {exc}", ENABLE_HINT)
    if done.returncode != 0:
        why = " ".join(done.stderr.split())[:300] or f"exit {done.returncode}"
        return SandboxStatus(False, f"bwrap at {bwrap} cannot create a sandbox here: {why}", ENABLE_HINT)
    return SandboxStatus(True, f"bwrap at {bwrap}: no network, read-only system, only the workspace copy writable",
                         bwrap=bwrap)


def build(
    bwrap: str,
    command: str,
    *,
    scratch: Path,
    workdir: Path,
    workspace: Path | None,
    environ: Mapping[str, str] | None = None,
    hide: Iterable[Path] = (),
    limits: SandboxLimits | None = None,
) -> SandboxCommand:
    """The argv and environment that run `command` (with /bin/sh -c) inside the sandbox.

    `scratch` is the only writable directory: it holds the workspace copy (the directory
    below it that contains `workdir`) and gets `home/` and `tmp/`. The copy is mounted at
    the real `workspace`'s path, so absolute paths (an editable install in the project's
    .venv, a Makefile) reach the copy, never the real files; the real .venv and
    node_modules are mounted back into it read-only. `hide` are more directories to cover
    (qwen-lsp's cache and socket directories); `limits` run the command under rlimits.
    """
    environ = os.environ if environ is None else environ
    scratch = scratch.resolve()
    home, tmp = scratch / "home", scratch / "tmp"
    home.mkdir(parents=True, exist_ok=True)
    tmp.mkdir(parents=True, exist_ok=True)
    real_home = Path(environ.get("HOME") or Path.home())
    copy = _copy_root(workdir, scratch)
    if workspace is not None and (copy is None or workspace.resolve() == Path("/")):
        workspace = None
    workspace = workspace.resolve() if workspace is not None else None
    hidden = _outermost(_existing_dirs([real_home, *map(Path, _HIDDEN), *(_resolved(Path(p)) for p in hide)]))
    covered = hidden + ([workspace] if workspace else [])
    visible = [p for p in _under_any(visible_paths(environ, real_home, workspace), covered)
               if not _secret(p, real_home)]
    inner = [p for p in visible if workspace and (p == workspace or workspace in p.parents)]

    # Root drops to a uid of this run's own inside (RLIMIT_NPROC never binds uid 0), where that uid
    # can reach the copy: the scratch folder becomes its, and no user namespace (it would map only uid 0).
    drop: list[str] = []
    if _reachable([scratch, *([workspace] if workspace else [])], hidden):
        drop = drop_root(secrets.randbelow(DROP_UID_RANGE[1] - DROP_UID_RANGE[0]) + DROP_UID_RANGE[0])
    if drop:
        _chown_tree(scratch, int(drop[1].partition("=")[2]))

    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/dev/shm"]
    for path in hidden:  # empty and read-only (0555; root in the sandbox has no capability to override it)
        argv += ["--perms", "0555", "--tmpfs", str(path)]
    if drop:  # the folders bwrap makes on the way to a mount point: open to that uid, never a private 0700
        for folder in _mount_parents([*visible, scratch, *([workspace] if workspace else [])], hidden):
            argv += ["--perms", "0555", "--dir", str(folder)]
    for path in visible:
        if path not in inner:
            argv += ["--ro-bind", str(path), str(path)]
    argv += ["--bind", str(scratch), str(scratch)]
    chdir = workdir
    if workspace is not None and copy is not None:
        argv += ["--bind", str(copy), str(workspace)]
        for path in inner:
            argv += ["--ro-bind", str(path), str(path)]
        chdir = workspace / workdir.resolve().relative_to(copy)
    # Every namespace (user and cgroup where the kernel allows), so no network at all.
    argv += [*([] if drop else ["--unshare-user-try"]), "--unshare-ipc", "--unshare-pid", "--unshare-net",
             "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--chdir", str(chdir)]
    if os.geteuid() == 0:
        argv += ["--cap-drop", "ALL"]  # root keeps capabilities in a sandbox unless told otherwise
        if drop:  # for setpriv, which gives them all up with uid 0; and to enter the scratch folder, now not root's
            argv += [arg for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_DAC_READ_SEARCH")
                     for arg in ("--cap-add", cap)]
    argv += ["--", *drop, *(limits.launcher(sys.executable) if limits else []), "/bin/sh", "-c", command]
    return SandboxCommand(argv=argv, env=sandbox_env(environ, home, tmp, real_home))


def _reachable(paths: list[Path], hidden: list[Path]) -> bool:
    """Whether any uid can pass every folder on the way to each of `paths` that is not under a
    hidden one (those the sandbox makes itself, 0555): else root keeps uid 0 (and the fork bound
    is a pids cgroup or nothing, as doctor says)."""
    for path in paths:
        for folder in path.parents:
            if folder in hidden or any(root in folder.parents for root in hidden):
                continue
            try:
                if not os.stat(folder).st_mode & 0o001:
                    return False
            except OSError:
                return False
    return True


def _mount_parents(paths: list[Path], hidden: list[Path]) -> list[Path]:
    """The folders, outermost first, between a hidden folder and each of `paths`."""
    out: list[Path] = []
    for path in paths:
        root = next((r for r in hidden if r in path.parents), None)
        if root is None:
            continue
        parts = path.relative_to(root).parts[:-1]
        out += [f for f in (root.joinpath(*parts[: i + 1]) for i in range(len(parts))) if f not in out]
    return sorted(out, key=lambda f: len(f.parts))


def _chown_tree(folder: Path, uid: int) -> None:
    """`folder` and everything in it (a fresh copy, never the user's files) owned by `uid`."""
    os.lchown(folder, uid, uid)
    for parent, dirs, files in os.walk(folder):
        for name in dirs + files:
            os.lchown(os.path.join(parent, name), uid, uid)


def own_dirs(cache_dir: Path) -> list[Path]:
    """qwen-lsp's own directories, which a sandbox hides wherever they are: the cache (plans, the
    tag cache, call logs) and every directory a running server's side-channel socket may be in."""
    return [Path(cache_dir), *socket_dirs(Path(cache_dir))]


def sandbox_env(environ: Mapping[str, str], home: Path, tmp: Path, real_home: Path | None = None) -> dict[str, str]:
    """The allow-listed part of `environ`, with HOME and TMPDIR inside the sandbox.

    A toolchain whose root defaults to a folder under the real HOME (rustup's ~/.rustup, ~/.cargo,
    ~/go, ~/.pyenv, ~/.nvm) is named by its variable, so it is still found with HOME moved: else
    rustup's `cargo` finds no toolchain and every Rust verification fails."""
    env = {
        name: value for name, value in environ.items()
        if (name in ENV_ALLOW or name.startswith("LC_")) and not _SECRET_NAME.search(name)
    }
    if real_home is not None:
        for variable, root, _parts in _toolchain_roots(environ, real_home):
            if variable and variable not in env and root.is_dir():
                env[variable] = str(root)
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(HOME=str(home), TMPDIR=str(tmp), PYTHONDONTWRITEBYTECODE="1")
    return env


def visible_paths(environ: Mapping[str, str], home: Path, workspace: Path | None) -> list[Path]:
    """Read-only toolchain paths a command may need, wherever they live (filtered by the caller)."""
    paths: list[Path] = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)]
    paths += [Path(p) for p in environ.get("PATH", "").split(os.pathsep) if p]
    venvs = [Path(environ[v]) for v in ("VIRTUAL_ENV", "CONDA_PREFIX") if environ.get(v)] + [Path(sys.prefix)]
    if workspace is not None:
        tool_dirs = [workspace / name for name in WORKSPACE_TOOL_DIRS]
        paths += tool_dirs
        venvs += tool_dirs
    paths += venvs
    for venv in venvs:  # a virtualenv's python is a symlink to its base interpreter
        for python in (venv / "bin" / "python", venv / "bin" / "python3"):
            if _exists(python):
                paths.append(python.resolve().parent.parent)
    for _variable, root, parts in _toolchain_roots(environ, home):
        paths += [root / part if part else root for part in parts]
    return [p for p in paths if p.is_absolute() and _exists(p)]


def _toolchain_roots(environ: Mapping[str, str], home: Path) -> list[tuple[str, Path, tuple[str, ...]]]:
    """Each toolchain's (variable, root, parts to show): its variable's value, else its folder under `home`."""
    return [(variable, Path(environ[variable]) if variable and environ.get(variable) else home / default, parts)
            for variable, default, parts in _TOOLCHAINS]


def _exists(path: Path) -> bool:
    """Path.exists() that answers False for what this user may not even look at."""
    try:
        return path.exists()
    except OSError:
        return False


def _secret(path: Path, home: Path) -> bool:
    """Never shown, whatever PATH says: the home itself and its credential directories."""
    try:
        rel = path.relative_to(home.resolve())
    except ValueError:
        return False
    return not rel.parts or rel.parts[0] in _SECRET_DIRS


def _existing_dirs(paths: Iterable[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        if _exists(path) and path.is_dir() and not path.is_symlink() and path.resolve() not in (Path("/"), *out):
            out.append(path.resolve())
    return out


def _resolved(path: Path) -> Path:
    try:
        return path.expanduser().resolve()
    except (OSError, RuntimeError):
        return path


def _outermost(paths: list[Path]) -> list[Path]:
    """`paths` without those inside another one (hiding the outer one hides them)."""
    return [p for p in paths if not any(other in p.parents for other in paths)]


def _under_any(paths: Iterable[Path], roots: list[Path]) -> list[Path]:
    """`paths` (resolved) that some hidden root would otherwise hide, without duplicates or nesting."""
    chosen: list[Path] = []
    for path in sorted({p.resolve() for p in paths}, key=lambda p: len(p.parts)):
        hidden = any(path == r or r in path.parents for r in roots)
        if hidden and not any(c == path or c in path.parents for c in chosen):
            chosen.append(path)
    return chosen


def _copy_root(workdir: Path, scratch: Path) -> Path | None:
    """The workspace copy: the first directory below `scratch` on the way to `workdir`."""
    try:
        rel = workdir.resolve().relative_to(scratch)
    except ValueError:
        return None
    return scratch / rel.parts[0] if rel.parts else None
