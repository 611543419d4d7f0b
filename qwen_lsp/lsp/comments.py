"""AI comments in the editor: a hint diagnostic on each marked comment of an open buffer, the
"Do it with Qwen" code action on it (and one for all of a file's), resolved through the engine's
instruction task, and the `qwen.server.doComments` command for clients that do not resolve.

The comments are found in the buffer as it is now (engine/comments.py); nothing runs until the
user picks an action.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from qwen_lsp import wire as protocol
from qwen_lsp.engine.comments import MarkedComment, comment_task, find_marked, strip_comments
from qwen_lsp.lsp import background_fix, convert as lsp_convert
from qwen_lsp.lsp.engine_thread import ModelUnavailable
from qwen_lsp.sanitize import one_line
from qwen_lsp.types import FixResult

if TYPE_CHECKING:
    from qwen_lsp.lsp.fixes import EngineOutcome
    from qwen_lsp.lsp.server import QwenLanguageServer

TITLE_CHARS = 60


class Comments:
    """Marked comments of open buffers: their diagnostics, actions, and running them."""

    def __init__(self, server: QwenLanguageServer) -> None:
        self.server = server

    # -- finding ------------------------------------------------------------------------------------

    def marked(self, uri: str, *, focus: bool = True) -> tuple[Path, str, list[MarkedComment]]:
        """The workspace folder, relative path and marked comments of the open buffer `uri`
        (`focus=False`: without the code each is about, which only running one needs)."""
        _path, root, rel = self.server.folders.locate(uri)
        doc = self.server.workspace.get_text_document(uri)
        markers = self.server.folders.settings_for(root).comment_markers
        return root, rel, find_marked(doc.source, rel, markers, focus=focus)

    def refresh(self, uri: str) -> None:
        """Publish the buffer's marked comments as hint diagnostics (when they changed)."""
        path = self.server.folders.locate(uri)[0]
        _root, _rel, found = self.marked(uri, focus=False)  # on every keystroke: no definitions read
        doc = self.server.workspace.get_text_document(uri)
        codec = self.server.workspace.position_codec
        lines = doc.lines
        diagnostics = [_diagnostic(c, lines, codec) for c in found]
        store = self.server.diagnostics.comments
        if store.get(str(path), []) != diagnostics:
            if diagnostics:
                store[str(path)] = diagnostics
            else:
                store.pop(str(path), None)
            self.server.diagnostics.publish(str(path))

    def forget(self, uri: str) -> None:
        """A closed buffer: its hints go (the file on disk is not watched for comments)."""
        path = str(self.server.folders.locate(uri)[0])
        if self.server.diagnostics.comments.pop(path, None) is not None:
            self.server.diagnostics.publish(path)

    # -- code actions -----------------------------------------------------------------------------

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        """"Do it with Qwen" for each marked comment in the range, and "all N" when the file has more."""
        if not lsp_convert.kind_allowed(types.CodeActionKind.QuickFix, params.context.only):
            return []
        uri = params.text_document.uri
        _root, _rel, found = self.marked(uri, focus=False)
        if not found:
            return []
        first, last = params.range.start.line + 1, params.range.end.line + 1
        here = [c for c in found if c.line <= last and c.end_line >= first]
        if not here:
            return []
        version = self.server.workspace.get_text_document(uri).version
        lines = self.server.workspace.get_text_document(uri).lines
        codec = self.server.workspace.position_codec
        resolves = background_fix.resolves_edits(self.server.client_capabilities)
        actions = []
        for comment in here:
            title = f"Do it with Qwen: {_short(comment.instruction)}"
            actions.append(_action(title, uri, version, [comment], [_diagnostic(comment, lines, codec)], resolves))
        if len(found) > 1:
            title = f"Do all {len(found)} Qwen comments in this file"
            actions.append(_action(title, uri, version, found, [], resolves))
        return actions

    async def resolve(self, action: types.CodeAction) -> types.CodeAction:
        data = protocol.CommentActionData.model_validate(action.data)
        answer = await self.run(data.uri, data.lines)
        if isinstance(answer, str):
            action.disabled = types.CodeActionDisabled(reason=answer)
            self.server.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=f"Qwen: {answer}"))
            return action
        root, outcome = answer
        action.title = f"{action.title} ({lsp_convert.validation_summary(outcome.result.validation)})"
        action.edit = self.server.fixes.edit_for(root, outcome)
        return action

    async def cmd_do_comments(self, args: protocol.DoCommentsArgs) -> protocol.ApplyOutcome:
        answer = await self.run(args.uri, args.lines)
        if isinstance(answer, str):
            return protocol.ApplyOutcome(applied=False, summary=answer)
        root, outcome = answer
        checks = lsp_convert.validation_summary(outcome.result.validation)
        return await self.server.fixes.apply(root, outcome, f"Qwen: did {_what(outcome)}" + (f" ({checks})" if checks else ""))

    # -- running ------------------------------------------------------------------------------------

    async def run(self, uri: str, lines: list[int] | None) -> tuple[Path, EngineOutcome] | str:
        """One engine run for the marked comments of `uri` starting on `lines` (0-based; None: all),
        with the file's other marked comments as context; the result's edit takes the comments
        out. A string says why there is nothing to apply."""
        root, rel, found = self.marked(uri)
        chosen = found if lines is None else [c for c in found if c.line - 1 in set(lines)]
        if not chosen:
            return "the instruction comment is no longer there"
        markers = self.server.folders.settings_for(root).comment_markers
        task = comment_task(rel, chosen, found, marker=markers[0] if markers else "qwen:")
        title = "Qwen: " + (_short(chosen[0].instruction) if len(chosen) == 1 else f"{len(chosen)} comments in {rel}")
        outcome = await self.server.fixes.attempt(task, root, title)
        if isinstance(outcome, ModelUnavailable):
            return f"model server error: {outcome}"
        def finish(result: FixResult) -> None:  # again after a refine: the overlay still holds the comments
            result.changes = [strip_comments(c, chosen) for c in result.changes]
            result.changes = [c for c in result.changes if c.created or c.updated != c.original]

        finish(outcome.result)
        outcome.finish = finish
        self.server.fixes.remember_for_refine(root, rel, outcome)
        if outcome.stale:
            return f"{', '.join(outcome.stale)} changed while Qwen was working; ask again"
        if not outcome.result.changes:
            return lsp_convert.no_change_reason(outcome.result)
        return root, outcome


