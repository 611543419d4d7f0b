"""Pure conversions between the engine's models and LSP types.

FixResult -> WorkspaceEdit (one annotated TextEdit per diff hunk, document
versions as read), frames -> Diagnostics (with the rest of the stack as
related information), and the code actions the server lists. No I/O here:
callers pass file text in.

Positions: LSP counts lines by "\\n", "\\r\\n" and "\\r" only (str.splitlines
also splits on form feeds and Unicode separators, which would shift lines),
and characters in the negotiated encoding (UTF-16 code units by default),
converted with pygls's PositionCodec.

Titles, labels and messages carry model text and program output: they pass
through qwen_lsp.sanitize (hidden characters shown), edit texts never do.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.uris import from_fs_path
from pygls.workspace import PositionCodec

from qwen_lsp import wire as protocol
from qwen_lsp.sanitize import model_words, one_line, visible
from qwen_lsp.types import FileChange, FixResult, ShellSuggestion, Validation

if TYPE_CHECKING:
    from qwen_lsp.context.frames import Frame

UTF16 = PositionCodec(types.PositionEncodingKind.Utf16)
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_PROBLEM_RE = re.compile(r"\b([A-Z]\w*(?:Error|Exception|Warning|Interrupt|Exit))\b")
_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}


@cache
def converter() -> Any:  # -> cattrs.Converter
    """lsprotocol's converter, built at first use (~40 ms the server's start does not need)."""
    return get_converter()


# --------------------------------------------------------------------------- text positions


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split where LSP splits them."""
    return _LINE_RE.findall(text)


def _position(lines: Sequence[str], line: int, codec: PositionCodec) -> types.Position:
    """Start of `line` (0-based); past the last line: the end of the text."""
    if line < len(lines):
        return types.Position(line=line, character=0)
    if lines and not lines[-1].endswith(("\n", "\r")):
        # No final line break: the end is the end of the last line, not the start of a next one.
        return types.Position(line=len(lines) - 1, character=codec.client_num_units(lines[-1]))
    return types.Position(line=len(lines), character=0)


def line_range(text: str, column: int | None, codec: PositionCodec) -> tuple[int, int]:
    """(start, end) characters, in client units, of one line's problem span:
    from the column (1-based code points) or the first non-blank, to the end of the line."""
    body = text.rstrip("\r\n")
    indent = len(body) - len(body.lstrip())
    start = min(column - 1, len(body)) if column and column > 0 else indent
    if start >= len(body):
        start = indent
    return codec.client_num_units(body[:start]), codec.client_num_units(body)


# --------------------------------------------------------------------------- hunks and edits


@dataclass(frozen=True)
class Hunk:
    start: int  # 0-based first line replaced in the original
    end: int  # 0-based line after the last one replaced (== start for a pure insertion)
    old: str
    new: str


