"""Our diagnostics: those of failing terminal commands and those of reviews, by file.

One store owns both, publishes them together for a file, and moves them with the
text when the user edits (until the next run or review replaces them).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from qwen_lsp import wire as protocol
from qwen_lsp.files import text_of
from qwen_lsp.lsp import convert as lsp_convert
from qwen_lsp.types import Task

if TYPE_CHECKING:
    from qwen_lsp.lsp.server import QwenLanguageServer


@dataclass
class TerminalRun:
    """The diagnostics one failing command produced, until it succeeds or the lines change."""

    key: str
    command: str
    cwd: str  # workspace-relative
    exit_code: int
    output: str
    diagnostics: dict[str, list[types.Diagnostic]] = field(default_factory=dict)  # by file system path


class DiagnosticStore:
    """Terminal runs and review findings, by file system path."""

    def __init__(self, server: QwenLanguageServer) -> None:
        self.server = server
        self.runs: dict[str, TerminalRun] = {}
        self.review: dict[str, list[types.Diagnostic]] = {}  # by file system path
        self.comments: dict[str, list[types.Diagnostic]] = {}  # AI comments of open buffers (lsp/comments.py)

    def publish(self, path: str) -> None:
        diagnostics = self.of_runs(path) + self.review.get(path, []) + self.comments.get(path, [])
        uri = from_fs_path(path)
        if uri:
            self.server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))

    def of_runs(self, path: str) -> list[types.Diagnostic]:
        """The diagnostics failing terminal commands left on `path`."""
        return [d for run in self.runs.values() for d in run.diagnostics.get(path, [])]

    def set_review(self, path: str, diagnostics: list[types.Diagnostic]) -> None:
        """A review's findings replace the previous review's for that file."""
        self.review[path] = diagnostics
        self.publish(path)

    async def terminal_output(self, params: protocol.TerminalOutput) -> None:
        """A command finished: its failure becomes diagnostics; a success (or a run that now
        points nowhere) clears what the same command left before."""
        folders = self.server.folders
        cwd = Path(params.cwd) if os.path.isabs(params.cwd) else None
        root = folders.root_for(cwd) if cwd else (folders.roots() or [Path.cwd()])[0]
        cwd = cwd or (root / params.cwd)
        try:
            cwd_rel = cwd.relative_to(root).as_posix()
        except ValueError:
            cwd_rel = ""
        cwd_rel = "" if cwd_rel == "." else cwd_rel
        key = hashlib.sha256(f"{root}\0{cwd_rel}\0{params.command.strip()}".encode()).hexdigest()[:16]
        old = self.runs.pop(key, None)
        touched = set(old.diagnostics) if old else set()
        if params.exit_code != 0:
            workspace = self.server.workspace
            buffers = {Path(d.path): d.source for d in list(workspace.text_documents.values())}

            def convert() -> dict[str, list[types.Diagnostic]]:  # a thread: parsing may walk the workspace
                # Imported at the first terminal run, not at start-up: the output parsers' ~50 ms of regexes.
                from qwen_lsp.context.frames import parse_output

                frames = parse_output(params.output, cwd=cwd, workspace=root, command=params.command)
                data = protocol.DiagnosticData(run=key, command=params.command, exit_code=params.exit_code, cwd=cwd_rel)
                by_uri = lsp_convert.frames_to_diagnostics(
                    frames, root, lambda p: buffers[p] if p in buffers else text_of(p),
                    codec=workspace.position_codec, data=data.dump(),
                )
                return {to_fs_path(uri) or uri: diags for uri, diags in by_uri.items()}

            run = TerminalRun(key, params.command, cwd_rel, params.exit_code, params.output, await asyncio.to_thread(convert))
            if run.diagnostics:
                self.runs[key] = run
            touched |= set(run.diagnostics)
        for path in sorted(touched):
            self.publish(path)
        if key in self.runs:  # every diagnostic of the run is one task: "make the command pass"
            task = Task.for_command(params.command, params.exit_code, params.output, cwd_rel)
            self.server.fixes.prefetch(task, root, at_once=True)

    def forget_file(self, path: str) -> None:
        """A closed file changed on disk: its terminal diagnostics point at lines that may have
        moved, so they go until the command runs again."""
        if any(path in run.diagnostics for run in self.runs.values()):
            for run in self.runs.values():
                run.diagnostics.pop(path, None)
            self.publish(path)

    def did_change(self, params: types.DidChangeTextDocumentParams) -> None:
        """Move our diagnostics with the edit, so they stay on the lines they were about."""
        path = to_fs_path(params.text_document.uri)
        if path is None:
            return
        changed = False
        stores = [run.diagnostics for run in self.runs.values()] + [self.review]
        for store in stores:
            before = store.get(path)
            if not before:
                continue
            after = before
            for change in params.content_changes:
                after = lsp_convert.adjust_for_change(after, change)
            if after != before:
                store[path] = after
                changed = True
        if changed:
            self.publish(path)
