"""What `qwen.server.fix` fixes at the cursor or selection: our diagnostic there, else one the
editor has there from any server (the client sends them: the server cannot see other servers'),
else the code itself ("fix what is wrong on these lines")."""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from qwen_lsp.types import Task, TaskKind


def overlapping(diagnostics: list[types.Diagnostic], first: int, last: int) -> list[types.Diagnostic]:
    """Pure: the diagnostics touching lines first..last (0-based, inclusive), errors first."""
    hits = [d for d in diagnostics if d.range.start.line <= last and d.range.end.line >= first]
    return sorted(hits, key=lambda d: d.severity or types.DiagnosticSeverity.Error)


def editor_diagnostics(raw: list[dict[str, Any]] | None, converter: Any) -> list[types.Diagnostic]:
    """The client's diagnostics, skipping any that do not parse as LSP Diagnostics."""
    out = []
    for item in raw or []:
        try:
            out.append(converter.structure(item, types.Diagnostic))
        except Exception:  # noqa: BLE001 - a malformed entry from the client costs only itself
            continue
    return out


def code_task(rel: str, first: int, last: int) -> Task:
    """Pure: no diagnostic at all: ask for the code on these lines (1-based) to be fixed."""
    where = f"line {first}" if first == last else f"lines {first}-{last}"
    return Task(kind=TaskKind.instruction, path=rel, start_line=first, end_line=last,
                description=f"Fix what is wrong in {rel}, {where} (no diagnostic reports it; read the code).")