def hunks(original: str, updated: str) -> list[Hunk]:
    """The changed regions between two texts, line-based (difflib opcodes)."""
    a, b = split_lines(original), split_lines(updated)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [
        Hunk(i1, i2, "".join(a[i1:i2]), "".join(b[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def _hunk_label(path: str, hunk: Hunk) -> str:
    if hunk.end - hunk.start <= 1:
        where = f"line {hunk.start + 1}" if hunk.end > hunk.start else f"insert at line {hunk.start + 1}"
    else:
        where = f"lines {hunk.start + 1}-{hunk.end}"
    return one_line(f"{path}: {where}")


def _hunk_description(hunk: Hunk) -> str:
    minus = ["-" + ln.rstrip("\r\n") for ln in split_lines(hunk.old)]
    plus = ["+" + ln.rstrip("\r\n") for ln in split_lines(hunk.new)]
    return visible("\n".join(minus + plus))


def text_edits(change: FileChange, codec: PositionCodec = UTF16) -> list[tuple[types.TextEdit, types.ChangeAnnotation]]:
    """One TextEdit per hunk of `change`, ranges in the original text, each with its annotation."""
    lines = split_lines(change.original)
    out = []
    for hunk in hunks(change.original, change.updated):
        edit = types.TextEdit(
            range=types.Range(start=_position(lines, hunk.start, codec), end=_position(lines, hunk.end, codec)),
            new_text=hunk.new,
        )
        annotation = types.ChangeAnnotation(label=_hunk_label(change.path, hunk), description=_hunk_description(hunk))
        out.append((edit, annotation))
    return out


def file_uri(root: Path, relpath: str) -> str:
    uri = from_fs_path(str(root / relpath))
    assert uri is not None
    return uri


def workspace_edit(
    changes: Sequence[FileChange],
    root: Path,
    versions: Mapping[str, int | None],
    *,
    codec: PositionCodec = UTF16,
    document_changes: bool = True,
    annotations: bool = True,
    confirm: Sequence[str] = (),
) -> types.WorkspaceEdit:
    """The edit for `changes`. With `document_changes`, each TextDocumentEdit carries the
    version the engine read (`versions[path]`; None for a file read from disk), so a client
    refuses it once the buffer moved on; created files come first as CreateFile operations.
    Without it (old clients), a plain `changes` map. The annotations of files in `confirm` (they run
    later, or git ignores them) ask the client for the user's confirmation before applying them."""
    if not document_changes:
        plain: dict[str, list[types.TextEdit]] = {}
        for change in changes:
            edits = [edit for edit, _ in text_edits(change, codec)]
            if change.created:
                edits = [types.TextEdit(range=_zero_range(), new_text=change.updated)]
            plain[file_uri(root, change.path)] = edits
        return types.WorkspaceEdit(changes=plain)

    operations: list[Any] = []
    notes: dict[str, types.ChangeAnnotation] = {}
    for change in changes:
        uri = file_uri(root, change.path)
        identifier = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=versions.get(change.path))
        if change.created:
            note_id = f"{change.path}#create"
            notes[note_id] = types.ChangeAnnotation(
                label=one_line(f"{change.path}: new file"), description=visible(change.updated[:2000]),
                needs_confirmation=True if change.path in confirm else None,
            )
            operations.append(
                types.CreateFile(
                    uri=uri,
                    options=types.CreateFileOptions(overwrite=False, ignore_if_exists=False),
                    annotation_id=note_id if annotations else None,
                )
            )
            edit = _annotated(types.TextEdit(range=_zero_range(), new_text=change.updated), note_id, annotations)
            operations.append(types.TextDocumentEdit(text_document=identifier, edits=[edit]))
            continue
        edits = []
        for number, (edit, note) in enumerate(text_edits(change, codec), 1):
            note_id = f"{change.path}#{number}"
            if change.path in confirm:
                note.needs_confirmation = True
            notes[note_id] = note
            edits.append(_annotated(edit, note_id, annotations))
        if edits:
            operations.append(types.TextDocumentEdit(text_document=identifier, edits=edits))
    return types.WorkspaceEdit(document_changes=operations, change_annotations=notes if annotations else None)


def _annotated(edit: types.TextEdit, note_id: str, annotations: bool) -> types.TextEdit | types.AnnotatedTextEdit:
    if not annotations:
        return edit
    return types.AnnotatedTextEdit(range=edit.range, new_text=edit.new_text, annotation_id=note_id)


def _zero_range() -> types.Range:
    return types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))


def apply_text_edits(text: str, edits: Sequence[types.TextEdit], codec: PositionCodec = UTF16) -> str:
    """`text` with non-overlapping `edits` applied, as a client would (for tests and tools)."""
    lines = split_lines(text)

    def offset(pos: types.Position) -> int:
        if pos.line >= len(lines):
            return len(text)
        start = sum(len(ln) for ln in lines[: pos.line])
        line = lines[pos.line]
        server = codec.position_from_client_units([line], types.Position(line=0, character=pos.character))
        return start + min(server.character, len(line.rstrip("\r\n")))

    out = text
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        out = out[: offset(edit.range.start)] + edit.new_text + out[offset(edit.range.end) :]
    return out


# --------------------------------------------------------------------------- titles


def short_problem(message: str, limit: int = 48) -> str:
    """"NameError" from "NameError: name 'x' is not defined", else the first line, shortened."""
    first = message.strip().splitlines()[0] if message.strip() else "problem"
    if m := _PROBLEM_RE.search(first):
        return m.group(1)
    return one_line(first, limit)


def validation_summary(validation: Validation) -> str:
    """"✓ parses, ✓ pytest -x tests/test_a.py": parse checks of all files folded into one."""
    parses = [c for c in validation.checks if c.name.startswith("parses:")]
    parts = []
    if parses:
        failed = [c.name.split(":", 1)[1].strip() for c in parses if not c.ok]
        parts.append("✗ parses: " + ", ".join(failed) if failed else "✓ parses")
    parts += [f"{'✓' if c.ok else '✗'} {c.name}" + (f" (stopped by the {c.stopped_by} limit)" if c.stopped_by else "")
              for c in validation.checks if not c.name.startswith("parses:")]
    if validation.not_verified:
        parts.append(f"not verified: {validation.not_verified}")
    if validation.runs_during_verification:
        parts.append("⚠ runs during verification: " + ", ".join(r.split(" (")[0] for r in validation.runs_during_verification))
    return one_line(", ".join(parts)) if parts else "not validated"


def consent_note(result: FixResult) -> str:
    """"⚠ runs later: .vscode/tasks.json; ⚠ not tracked by git: .env; " (empty when neither): what
    the user must see before choosing the fix, first in its title so no editor cuts it off."""
    notes = []
    if result.runs_later:
        notes.append("⚠ runs later: " + ", ".join(r.split(" (")[0] for r in result.runs_later))
    if result.not_tracked:
        notes.append("⚠ not tracked by git: " + ", ".join(result.not_tracked))
    if result.in_submodule:
        notes.append("⚠ another repository: " + ", ".join(result.in_submodule))
    return "".join(f"{n}; " for n in notes)


def fix_title(problem: str, result: FixResult) -> str:
    """The resolved action's title: what it fixes, what it changes that runs later, what was validated."""
    what = f"Fix {short_problem(problem)}"
    if result.changes:
        refused = f"; refused: {', '.join(result.refused_writes)}" if result.refused_writes else ""
        return one_line(f"{what} ({consent_note(result)}{validation_summary(result.validation)}{refused})")
    if result.suggestions:
        s = result.suggestions[0]
        return one_line(f"Run `{s.command}` ({s.risk.value})")
    if result.outcome == "failed":
        return f"{what}: Qwen's change failed validation ({validation_summary(result.validation)})"
    return f"{what}: Qwen found nothing to change"


def said(result: FixResult, limit: int | None = 300) -> str:
    """The result's summary for a message: the model's words labelled as such, the engine's as they are."""
    return model_words(result.summary, limit) if result.summary_by == "model" else one_line(result.summary, limit)


def no_change_reason(result: FixResult) -> str:
    """Why a fix ended without an edit: what was tried, and why nothing changed."""
    a = result.accounting
    plan = "the cached plan" if a.plan_from_cache else ("a plan" if a.thinking_calls else "no plan")
    tried = f"tried {plan} and {a.rounds} patch round{'s' if a.rounds != 1 else ''}"
    if result.outcome == "failed" and result.error and result.summary_by == "engine":
        return f"{tried}; {one_line(result.error, 300)}"  # stopped by a limit
    if result.outcome == "failed":
        return f"{tried}; its change failed validation ({validation_summary(result.validation)}), so none is offered"
    if result.outcome == "gave_up":
        return f"{tried}; nothing changed: the model gave up on the edits its plan named, {said(result)}"
    if result.suggestions:
        return f"{tried}; no file changed, it suggests running `{one_line(result.suggestions[0].command, 120)}`"
    return f"{tried}; nothing changed, {said(result)}"


def no_change_message(problem: str, result: FixResult) -> str:
    """The message every client shows when a fix ends without an edit."""
    return f"Qwen made no change for {short_problem(problem)}: {no_change_reason(result)}"


def fix_offer_title(message: str, limit: int = 80) -> str:
    first = message.strip().splitlines()[0] if message.strip() else "problem"
    return one_line(f"Fix with Qwen: {first}", limit)


# --------------------------------------------------------------------------- diagnostics


MAX_DIAGNOSTICS = 100  # per terminal run: enough for a real build, bounded for a runaway log


def frames_to_diagnostics(
    frames: Sequence[Frame],
    root: Path,
    read_text: Callable[[Path], str | None],
    *,
    codec: PositionCodec = UTF16,
    data: dict[str, Any] | None = None,
    source: str = protocol.SOURCE,
    max_diagnostics: int = MAX_DIAGNOSTICS,
) -> dict[str, list[types.Diagnostic]]:
    """Diagnostics by URI: one per error/warning frame in a workspace file, message from its
    trace, the trace's other frames as related information (callers first).

    At most `max_diagnostics`: the primary frame's trace first, then the others in output order,
    so a log with thousands of findings publishes the one to fix and a bounded rest."""
    from qwen_lsp.context.frames import primary_frame  # with the frames themselves: see diagnostics.py

    traces: dict[int, list[Frame]] = {}
    first = primary_frame(list(frames))
    if first is not None:
        traces[first.trace] = []
    for frame in frames:
        traces.setdefault(frame.trace, []).append(frame)
    cache: dict[Path, list[str] | None] = {}

    def lines_of(path: Path) -> list[str] | None:
        if path not in cache:
            text = read_text(path)
            cache[path] = split_lines(text) if text is not None else None
        return cache[path]

    out: dict[str, list[types.Diagnostic]] = {}
    seen: set[tuple[str, int, str]] = set()
    for trace in traces.values():
        if len(seen) >= max_diagnostics:
            break
        user = [f for f in trace if f.resolved and not f.library and not (f.guessed and f.severity == "info")]
        primary = [f for f in user if f.severity in ("error", "warning")] or user
        trace_message = next((f.message for f in reversed(trace) if f.message), "")
        for frame in primary:
            assert frame.resolved is not None
            path = root / frame.resolved
            lines = lines_of(path)
            if lines is None or not 1 <= frame.line <= max(len(lines), 1):
                continue  # the file is gone or shorter now: a diagnostic there would point at nothing
            message = frame.message or trace_message or "failed here"
            uri = file_uri(root, frame.resolved)
            if (uri, frame.line, message) in seen or len(seen) >= max_diagnostics:
                continue
            seen.add((uri, frame.line, message))
            text = lines[frame.line - 1] if lines else ""
            start, end = line_range(text, frame.column, codec)
            line = frame.line - 1
            related = [_related(other, root, frame, lines_of, codec) for other in trace if other is not frame]
            out.setdefault(uri, []).append(
                types.Diagnostic(
                    range=types.Range(start=types.Position(line, start), end=types.Position(line, end)),
                    message=visible(message),
                    severity=_SEVERITY[frame.severity],
                    source=source,
                    related_information=[r for r in related if r is not None] or None,
                    data=data,
                )
            )
    return out


def _related(
    frame: Frame, root: Path, primary: Frame, lines_of: Callable[[Path], list[str] | None], codec: PositionCodec
) -> types.DiagnosticRelatedInformation | None:
    path = root / frame.resolved if frame.resolved else Path(frame.path)
    if not path.is_absolute():
        return None  # "<frozen importlib>", "Main.java" not found: no location to point at
    lines = lines_of(path)
    if lines is None or not 1 <= frame.line <= len(lines):
        return None
    start, end = line_range(lines[frame.line - 1], frame.column, codec)
    where = f"in {frame.function}" if frame.function else "here"
    if frame.message and frame.message != primary.message and frame.severity != "info":
        message = frame.message
    elif frame.severity == "info":
        message = f"called {where}" + (" (library)" if frame.library else "")
    else:
        message = f"raised {where}" + (" (library)" if frame.library else "")
    uri = from_fs_path(str(path))
    assert uri is not None
    return types.DiagnosticRelatedInformation(
        location=types.Location(
            uri=uri, range=types.Range(types.Position(frame.line - 1, start), types.Position(frame.line - 1, end))
        ),
        message=visible(message),
    )


def findings_to_diagnostics(
    findings: Sequence[Any], rel: str, text: str, *, codec: PositionCodec = UTF16, source: str = protocol.REVIEW_SOURCE
) -> list[types.Diagnostic]:
    """Review findings (review.Finding) on file `rel` as diagnostics over their lines. A review is
    an opinion, not a compiler: "error" findings are shown as warnings."""
    lines = split_lines(text)
    out = []
    for f in findings:
        if f.path != rel or not lines:
            continue
        first = min(max(f.line, 1), len(lines)) - 1
        last = min(max(f.end_line or f.line, f.line), len(lines)) - 1
        start, _ = line_range(lines[first], None, codec)
        _, end = line_range(lines[last], None, codec)
        message = f.message + (f"\nSuggestion: {f.suggestion}" if f.suggestion else "")
        severity = types.DiagnosticSeverity.Information if f.severity == "info" else types.DiagnosticSeverity.Warning
        out.append(types.Diagnostic(
            range=types.Range(types.Position(first, start), types.Position(last, end)),
            message=visible(message), severity=severity, source=source, code=one_line(f.category) or None,
        ))
    return out


def adjust_for_change(
    diagnostics: Sequence[types.Diagnostic], change: types.TextDocumentContentChangeEvent
) -> list[types.Diagnostic]:
    """Diagnostics still valid after an edit: those on touched lines are dropped (the code
    they point at changed), those below move with the inserted or removed lines."""
    if not isinstance(change, types.TextDocumentContentChangePartial):
        return []  # the whole text was replaced
    first, last = change.range.start.line, change.range.end.line
    delta = len(re.findall(r"\r\n|\r|\n", change.text)) - (last - first)
    kept = []
    for d in diagnostics:
        if d.range.end.line < first:
            kept.append(d)
        elif d.range.start.line > last:
            if delta:
                r = d.range
                d = _with_range(d, types.Range(
                    types.Position(r.start.line + delta, r.start.character), types.Position(r.end.line + delta, r.end.character)
                ))
            kept.append(d)
    return kept


def _with_range(d: types.Diagnostic, r: types.Range) -> types.Diagnostic:
    lsp = converter()
    copy = lsp.structure(lsp.unstructure(d), types.Diagnostic)
    copy.range = r
    return copy


# --------------------------------------------------------------------------- code actions


def fix_action(diagnostic: types.Diagnostic, uri: str, version: int | None) -> types.CodeAction:
    """The unresolved "Fix with Qwen" quick fix; resolve runs the engine."""
    data = protocol.ActionData(uri=uri, version=version, diagnostic=converter().unstructure(diagnostic))
    return types.CodeAction(
        title=fix_offer_title(diagnostic.message),
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        data=data.dump(),
    )


def suggestion_action(suggestion: ShellSuggestion, diagnostics: Sequence[types.Diagnostic] | None = None) -> types.CodeAction:
    """A shell suggestion as a quick fix that asks the editor to run it (after showing the risk)."""
    args = protocol.RunInTerminal(
        command=suggestion.command, reason=suggestion.reason, risk=suggestion.risk, dangers=suggestion.dangers
    )
    loud = "⚠ " if suggestion.risk.value == "destructive" else ""
    title = one_line(f"{loud}Run in terminal: {suggestion.command} ({suggestion.risk.value})")
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=list(diagnostics) if diagnostics else None,
        command=types.Command(title=title, command=protocol.CLIENT_RUN_IN_TERMINAL, arguments=[args.dump()]),
    )


