"""Resource limits for the verification sandbox: memory, processes, file size and CPU time.

bubblewrap has no limits of its own, so:
- rlimits are set *inside* the sandbox, by a launcher that bwrap starts and that execs the
  command (util-linux `prlimit`, else `python -I -S -c`). Set there, after bwrap made the user
  namespace, RLIMIT_NPROC counts only the processes of that namespace (Linux >= 5.14 counts it
  per user namespace and uid); set before, it would count every process the user runs, and the
  sandbox could not even start.
- the kernel never applies RLIMIT_NPROC to the real root user (uid 0, also inside a user
  namespace that maps to it: bwrap's `--unshare-user --uid N` does not help). Running as root,
  the sandbox drops to an unprivileged uid of its own instead (`drop_root`: util-linux `setpriv`,
  inside bwrap, before the limits are set), so RLIMIT_NPROC binds. Without setpriv, the process
  limit is a pids cgroup, created below our own cgroup (v2, or the v1 `pids` hierarchy) where it
  is writable, and watched, so a fork bomb is stopped at its first refused fork. Where neither
  works, `qwen-lsp doctor` says that the process limit is not enforced.

The memory bound is per process (address space); a whole sandbox uses at most
processes x memory, and the tests choose both small.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import platform
import re
import resource
import shutil
import signal
import uuid
from dataclasses import dataclass
from pathlib import Path

from qwen_lsp.settings import Limits

_MB = 1 << 20

log = logging.getLogger(__name__)

# Runs inside the sandbox where util-linux's `prlimit` is missing: set the limits, put back the
# signals Python ignores (an ignored disposition survives exec: `yes | head` would never end),
# then exec the command. prlimit starts in a few ms, Python in 20-200 ms.
_LAUNCHER = """\
import os, resource, signal, sys
for name, value in zip(("AS", "NPROC", "FSIZE", "CPU"), sys.argv[1:5]):
    soft, _, hard = value.partition(":")
    if int(soft) > 0:
        resource.setrlimit(getattr(resource, "RLIMIT_" + name), (int(soft), int(hard)))
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
os.execv(sys.argv[5], sys.argv[5:])
"""
_RESOURCES = (("AS", "--as"), ("NPROC", "--nproc"), ("FSIZE", "--fsize"), ("CPU", "--cpu"))


@dataclass(frozen=True)
class SandboxLimits:
    memory_mb: int = 8192
    processes: int = 512
    file_size_mb: int = 1024
    cpu_seconds: int = 600

    @classmethod
    def from_settings(cls, limits: Limits) -> SandboxLimits:
        return cls(limits.sandbox_memory_mb, limits.sandbox_processes, limits.sandbox_file_size_mb,
                   limits.sandbox_cpu_seconds)

    def launcher(self, python: str) -> list[str]:
        """The argv prefix that runs a command under these limits (inside the sandbox)."""
        processes = self.processes if nproc_enforced() else 0  # else a pids cgroup, or nothing (see doctor)
        wanted = (self.memory_mb * _MB, processes, self.file_size_mb * _MB, self.cpu_seconds)
        pairs = [_soft_hard(name, value) for (name, _), value in zip(_RESOURCES, wanted)]
        prlimit = shutil.which("prlimit", path="/usr/bin:/bin")
        if prlimit is not None:
            return [prlimit, *(f"{option}={soft}:{hard}" for (_, option), (soft, hard) in zip(_RESOURCES, pairs)
                               if soft > 0), "--"]
        return [python, "-I", "-S", "-c", _LAUNCHER, *(f"{soft}:{hard}" for soft, hard in pairs)]


def _soft_hard(name: str, value: int) -> tuple[int, int]:
    """(soft, hard) for one limit, never above the hard limit we have (it cannot be raised); 0: none.
    CPU time gets 5 s of grace: SIGXCPU at the soft limit, SIGKILL at the hard one."""
    if value <= 0:
        return 0, 0
    ceiling = resource.getrlimit(getattr(resource, f"RLIMIT_{name}"))[1]
    hard = value + 5 if name == "CPU" else value
    if ceiling != resource.RLIM_INFINITY:
        value, hard = min(value, ceiling), min(hard, ceiling)
    return value, hard


def nproc_enforced() -> bool:
    """Whether RLIMIT_NPROC set inside the sandbox bounds only the sandbox: the kernel never applies
    it to the real root user (who drops to a uid of the sandbox's own where setpriv is there), and
    before Linux 5.14 it counted every process of the user (a desktop session has hundreds), so it
    is not set there at all."""
    if os.getuid() == 0:
        return _setpriv() is not None
    return _kernel_version() >= (5, 14)


def pids_cgroup_wanted() -> bool:
    """Whether a run tries a pids cgroup as well: where RLIMIT_NPROC does not bind, and as root
    even where it does (root drops to a uid of its own), since only a cgroup sees a refused fork
    and so stops a fork bomb at once, said as certain; RLIMIT_NPROC alone only bounds it."""
    return os.getuid() == 0 or not nproc_enforced()


# Where root's sandbox drops to: a uid no account has, one per run (secrets), so that
# RLIMIT_NPROC -- counted per real uid -- counts that sandbox's processes and nobody else's.
DROP_UID_RANGE = (1 << 30, 1 << 31)


def _setpriv() -> str | None:
    return shutil.which("setpriv", path="/usr/bin:/bin")


def drop_root(uid: int) -> list[str]:
    """Running as root: the argv prefix (run inside bwrap, which must leave it CAP_SETUID,
    CAP_SETGID and CAP_SETPCAP) that becomes `uid`/`uid` with no groups, no capabilities (bounding
    and inheritable sets emptied) and no_new_privs, so RLIMIT_NPROC binds; [] otherwise."""
    setpriv = _setpriv() if os.getuid() == 0 else None
    if setpriv is None:
        return []
    return [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs", "--"]


def _kernel_version() -> tuple[int, int]:
    match = re.match(r"(\d+)\.(\d+)", platform.release())
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


class PidsCgroup:
    """A pids cgroup below our own, for one sandbox run; `create` returns None where impossible."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, limit: int) -> PidsCgroup | None:
        for parent in _own_pids_cgroups():
            path = parent / f"qwen-sandbox-{uuid.uuid4().hex[:12]}"
            try:
                path.mkdir()
            except OSError:
                continue
            try:
                (path / "pids.max").write_text(f"{limit}\n")
                return cls(path)
            except OSError:
                with contextlib.suppress(OSError):
                    path.rmdir()
        return None

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` started from inside the cgroup: a shell moves itself in, then execs it."""
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.path / "cgroup.procs"), *argv]

    def refused_forks(self) -> int:
        """How many forks the limit refused so far (`max` in pids.events)."""
        try:
            match = re.search(r"^max (\d+)", (self.path / "pids.events").read_text(), re.MULTILINE)
        except OSError:
            return 0
        return int(match.group(1)) if match else 0

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            self.path.rmdir()

    async def close(self, wait_seconds: float = 5.0) -> None:
        """Kill what is still in the cgroup (the PID namespace is being torn down, or something
        left the process group) and remove it once empty."""
        for _ in range(int(wait_seconds / 0.05)):
            pids = _read(self.path / "cgroup.procs").split()
            for pid in pids:
                with contextlib.suppress(OSError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)
            if not pids:
                self.remove()
                if not self.path.exists():
                    return
            await asyncio.sleep(0.05)
        log.warning("the sandbox's cgroup %s could not be removed", self.path)


def _own_pids_cgroups() -> list[Path]:
    """Our own cgroup directory in each hierarchy that has the pids controller (v2 first)."""
    try:
        membership = [line.split(":", 2) for line in Path("/proc/self/cgroup").read_text().splitlines()]
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    v2: list[Path] = []
    v1: list[Path] = []
    for line in mounts:  # "id parent dev root mount-point options ... - fstype source super-options"
        left, _, right = line.partition(" - ")
        fields, extra = left.split(), right.split()
        if len(fields) < 5 or len(extra) < 3 or extra[0] not in ("cgroup", "cgroup2"):
            continue
        root, mount_point, fstype = fields[3], fields[4], extra[0]
        for hierarchy, controllers, rel in (m for m in membership if len(m) == 3):
            if fstype == "cgroup2":
                wanted = hierarchy == "0"
            else:
                wanted = "pids" in extra[2].split(",") and "pids" in controllers.split(",")
            if not wanted or not (rel == root or rel.startswith(root.rstrip("/") + "/")):
                continue
            own = Path(mount_point) / rel[len(root):].lstrip("/")
            if fstype == "cgroup2" and "pids" in _read(own / "cgroup.subtree_control").split():
                v2.append(own)  # v2: only where the controller is enabled for our children
            elif fstype == "cgroup":
                v1.append(own)
    return v2 + v1


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


# What a limit leaves in the output of the process it stopped (errno texts and runtimes' messages).
_SIGNS = [
    ("processes", re.compile(r"Resource temporarily unavailable|fork: retry|BlockingIOError|Cannot fork|"
                             r"can't fork|pthread_create failed|EAGAIN")),
    ("memory", re.compile(r"MemoryError|Cannot allocate memory|std::bad_alloc|out of memory|ENOMEM",
                          re.IGNORECASE)),
    ("file size", re.compile(r"File too large|File size limit exceeded|EFBIG")),
    ("cpu time", re.compile(r"CPU time limit exceeded")),
]
_SIGNALS = {128 + 24: "cpu time", 128 + 25: "file size"}  # SIGXCPU, SIGXFSZ (sh and bwrap report 128+N)


def stopped_by(returncode: int | None, output: str, refused_forks: int = 0) -> tuple[str, bool] | None:
    """Which limit stopped a failed command, and whether that is certain (the cgroup refused a fork,
    the kernel's signal for the limit) or read from the error text the limit causes; or None."""
    if refused_forks:
        return "processes", True
    if not returncode:
        return None
    if returncode in _SIGNALS:
        return _SIGNALS[returncode], True
    for name, sign in _SIGNS:
        if sign.search(output):
            return name, False
    return None


def describe(limit: str, limits: SandboxLimits, certain: bool = True) -> str:
    """One line for the result: which limit, and its value."""
    name, value = {
        "memory": ("memory", f"{limits.memory_mb} MiB of address space per process"),
        "processes": ("process", f"{limits.processes} processes"),
        "file size": ("file size", f"{limits.file_size_mb} MiB per file"),
        "cpu time": ("CPU time", f"{limits.cpu_seconds} s of CPU per process"),
    }[limit]
    if certain:
        return f"stopped by the sandbox's {name} limit ({value})"
    return f"probably stopped by the sandbox's {name} limit ({value}): the output shows the error it causes"


def process_limit_available() -> bool:
    """Whether a sandbox's process limit is enforced here (doctor, tests)."""
    if nproc_enforced():
        return True
    cgroup = PidsCgroup.create(1)
    if cgroup is None:
        return False
    cgroup.remove()
    return True
