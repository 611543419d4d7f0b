"""Validation of an overlay: changed files still parse (tree-sitter: no new ERROR
nodes) and the verify command passes in a temporary copy of the workspace, inside
the sandbox (engine/sandbox.py); without a sandbox the command does not run at all."""

from __future__ import annotations

import asyncio
import os
import signal
import tempfile
import time
from functools import lru_cache
from pathlib import Path

from qwen_lsp.context.treesitter import language_for, parser_for
from qwen_lsp.types import CheckOutcome, FileChange
from qwen_lsp.engine import sandbox
from qwen_lsp.engine.overlay import Overlay

OUTPUT_TAIL = 4000  # characters of a failing command's output the model gets back


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
    overlay: Overlay, command: str, cwd: str | None, timeout: float, *, bwrap: str
) -> CheckOutcome:
    """Run `command` in the sandbox, on a temporary copy of the workspace with the overlay applied."""
    with tempfile.TemporaryDirectory(prefix="qwen-verify-") as tmp:
        copy = overlay.materialize(Path(tmp) / "ws")
        workdir = copy / cwd if cwd and (copy / cwd).is_dir() else copy
        jail = sandbox.build(bwrap, command, scratch=Path(tmp), workdir=workdir, workspace=overlay.root)
        proc = await asyncio.create_subprocess_exec(
            *jail.argv,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            stdin=asyncio.subprocess.DEVNULL,
            start_new_session=True,  # so a timeout can kill the whole process group
            env=jail.env,
        )
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        except (TimeoutError, asyncio.CancelledError) as exc:
            _kill_group(proc)  # bwrap's PID namespace takes everything it started with it
            await proc.wait()
            if isinstance(exc, asyncio.CancelledError):
                raise
            return CheckOutcome(name=command, ok=False, detail=f"timed out after {timeout:.0f}s")
        text = out.decode("utf-8", "replace")
        detail = text[-OUTPUT_TAIL:] if proc.returncode else ""
        return CheckOutcome(name=command, ok=proc.returncode == 0, detail=detail)


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
