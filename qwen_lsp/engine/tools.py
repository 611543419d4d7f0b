"""The patch loop's tools: OpenAI function schemas and their implementations
over the in-memory overlay. Every failure is returned as text for the model,
never raised, so it can correct itself on the next turn: arguments are checked
by one pydantic model per tool (tool_args.py) before a tool runs."""

from __future__ import annotations

import fnmatch
import logging
import os
import stat
from typing import Any

import re2
from pydantic import ValidationError

from qwen_lsp.engine import risk
from qwen_lsp.engine.edits import EditError, apply_edit
from qwen_lsp.engine.tool_args import ARGUMENTS, describe_errors, loads_arguments
from qwen_lsp.llm.dialect import coerce_native
from qwen_lsp.types import ShellSuggestion
from qwen_lsp.engine.overlay import Overlay, PathOutsideWorkspace, UnwritablePath
from qwen_lsp.engine.protected import ProtectedPath
from qwen_lsp.files import is_binary
from qwen_lsp.settings import Limits

log = logging.getLogger(__name__)

READ_LIMIT = 400  # lines per read_file call
LINE_MAX_BYTES = 4_000  # of one line of a file too large to read whole; the rest of the line is skipped

# RE2 runs in time linear in the text: no pattern can backtrack for hours. It refuses what would
# need backtracking (backreferences, lookaround), which the model is told so it can rephrase.
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


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
    _fn("search_code", "Search workspace files line by line with an RE2 regular expression (no backreferences "
        "or lookaround); optional glob such as `*.py`.",
        {"pattern": _STR, "glob": _STR}, ["pattern"]),
    _fn("edit_file", "Replace old_string with new_string in a file. old_string must match the file uniquely; "
        "copy it from read_file without the `N|` prefixes and include enough lines to be unique.",
        {"path": _STR, "old_string": _STR, "new_string": _STR}, ["path", "old_string", "new_string"]),
    _fn("create_file", "Create a new file with the given content.", {"path": _STR, "content": _STR}, ["path", "content"]),
    _fn("suggest_command", "Suggest a shell command for the user to run (you cannot run it); "
        "e.g. installing a missing package.", {"command": _STR, "reason": _STR}, ["command", "reason"]),
    _fn("finish", "Call when the fix is complete; the change is then validated.", {"summary": _STR}, ["summary"]),
]


_PROPERTIES: dict[str, dict[str, Any]] = {t["function"]["name"]: t["function"]["parameters"]["properties"] for t in TOOLS}


def size_error(limits: Limits, path: str, new_text: str | None, updated: str | None) -> str | None:
    """Why an edit is refused for its size (the new text of one edit, or the whole file after it), or None."""
    if new_text is not None and (n := len(new_text.encode("utf-8", "surrogateescape"))) > limits.edit_max_bytes:
        return (f"Error: this edit to {path} adds {n} bytes; one edit may add at most {limits.edit_max_bytes}. "
                "Make the change in smaller edits.")
    if updated is not None and (n := len(updated.encode("utf-8", "surrogateescape"))) > limits.file_max_bytes:
        return f"Error: {path} would be {n} bytes after this edit; files may be at most {limits.file_max_bytes}."
    return None


