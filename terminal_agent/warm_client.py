"""qfix's side of the warm process (terminal_agent/warm.py): find it, start it, hand it the thinking.

    connect     at qfix's start, to <private dir>/qfix-<code fingerprint>.sock; the peer's uid must be ours
    hello       the client's environment, cwd and umask: the daemon forks a child that takes them on
                and loads the workspace's settings and context while the command runs
    failure     sent as soon as the command has failed
    replies     progress lines, then the FixResult (or the model server's error)

Nothing the user sees or consents to happens over the socket: the child only thinks, qfix shows,
asks, applies and re-runs exactly as when it thinks in-process. When no daemon answers, qfix starts
one detached for next time and thinks in-process now; a daemon that dies mid-fix costs one dim line
and an in-process fix (agent.py). Only the user's environment turns it off (QFIX_WARM=0): nothing in
a repository is read to decide.

How many: a daemon is started only for interactive use (a terminal on stdin and stderr; QFIX_WARM=1
starts one for scripts too), one per code for each user whatever their state folder (the sockets
live in one per-user folder, not in QFIX_STATE_DIR: scripts that run `qfix --yes` with fresh state
each time used to leave a ~180 MB daemon per run), and at most QFIX_WARM_MAX (default 2) codes at
once: a user with more checkouts thinks in-process in the others.

Stdlib only at import: qfix connects before it has imported the engine.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import site
import socket
import struct
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from terminal_agent.paths import state_dir

if TYPE_CHECKING:
    from terminal_agent.warm_wire import ErrorReply, ResultReply, StatusReply

ENV_SWITCH = "QFIX_WARM"  # "0": never connect, never start one
ENV_IDLE = "QFIX_WARM_IDLE"  # seconds a daemon waits for a connection before it exits
ENV_DIR = "QFIX_WARM_DIR"  # the socket folder (tests and benchmarks isolate theirs); default: one per user
ENV_MAX = "QFIX_WARM_MAX"  # daemons (codes) one user may have at once
DEFAULT_MAX = 2
DEFAULT_IDLE_SECONDS = 15 * 60
CONNECT_SECONDS = 1.0
MAX_LINE = 64 * 1024 * 1024  # a FixResult carries whole files: generous, but bounded
SUN_PATH_MAX = 107  # sockaddr_un.sun_path, less its terminating NUL


class WarmLost(Exception):
    """The warm process could not finish this fix (gone, refused, or it answered for other settings)."""


def enabled() -> bool:
    """On unless the user's environment says QFIX_WARM=0; never where the peer's uid cannot be checked."""
    return os.environ.get(ENV_SWITCH, "1") != "0" and hasattr(socket, "SO_PEERCRED")


def socket_dir() -> Path:
    """QFIX_WARM_DIR, else $XDG_RUNTIME_DIR/qfix, else /tmp/qfix-<uid>: one folder per user, shared
    by every state folder (a daemon's child takes on each client's environment, QFIX_STATE_DIR
    included), so fresh state per run does not mean a fresh daemon per run."""
    explicit = os.environ.get(ENV_DIR)
    if explicit and os.path.isabs(explicit):
        return Path(explicit)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return Path(runtime) / "qfix"
    return Path("/tmp") / f"qfix-{os.getuid()}"  # not $TMPDIR: scripts set their own


def max_daemons() -> int:
    try:
        return max(1, int(os.environ.get(ENV_MAX, DEFAULT_MAX)))
    except ValueError:
        return DEFAULT_MAX


def start_refused() -> str | None:
    """Why this qfix starts no daemon for next time, or None. Only for interactive use (a terminal on
    stdin and stderr: a script's qfix has no "next time" worth 180 MB), unless QFIX_WARM=1; and never
    beyond max_daemons() live ones of this user."""
    if os.environ.get(ENV_SWITCH) != "1" and not (os.isatty(0) and os.isatty(2)):
        return "not interactive"
    live = len(starting())
    if live >= max_daemons():
        return f"{live} warm processes of this user already run ({ENV_MAX}={max_daemons()})"
    return None


def private_dir(*, create: bool) -> Path:
    """The socket folder, made 0700 if needed; OSError unless it is a real folder of ours that
    nobody else may enter (another user could otherwise put a socket of theirs in our way)."""
    folder = socket_dir()
    if create:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(folder)
    if not (os.path.isdir(folder) and not os.path.islink(folder)) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise PermissionError(f"{folder} is not a private folder of this user (0700)")
    return folder


def fingerprint() -> str:
    """Which code would think: the interpreter, the files of qwen_lsp and terminal_agent as imported
    here (paths, mtimes, sizes), and the site-packages and PYTHONPATH folders (installing or removing
    a dependency changes its folder's mtime). A changed install or an edited checkout gives another name."""
    import qwen_lsp

    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"{sys.executable}\0{sys.version}\n".encode())
    for package in (Path(qwen_lsp.__file__).parent, Path(__file__).parent):
        for root, dirs, files in os.walk(package):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                path = os.path.join(root, name)
                try:
                    info = os.stat(path)
                except OSError:
                    continue
                digest.update(f"{path}\0{info.st_mtime_ns}\0{info.st_size}\n".encode())
    # Not sys.path itself: its first entry is the script's folder, which differs between qfix and the daemon.
    folders = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    for folder in [*folders, *os.environ.get("PYTHONPATH", "").split(os.pathsep)]:
        try:
            digest.update(f"{folder}\0{os.stat(folder).st_mtime_ns}\n".encode())
        except OSError:
            continue
    return digest.hexdigest()


def socket_path(folder: Path, code: str) -> Path:
    return folder / f"qfix-{code}.sock"


def lock_path(folder: Path, code: str) -> Path:
    return folder / f"qfix-{code}.lock"


def broken_path(folder: Path, code: str) -> Path:
    """Where a daemon that cannot serve this code says why; qfix then starts no more of them for it."""
    return folder / f"qfix-{code}.broken"


def log_path() -> Path:
    return state_dir() / "warm.log"


def idle_seconds() -> float:
    try:
        return max(1.0, float(os.environ.get(ENV_IDLE, DEFAULT_IDLE_SECONDS)))
    except ValueError:
        return float(DEFAULT_IDLE_SECONDS)


def peer_uid_pid(sock: socket.socket) -> tuple[int, int]:
    """(uid, pid) of the process at the other end (SO_PEERCRED: the kernel's word, not the peer's)."""
    pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return uid, pid


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    # ensure_ascii: lone surrogates (undecodable bytes in an environment or output) survive as escapes
    sock.sendall(json.dumps(message).encode("ascii") + b"\n")


class Lines:
    """Newline-delimited JSON from a blocking socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def next(self) -> dict[str, Any] | None:
        """The next message, or None at EOF. ValueError on a line that is not a JSON object."""
        while b"\n" not in self.buffer:
            if len(self.buffer) > MAX_LINE:
                raise ValueError("message too long")
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError("not a JSON object")
        return message


def connect(path: Path) -> tuple[socket.socket, int] | None:
    """A connection to the daemon at `path` and its pid; None when nobody of ours listens there."""
    if len(os.fsencode(path)) > SUN_PATH_MAX:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_SECONDS)
        sock.connect(os.fspath(path))
        uid, pid = peer_uid_pid(sock)
        if uid != os.getuid():
            raise PermissionError(f"{path} is served by uid {uid}")
        sock.settimeout(None)
        return sock, pid
    except OSError:
        sock.close()
        return None


def umask() -> int:
    """This process's umask, read without changing it (os.umask would, for a moment, for every thread)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class Session:
    """One fix handed to a warm child: hello at once, the failure when known, then its replies."""

    def __init__(self, sock: socket.socket, daemon_pid: int) -> None:
        self.sock = sock
        self.daemon_pid = daemon_pid
        self.failure_sent = False
        self.closed = False
        self.lines = Lines(sock)  # one buffer for the whole conversation: a fix, then any refines

    def send_failure(self, command: str, exit_code: int, output: str | None, cwd: Path,
                     workspace: Path | None = None) -> bool:
        """False when the child is gone already (the fix then happens in-process)."""
        try:
            send(self.sock, {"kind": "failure", "command": command, "exit_code": exit_code, "output": output,
                             "cwd": str(cwd), "workspace": str(workspace) if workspace else None})
        except OSError:
            return False
        self.failure_sent = True
        return True

    def send_refine(self, fix_id: str, note: str) -> bool:
        """After a result: the user's note on it, for the child that still holds its conversation.
        False when the child is gone (the follow-up cannot happen)."""
        if self.closed:
            return False
        try:
            send(self.sock, {"kind": "refine", "fix_id": fix_id, "note": note})
        except OSError:
            return False
        return True

    def think(self, progress: Callable[[str], None]) -> ResultReply | ErrorReply:
        """Wait for the child's answer, passing its progress on. WarmLost when there is none to use."""
        from pydantic import ValidationError

        from terminal_agent.warm_wire import ChildReply

        while True:
            try:
                raw = self.lines.next()
            except (OSError, ValueError) as exc:
                raise WarmLost(f"its answer could not be read: {exc}") from exc
            if raw is None:
                raise WarmLost("it ended without an answer")
            try:
                reply = ChildReply.validate_python(raw)
            except ValidationError as exc:
                raise WarmLost("it sent a malformed answer") from exc
            if reply.kind == "progress":
                progress(reply.phase)
            elif reply.kind == "error" and reply.error == "failed":
                raise WarmLost(reply.message)
            else:
                return reply

    def close(self) -> None:
        self.closed = True
        self.sock.close()  # the child sees EOF: if it is still thinking, it stops; either way it ends


def open_session(cwd: Path) -> Session | None:
    """Hello to the warm process for this code; None (after starting one for next time) when none answers."""
    if not enabled():
        return None
    try:
        folder = private_dir(create=True)
        code = fingerprint()
        path = socket_path(folder, code)
        found = connect(path)
        if found is None:
            if len(os.fsencode(path)) <= SUN_PATH_MAX and not broken_path(folder, code).exists() \
                    and start_refused() is None:
                start_daemon(code)
            return None
        sock, pid = found
        try:
            send(sock, {"kind": "think", "env": dict(os.environ), "cwd": str(cwd), "umask": umask(),
                        "client_pid": os.getpid()})
        except OSError:
            sock.close()
            return None
        return Session(sock, pid)
    except OSError:
        return None  # no private folder, a full disk, ...: this fix simply thinks in-process


def start_daemon(code: str) -> None:
    """`python -m terminal_agent.warm` in its own session, stdio to the log in the state dir. -P: the
    cwd (some repository) is not put on its import path, so it imports the code we run, never the repo's."""
    log = log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.fspath(log), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    os.posix_spawn(sys.executable, [sys.executable, "-P", "-m", "terminal_agent.warm", "--fingerprint", code],
                   dict(os.environ), file_actions=actions, setsid=True)


def daemons() -> list[Path]:
    """Sockets of warm processes in our private folder, this code's and older ones'."""
    try:
        return sorted(private_dir(create=False).glob("qfix-*.sock"))
    except OSError:
        return []


def starting() -> dict[Path, int]:
    """Lock files held by a live daemon, and its pid (written there): the ones still importing
    the engine have no socket yet."""
    import fcntl

    held = {}
    try:
        locks = sorted(private_dir(create=False).glob("qfix-*.lock"))
    except OSError:
        return {}
    for path in locks:
        try:
            with open(path, "rb") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:
                    held[path] = int(lock.read().strip() or 0)
        except (OSError, ValueError):
            continue
    return {path: pid for path, pid in held.items() if pid > 0}


def ask(path: Path, kind: str) -> StatusReply | None:
    """A daemon's status ("status"), or stop it ("stop"); None when nobody of ours answers there."""
    from pydantic import ValidationError

    from terminal_agent.warm_wire import StatusReply

    found = connect(path)
    if found is None:
        return None
    sock, _pid = found
    try:
        sock.settimeout(5)
        send(sock, {"kind": kind})
        raw = Lines(sock).next()
        return StatusReply.model_validate(raw) if raw is not None else None
    except (OSError, ValueError, ValidationError):
        return None
    finally:
        sock.close()


def status_command(stop: bool) -> int:
    """`qfix --warm-status` / `qfix --warm-stop`: one line per warm process of this user; exit 0."""
    if not enabled():
        why = f"{ENV_SWITCH}=0 in your environment" if hasattr(socket, "SO_PEERCRED") else "needs SO_PEERCRED (Linux)"
        print(f"warm process: off ({why})")
        if not hasattr(socket, "SO_PEERCRED"):
            return 0
    current = socket_path(socket_dir(), fingerprint())
    answered: set[int] = set()
    for path in daemons():
        status = ask(path, "stop" if stop else "status")
        if status is None:
            continue
        answered.add(status.pid)
        which = "this qfix's code" if path == current else "older code, exits on its next check"
        if stop:
            print(f"warm process: stopped pid {status.pid} ({which})")
            continue
        thinking = f", thinking for {len(status.thinking)} qfix now" if status.thinking else ""
        print(f"warm process: pid {status.pid} ({which}), up {_span(time.time() - status.started)}, "
              f"served {status.served} qfix run(s){thinking}, idle {_span(status.idle_seconds)} "
              f"(exits after {_span(status.idle_limit)} idle); socket {path}")
    for pid in set(starting().values()) - answered:  # still importing the engine: no socket yet
        answered.add(pid)
        if stop:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        print(f"warm process: {'stopped ' if stop else ''}pid {pid}, starting")
    broken = broken_path(socket_dir(), fingerprint())
    if broken.exists():
        print(f"warm process: cannot run for this code: {broken.read_text(errors='replace').strip()} "
              f"(qfix thinks in-process; remove {broken} to try again)")
    elif not answered:
        print("warm process: none running" + ("" if stop or not enabled() else " (the next qfix in a terminal starts one)"))
    if not stop:
        print(f"warm process log: {log_path()}")
    return 0


def _span(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"
