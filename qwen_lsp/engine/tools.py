"""The patch loop's tools: OpenAI function schemas and their implementations
over the in-memory overlay. Every failure is returned as text for the model,
never raised, so it can correct itself on the next turn."""

from __future__ import annotations

import fnmatch
import json
import re
from typing import Any

from qwen_lsp.engine import risk
from qwen_lsp.engine.edits import EditError, apply_edit
from qwen_lsp.types import ShellSuggestion
from qwen_lsp.engine.overlay import Overlay, PathOutsideWorkspace

READ_LIMIT = 400  # lines per read_file call
SEARCH_LIMIT = 50  # matches per search_code call


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


_STR = {"type": "string"}
_INT = {"type": "integer"}

TOOLS: list[dict[str, Any]] = [
    _fn("read_file", "Read a workspace file. Lines come numbered as `N|text`; the `N|` prefix is not part of the file.",
        {"path": _STR, "start_line": _INT, "end_line": _INT}, ["path"]),
    _fn("search_code", "Search workspace files with a Python regular expression; optional glob such as `*.py`.",
        {"pattern": _STR, "glob": _STR}, ["pattern"]),
    _fn("edit_file", "Replace old_string with new_string in a file. old_string must match the file uniquely; "
        "copy it from read_file without the `N|` prefixes and include enough lines to be unique.",
        {"path": _STR, "old_string": _STR, "new_string": _STR}, ["path", "old_string", "new_string"]),
    _fn("create_file", "Create a new file with the given content.", {"path": _STR, "content": _STR}, ["path", "content"]),
    _fn("suggest_command", "Suggest a shell command for the user to run (you cannot run it); "
        "e.g. installing a missing package.", {"command": _STR, "reason": _STR}, ["command", "reason"]),
    _fn("finish", "Call when the fix is complete; the change is then validated.", {"summary": _STR}, ["summary"]),
]


class ToolBox:
    """Runs tool calls against one overlay and remembers suggestions and the finish call."""

    def __init__(self, overlay: Overlay) -> None:
        self.overlay = overlay
        self.suggestions: list[ShellSuggestion] = []
        self.finished: str | None = None
        self.edits_applied = 0

    def call(self, name: str, arguments: str | dict[str, Any]) -> str:
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments)
        except ValueError as exc:
            return f"Error: the arguments of {name} are not valid JSON ({exc}). Send a JSON object."
        handler = getattr(self, f"_{name}", None)
        if handler is None or name not in {t["function"]["name"] for t in TOOLS}:
            return f"Error: unknown tool {name!r}. Available: " + ", ".join(t["function"]["name"] for t in TOOLS)
        try:
            return handler(**args)
        except TypeError as exc:
            return f"Error: wrong arguments for {name}: {exc}"
        except PathOutsideWorkspace as exc:
            return f"Error: {exc}. Only files inside the workspace can be read or changed."
        except OSError as exc:  # the file system said no (the reader already skips unreadable files)
            return f"Error: {name} failed: {exc}"

    def _read_file(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        text = self.overlay.read(path)
        if text is None:
            return f"Error: {path} does not exist or cannot be read as UTF-8 text."
        lines = text.splitlines()
        start = max(1, start_line or 1)
        end = min(len(lines), end_line or start + READ_LIMIT - 1, start + READ_LIMIT - 1)
        body = "\n".join(f"{n}|{lines[n - 1]}" for n in range(start, end + 1))
        more = f"\n[{len(lines) - end} more lines; read from line {end + 1}]" if end < len(lines) else ""
        return f"{self.overlay.relpath(path)} (lines {start}-{end} of {len(lines)}):\n{body}{more}"

    def _search_code(self, pattern: str, glob: str | None = None) -> str:
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            return f"Error: bad regular expression: {exc}"
        hits: list[str] = []
        for rel in self.overlay.files():
            if glob and not fnmatch.fnmatch(rel, glob) and not fnmatch.fnmatch(rel.rsplit("/", 1)[-1], glob):
                continue
            text = self.overlay.read(rel) or ""
            for n, line in enumerate(text.splitlines(), 1):
                if regex.search(line):
                    hits.append(f"{rel}:{n}: {line.strip()[:200]}")
                    if len(hits) >= SEARCH_LIMIT:
                        return "\n".join(hits) + f"\n[stopped at {SEARCH_LIMIT} matches]"
        return "\n".join(hits) or "No matches."

    def _edit_file(self, path: str, old_string: str, new_string: str) -> str:
        text = self.overlay.read(path)
        if text is None:
            return f"Error: {path} does not exist. Use create_file for a new file."
        try:
            outcome = apply_edit(text, old_string, new_string, path=path)
        except EditError as exc:
            return f"Error: {exc}"
        self.overlay.write(path, outcome.text)
        self.edits_applied += 1
        how = "" if outcome.strategy == "exact" else f" (matched {outcome.strategy}, similarity {outcome.similarity:.2f})"
        return f"Edited {self.overlay.relpath(path)} lines {outcome.start_line}-{outcome.end_line}{how}."

    def _create_file(self, path: str, content: str) -> str:
        if self.overlay.read(path) is not None:
            return f"Error: {path} already exists. Use edit_file to change it."
        self.overlay.write(path, content)
        self.edits_applied += 1
        return f"Created {self.overlay.relpath(path)} ({len(content.splitlines())} lines)."

    def _suggest_command(self, command: str, reason: str = "") -> str:
        suggested = risk.suggestion(command.strip(), reason)
        self.suggestions.append(suggested)
        return f"Recorded for the user to decide (risk: {suggested.risk.value}). It has not been run."

    def _finish(self, summary: str = "") -> str:
        self.finished = summary or "done"
        return "Finishing; validating the change."