def selection_actions(uri: str, selection: types.Range) -> list[types.CodeAction]:
    """"Ask Qwen…" and "Explain with Qwen" on a non-empty selection."""
    arg = {"uri": uri, "range": converter().unstructure(selection)}
    return [
        types.CodeAction(
            title="Ask Qwen…",
            kind=types.CodeActionKind.RefactorRewrite,
            command=types.Command(title="Ask Qwen…", command=protocol.CLIENT_ASK, arguments=[arg]),
        ),
        types.CodeAction(
            title="Explain with Qwen",
            kind=types.CodeActionKind.RefactorRewrite,
            command=types.Command(title="Explain with Qwen", command=protocol.SERVER_EXPLAIN, arguments=[arg]),
        ),
    ]


def review_action(uri: str) -> types.CodeAction:
    title = "Review this file with Qwen"
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.Source,
        command=types.Command(title=title, command=protocol.SERVER_REVIEW, arguments=[{"uri": uri}]),
    )


def kind_allowed(kind: str, only: Sequence[str] | None) -> bool:
    """LSP `context.only` filtering: "refactor" admits "refactor.rewrite"."""
    if not only:
        return True
    return any(kind == k or kind.startswith(f"{k}.") for k in only)


def lines_of_range(selection: types.Range) -> tuple[int, int]:
    """1-based inclusive lines of an LSP range (an end at column 0 does not include that line)."""
    start = selection.start.line + 1
    end = selection.end.line + (0 if selection.end.character == 0 and selection.end.line > selection.start.line else 1)
    return start, max(start, end)