def _diagnostic(comment: MarkedComment, lines: list[str], codec) -> types.Diagnostic:
    def at(line: int, char: int) -> types.Position:
        text = lines[line - 1] if line - 1 < len(lines) else ""
        return types.Position(line=line - 1, character=codec.client_num_units(text[:char]))

    return types.Diagnostic(
        range=types.Range(start=at(comment.line, comment.start_char), end=at(comment.end_line, comment.end_char)),
        message=f"Qwen instruction: {one_line(comment.instruction)}",
        severity=types.DiagnosticSeverity.Hint,
        source=protocol.SOURCE,
        code=protocol.COMMENT_CODE,
    )


def _action(title: str, uri: str, version: int | None, comments: list[MarkedComment],
            diagnostics: list[types.Diagnostic], resolves: bool) -> types.CodeAction:
    lines = [c.line - 1 for c in comments]
    kind = types.CodeActionKind.QuickFix
    if not resolves:  # the command applies through workspace/applyEdit
        args = protocol.DoCommentsArgs(uri=uri, lines=lines)
        command = types.Command(title=title, command=protocol.SERVER_DO_COMMENTS, arguments=[args.dump()])
        return types.CodeAction(title=title, kind=kind, diagnostics=diagnostics or None, command=command)
    data = protocol.CommentActionData(uri=uri, version=version, lines=lines)
    return types.CodeAction(title=title, kind=kind, diagnostics=diagnostics or None, data=data.dump())


def _short(instruction: str) -> str:
    text = one_line(instruction)
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"


def _what(outcome: EngineOutcome) -> str:
    task = outcome.result.task
    return f"the instruction comments of {task.path}"
