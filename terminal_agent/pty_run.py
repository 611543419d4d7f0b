"""Run a command under a pseudo-terminal: the user sees its output live (colors,
progress bars, prompts all work because the child thinks it is on a terminal)
and qfix keeps a copy of what was printed for the model.

Stdin is forwarded in raw mode, so Ctrl-C reaches the child's own terminal and
interrupts the child, not qfix.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import pty
import re
import select
import signal
import sys
import termios
import tty
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

CAPTURE_LIMIT = 256 * 1024  # bytes kept from the end of the output; errors are at the end
_STOPS = {signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL}

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[@-Z\\-_]")


@dataclass
class Finished:
    exit_code: int  # the child's; 128+N when killed by signal N, like a shell reports it
    output: str  # what it printed, as plain text (no escape sequences)


def run_in_pty(argv: Sequence[str], cwd: Path, *, echo_fd: int = 1, env: dict[str, str] | None = None) -> Finished:
    """Run `argv` in `cwd` on a new pty, copying its output to `echo_fd` as it comes."""
    pid, master = pty.fork()
    if pid == 0:  # the child: its stdin/stdout/stderr are the pty
        try:
            os.chdir(cwd)
            os.execvpe(argv[0], list(argv), env if env is not None else os.environ)
        except OSError as exc:
            os.write(2, f"qfix: cannot run {argv[0]}: {exc.strerror}\n".encode())
        os._exit(127)

    captured = bytearray()
    _copy_window_size(master)
    previous = signal.signal(signal.SIGWINCH, lambda *_: _copy_window_size(master))
    try:
        with _raw_stdin() as stdin_fd:
            _pump(master, stdin_fd, echo_fd, captured)
    finally:
        signal.signal(signal.SIGWINCH, previous)
        os.close(master)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return Finished(exit_code=128 - code if code < 0 else code, output=plain_text(bytes(captured)))


def nothing_to_fix(exit_code: int) -> bool:
    """It passed, or someone stopped it (Ctrl-C, kill): not a failure to fix. A crash
    (SIGSEGV, SIGABRT: 139, 134) is one."""
    return exit_code == 0 or exit_code - 128 in _STOPS


def run_shell_command(command: str, cwd: Path, shell: str | None = None, *, echo_fd: int = 1) -> Finished:
    """A command line as the user typed it, run by their shell (aliases aside)."""
    shell = shell or os.environ.get("SHELL") or "/bin/sh"
    return run_in_pty([shell, "-c", command], cwd, echo_fd=echo_fd)


def _pump(master: int, stdin_fd: int | None, echo_fd: int, captured: bytearray) -> None:
    """Copy child output to the screen and the capture, and keystrokes to the child, until it closes the pty."""
    sources = [master] + ([stdin_fd] if stdin_fd is not None else [])
    while True:
        try:
            ready, _, _ = select.select(sources, [], [])
        except InterruptedError:  # SIGWINCH
            continue
        if master in ready:
            try:
                data = os.read(master, 65536)
            except OSError as exc:
                if exc.errno != errno.EIO:  # EIO: every copy of the slave side is closed
                    raise
                data = b""
            if not data:
                return
            _write_all(echo_fd, data)
            captured += data
            if len(captured) > CAPTURE_LIMIT:
                del captured[: len(captured) - CAPTURE_LIMIT]
        if stdin_fd is not None and stdin_fd in ready:
            data = os.read(stdin_fd, 4096)
            if not data:  # our stdin ended: give the child an end-of-file too
                sources.remove(stdin_fd)
                data = b"\x04"
            _write_all(master, data)


@contextlib.contextmanager
def _raw_stdin() -> Iterator[int | None]:
    """Our stdin in raw mode while the child runs (keys go to it unprocessed); None without a stdin."""
    try:
        fd = sys.stdin.fileno()
        os.fstat(fd)
    except (AttributeError, ValueError, OSError):
        yield None
        return
    if not os.isatty(fd):
        yield fd
        return
    saved = termios.tcgetattr(fd)
    tty.setraw(fd)
    try:
        yield fd
    finally:
        termios.tcsetattr(fd, termios.TCSAFLUSH, saved)


def _copy_window_size(master: int) -> None:
    for fd in (0, 1, 2):
        try:
            size = fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8)
        except OSError:
            continue
        with contextlib.suppress(OSError):
            fcntl.ioctl(master, termios.TIOCSWINSZ, size)
        return


def _write_all(fd: int, data: bytes) -> None:
    while data:
        try:
            written = os.write(fd, data)
        except OSError as exc:
            if exc.errno == errno.EIO:
                return  # the child went away mid-write
            raise
        data = data[written:]


def plain_text(raw: bytes) -> str:
    """Terminal output as the text a person read: escapes removed, carriage-return
    overwrites (progress bars) resolved to what was left on the line."""
    text = _ANSI.sub("", raw.decode("utf-8", "replace"))
    return "\n".join(line.rstrip("\r").rsplit("\r", 1)[-1] for line in text.split("\n"))
