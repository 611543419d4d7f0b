"""Validation of an overlay: changed files still parse (tree-sitter: no new ERROR
nodes) and the verify command passes in a temporary copy of the workspace, inside
the sandbox (engine/sandbox.py); without a sandbox the command does not run at all."""

from __future__ import annotations

import asyncio
import os
import signal
import tempfile
import time
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from qwen_lsp.context.treesitter import language_for, parser_for
from qwen_lsp.types import CheckOutcome, FileChange
from qwen_lsp.engine import sandbox
from qwen_lsp.engine.overlay import Overlay
from qwen_lsp.engine.sandbox_limits import PidsCgroup, SandboxLimits, describe, pids_cgroup_wanted, stopped_by

# A failing command's output as the model gets it back: its first and last bytes.
OUTPUT_HEAD = 1000
OUTPUT_TAIL = 4000


PARSE_BUDGET_SECONDS = 1.0  # per parse; see error_count
_CHUNK = 16_384


def error_count(text: str, language: str, budget_seconds: float = PARSE_BUDGET_SECONDS) -> int | None:
    """ERROR/MISSING nodes in the parse tree; None when there is no grammar or parsing
    takes longer than `budget_seconds`.

    tree-sitter's error recovery is superlinear on long runs of broken syntax (4,000 lines
    of `/* c` in JavaScript take 10 s, `#` comments in Lua 1.5 s), so the parse is stopped
    at the budget and the file counts as not checked rather than holding up the fix."""
    parser = parser_for(language)
    if parser is None:
        return None
    data = text.encode("utf-8", "surrogateescape")
    started = time.perf_counter()
    try:
        # Only the callable-source form of parse() reports progress, so only it can be stopped.
        tree = parser.parse(
            lambda offset, _point: data[offset : offset + _CHUNK],
            progress_callback=lambda *_: time.perf_counter() - started > budget_seconds,
        )
    except ValueError:  # stopped by the progress callback
        parser.reset()  # else the next parse would resume this one
        return None
    count, stack = 0, [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            count += 1
        elif node.has_error:
            stack.extend(node.children)
    return count


@lru_cache(maxsize=16)
def _original_error_count(text: str, language: str, budget_seconds: float) -> int | None:
    return error_count(text, language, budget_seconds)  # the original is checked every round: parse it once


def check_parse(changes: list[FileChange], budget_seconds: float = PARSE_BUDGET_SECONDS) -> list[CheckOutcome]:
    outcomes = []
    for change in changes:
        language = language_for(change.path)
        after = error_count(change.updated, language, budget_seconds) if language else None
        if language is None or after is None:
            continue  # no grammar for this file, or too slow to parse: nothing checked, nothing claimed
        before = 0 if change.created else _original_error_count(change.original, language, budget_seconds)
        if before is None:
            continue
        ok = after <= before
        detail = "" if ok else f"{change.path}: the edit introduced {after - before} syntax error(s) ({language})"
        outcomes.append(CheckOutcome(name=f"parses: {change.path}", ok=ok, detail=detail))
    return outcomes


async def run_verify(
    overlay: Overlay, command: str, cwd: str | None, timeout: float, *, bwrap: str,
    limits: SandboxLimits | None = None, hide: Iterable[Path] = (), copy_file_max_bytes: int = 0,
) -> CheckOutcome:
    """Run `command` in the sandbox, on a temporary copy of the workspace with the overlay applied,
    under `limits` (defaults when None), with `hide` (qwen-lsp's own directories) covered."""
    limits = limits or SandboxLimits()
    with tempfile.TemporaryDirectory(prefix="qwen-verify-") as tmp:
        copy, not_copied = overlay.materialize(Path(tmp) / "ws", copy_file_max_bytes)
        workdir = copy / cwd if cwd and (copy / cwd).is_dir() else copy
        jail = sandbox.build(bwrap, command, scratch=Path(tmp), workdir=workdir, workspace=overlay.root,
                             hide=hide, limits=limits)
        cgroup = PidsCgroup.create(limits.processes) if limits.processes and pids_cgroup_wanted() else None
        try:
            outcome = await _run(jail, cgroup, timeout, limits)
        finally:
            if cgroup is not None:
                await cgroup.close()
    outcome.name, outcome.not_copied = command, not_copied
    if not_copied and not outcome.ok:
        outcome.detail += "\n(not in the verification copy: " + ", ".join(not_copied) + ")"
    return outcome


async def _run(jail: sandbox.SandboxCommand, cgroup: PidsCgroup | None, timeout: float,
               limits: SandboxLimits) -> CheckOutcome:
    proc = await asyncio.create_subprocess_exec(
        *(cgroup.wrap(jail.argv) if cgroup else jail.argv),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        stdin=asyncio.subprocess.DEVNULL,
        start_new_session=True,  # so a timeout can kill the whole process group
        env=jail.env,
    )
    output = HeadTail(OUTPUT_HEAD, OUTPUT_TAIL)
    watch = asyncio.create_task(_watch_forks(cgroup, proc)) if cgroup else None
    try:
        await asyncio.wait_for(_drain(proc, output), timeout)
    except (TimeoutError, asyncio.CancelledError) as exc:
        _kill_group(proc)  # bwrap's PID namespace takes everything it started with it
        await proc.wait()
        if isinstance(exc, asyncio.CancelledError):
            raise
        return CheckOutcome(name="", ok=False, detail=f"timed out after {timeout:.0f}s")
    finally:
        if watch is not None:
            watch.cancel()
    text = output.text()
    if proc.returncode == 0:
        return CheckOutcome(name="", ok=True)
    stopped = stopped_by(proc.returncode, text, cgroup.refused_forks() if cgroup else 0)
    if stopped is None:
        return CheckOutcome(name="", ok=False, detail=text)
    limit, certain = stopped
    return CheckOutcome(name="", ok=False, stopped_by=limit, detail=f"{describe(limit, limits, certain)}\n{text}")


async def _drain(proc: asyncio.subprocess.Process, output: HeadTail) -> None:
    assert proc.stdout is not None
    while chunk := await proc.stdout.read(65536):
        output.feed(chunk)
    await proc.wait()


async def _watch_forks(cgroup: PidsCgroup, proc: asyncio.subprocess.Process) -> None:
    """A fork bomb keeps retrying at the limit until the timeout: stop it at its first refused fork."""
    while proc.returncode is None:
        await asyncio.sleep(0.1)
        if cgroup.refused_forks():
            _kill_group(proc)
            return


class HeadTail:
    """The first `head` and last `tail` bytes of a stream, and how much was between them: a
    command printing gigabytes costs no more memory than a short one."""

    def __init__(self, head: int, tail: int) -> None:
        self.head, self.tail = bytearray(), bytearray()
        self._head_max, self._tail_max = head, tail
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        room = self._head_max - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > self._tail_max:
            cut = len(self.tail) - self._tail_max
            self.dropped += cut
            del self.tail[:cut]

    def text(self) -> str:
        head = self.head.decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
        if not self.dropped:
            return head + tail
        return f"{head}\n[... {self.dropped} bytes of output left out ...]\n{tail}"


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