class ToolBox:
    """Runs tool calls against one overlay and remembers suggestions and the finish call."""

    def __init__(self, overlay: Overlay, limits: Limits | None = None) -> None:
        self.overlay = overlay
        self.limits = limits or Limits()
        # A file the fix could not write back (over file_max_bytes) is never read whole: read_file
        # shows it in parts, streamed (a git-ignored dataset of gigabytes would take the process down).
        overlay.read_max_bytes = self.limits.file_max_bytes
        self.suggestions: list[ShellSuggestion] = []
        self.finished: str | None = None
        self.edits_applied = 0

    def call(self, name: str, arguments: str | dict[str, Any] | None) -> str:
        """The tool's answer for the model; never raises, whatever the model sent."""
        try:
            answer = self._call(name, arguments)
        except Exception as exc:  # noqa: BLE001 - a bug of ours must not end the fix: tell the model, log it
            log.exception("tool %s failed", name)
            answer = f"Error: {name} failed ({type(exc).__name__}: {exc}). Try another way."
        # Answers quote the workspace and the model's input: keep them valid Unicode for the next request.
        return answer.encode("utf-8", "replace").decode("utf-8")

    def _call(self, name: str, arguments: str | dict[str, Any] | None) -> str:
        model = ARGUMENTS.get(name) if isinstance(name, str) else None
        if model is None:
            return f"Error: unknown tool {name!r}. Available: " + ", ".join(t["function"]["name"] for t in TOOLS)
        try:  # a number or object sent for a string parameter becomes its JSON text, as written
            if isinstance(arguments, str | bytes):
                loads_arguments(arguments)  # ValueError (never RecursionError) when not JSON or nested too deep
                args = coerce_native(arguments, _PROPERTIES[name])
            else:
                args = arguments
        except ValueError as exc:
            return f"Error: the arguments of {name} are not valid JSON ({exc}). Send a JSON object."
        if args is None:
            args = {}
        if not isinstance(args, dict):
            return f"Error: the arguments of {name} must be a JSON object, not {type(args).__name__}."
        try:
            checked = model.model_validate(args)
        except ValidationError as exc:
            return f"Error: wrong arguments for {name}: {describe_errors(exc)}"
        handler = getattr(self, f"_{name}")
        try:
            return handler(**checked.model_dump())
        except PathOutsideWorkspace as exc:
            return f"Error: {exc}. Only files inside the workspace can be read or changed."
        except ProtectedPath as exc:
            return f"Error: {exc}"
        except UnwritablePath as exc:
            return f"Error: {exc}."
        except OSError as exc:
            return f"Error: {exc.strerror or exc} ({getattr(exc, 'filename', None) or name})."

    def _read_file(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        text = self.overlay.read(path)
        if text is None and (size := self.overlay.too_large(self.overlay.relpath(path))) is not None:
            return self._read_part(self.overlay.relpath(path), size, start_line, end_line)
        if text is None:
            return f"Error: {path} does not exist or cannot be read as text."
        rel = self.overlay.relpath(path)
        note = f"\n[{self.overlay.read_only[rel]}]" if rel in self.overlay.read_only else ""
        lines = text.splitlines()
        start = max(1, start_line or 1)
        end = min(len(lines), end_line or start + READ_LIMIT - 1, start + READ_LIMIT - 1)
        body = "\n".join(f"{n}|{lines[n - 1]}" for n in range(start, end + 1))
        more = f"\n[{len(lines) - end} more lines; read from line {end + 1}]" if end < len(lines) else ""
        return f"{rel} (lines {start}-{end} of {len(lines)}):\n{body}{more}{note}"

    def _read_part(self, rel: str, size: int, start_line: int | None, end_line: int | None) -> str:
        """Lines of a file too large to read whole, streamed: its head sniffed for binary first, each
        line cut at LINE_MAX_BYTES, and no more than search_total_max_bytes read to reach them."""
        start = max(1, start_line or 1)
        end = max(start, min(end_line or start + READ_LIMIT - 1, start + READ_LIMIT - 1))
        budget = self.limits.search_total_max_bytes
        lines: list[str] = []
        number, scanned = 0, 0
        with open(self.overlay.root / rel, "rb") as fh:
            if is_binary(fh.read(8192)):
                return f"Error: {rel} is a binary file of {size} bytes; it cannot be read as text."
            fh.seek(0)
            while number < end and scanned < budget:
                piece = fh.readline(LINE_MAX_BYTES)
                if not piece:
                    break
                scanned += len(piece)
                cut = False
                tail = piece
                while not tail.endswith(b"\n") and scanned < budget:  # an over-long line: the rest is skipped
                    tail = fh.readline(LINE_MAX_BYTES)
                    if not tail:
                        break
                    scanned += len(tail)
                    cut = True
                number += 1
                if number >= start:
                    text = piece.rstrip(b"\r\n").decode("utf-8", "replace")
                    lines.append(f"{number}|{text}" + (" [line cut]" if cut else ""))
        stopped = f"; stopped after reading {scanned // 1_000_000} MB" if scanned >= budget else ""
        shown = f"lines {start}-{number}" if lines else f"no line {start}" + ("" if stopped else f": it has {number} lines")
        return (f"{rel} ({shown}; the file has {size} bytes, too large to read whole or to edit: over "
                f"{self.limits.file_max_bytes}{stopped}):\n" + "\n".join(lines)
                + (f"\n[read more with start_line={number + 1}]" if lines and number == end else ""))

    def _search_code(self, pattern: str, glob: str | None = None) -> str:
        limits = self.limits
        if len(pattern) > limits.search_pattern_max_chars:
            return f"Error: the pattern has {len(pattern)} characters; use at most {limits.search_pattern_max_chars}."
        try:
            regex = re2.compile(pattern, _RE2_OPTIONS)
            # Whole-file prefilter: most files have no match. (\A and \z mean "line start/end" only per line.)
            prefilter = None if ("\\A" in pattern or "\\z" in pattern) else re2.compile("(?m)" + pattern, _RE2_OPTIONS)
        except re2.error as exc:
            reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
            return (f"Error: search_code refused the pattern ({reason}). It uses RE2 syntax: no backreferences or "
                    "lookaround. Search for a simpler pattern or a plain substring instead.")
        hits: list[str] = []
        skipped: list[str] = []
        scanned = 0
        for rel in self.overlay.files():
            if glob and not fnmatch.fnmatch(rel, glob) and not fnmatch.fnmatch(rel.rsplit("/", 1)[-1], glob):
                continue
            size = self._searchable_size(rel)
            if size is None:
                continue
            if size > limits.search_file_max_bytes:
                skipped.append(rel)
                continue
            if scanned + size > limits.search_total_max_bytes:
                return self._search_report(hits, skipped, f"stopped after reading {scanned // 1_000_000} MB; narrow the glob")
            try:
                text = self.overlay.read(rel) or ""
            except PathOutsideWorkspace:
                continue  # e.g. a symlink out of the workspace: not ours to read
            scanned += size
            if not text.isascii():
                text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")  # RE2 needs valid UTF-8
            if prefilter is not None and not prefilter.search(text):
                continue
            for n, line in enumerate(text.splitlines(), 1):
                if regex.search(line):
                    hits.append(f"{rel}:{n}: {line.strip()[:200]}")
                    if len(hits) >= limits.search_max_matches:
                        return self._search_report(hits, skipped, f"stopped at {limits.search_max_matches} matches")
        return self._search_report(hits, skipped, None)

    def _searchable_size(self, rel: str) -> int | None:
        """Bytes of a regular file (None: a FIFO, device or dangling link, never opened)."""
        try:
            st = os.stat(self.overlay.root / rel)
        except OSError:
            text = self.overlay.read(rel)  # only in the overlay: created by this fix
            return None if text is None else len(text.encode("utf-8", "surrogateescape"))
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def _search_report(self, hits: list[str], skipped: list[str], stopped: str | None) -> str:
        lines = hits or ["No matches."]
        if skipped:
            shown = ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
            lines.append(f"[not searched, larger than {self.limits.search_file_max_bytes} bytes: {shown}; "
                         "read_file them in parts if needed]")
        if stopped:
            lines.append(f"[{stopped}]")
        return "\n".join(lines)

    def _edit_file(self, path: str, old_string: str, new_string: str) -> str:
        text = self.overlay.read(path)
        if text is None and (size := self.overlay.too_large(self.overlay.relpath(path))) is not None:
            return f"Error: {path} has {size} bytes; files over {self.limits.file_max_bytes} bytes are never edited."
        if text is None:
            return f"Error: {path} does not exist. Use create_file for a new file."
        if too_big := size_error(self.limits, path, new_string, None):
            return too_big
        try:
            outcome = apply_edit(text, old_string, new_string, path=path)
        except EditError as exc:
            return f"Error: {exc}"
        if too_big := size_error(self.limits, path, None, outcome.text):
            return too_big
        self.overlay.write(path, outcome.text)
        self.edits_applied += 1
        how = "" if outcome.strategy == "exact" else f" (matched {outcome.strategy}, similarity {outcome.similarity:.2f})"
        return f"Edited {self.overlay.relpath(path)} lines {outcome.start_line}-{outcome.end_line}{how}."

    def _create_file(self, path: str, content: str) -> str:
        if self.overlay.exists(path):
            return f"Error: {path} already exists. Use edit_file to change it."
        if too_big := size_error(self.limits, path, content, content):
            return too_big
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
