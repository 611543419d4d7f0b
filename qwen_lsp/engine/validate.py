"""Validation of an overlay: changed files still parse (tree-sitter: no new ERROR
nodes) and the verify command passes in a temporary copy of the workspace."""

from __future__ import annotations

import asyncio
import os
import signal
import tempfile
from pathlib import Path

from qwen_lsp.context.treesitter import language_for, parser_for
from qwen_lsp.types import CheckOutcome, FileChange
from qwen_lsp.engine.overlay import Overlay

OUTPUT_TAIL = 4000  # characters of a failing command's output the model gets back


def error_count(text: str, language: str) -> int | None:
    """ERROR/MISSING nodes in the parse tree; None when there is no grammar."""
    parser = parser_for(language)
    if parser is None:
        return None
    tree = parser.parse(text.encode("utf-8", "surrogateescape"))
    count, stack = 0, [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            count += 1
        elif node.has_error:
            stack.extend(node.children)
    return count


def check_parse(changes: list[FileChange]) -> list[CheckOutcome]:
    outcomes = []
    for change in changes:
        language = language_for(change.path)
        after = error_count(change.updated, language) if language else None
        if language is None or after is None:
            continue  # no grammar for this file: nothing to check
        before = 0 if change.created else error_count(change.original, language) or 0
        ok = after <= before
        detail = "" if ok else f"{change.path}: the edit introduced {after - before} syntax error(s) ({language})"
        outcomes.append(CheckOutcome(name=f"parses: {change.path}", ok=ok, detail=detail))
    return outcomes


async def run_verify(overlay: Overlay, command: str, cwd: str | None, timeout: float) -> CheckOutcome:
    """Run `command` in a temporary copy of the workspace with the overlay applied."""
    with tempfile.TemporaryDirectory(prefix="qwen-verify-") as tmp:
        sandbox = overlay.materialize(Path(tmp) / "ws")
        workdir = sandbox / cwd if cwd else sandbox
        proc = await asyncio.create_subprocess_shell(
            command,
            cwd=workdir if workdir.is_dir() else sandbox,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            stdin=asyncio.subprocess.DEVNULL,
            start_new_session=True,  # so a timeout can kill the whole process group
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        except (TimeoutError, asyncio.CancelledError) as exc:
            _kill_group(proc)
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
