"""Fixes for clients that cannot resolve a code action's edit (Emacs eglot 1.9, and any client
whose `codeAction.resolveSupport` lacks "edit"): the "Fix with Qwen" action then carries a
command; the command answers at once and the fix arrives later through `workspace/applyEdit`,
with `$/progress` meanwhile. A client never holds one request open for the whole fix."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from qwen_lsp import wire as protocol

if TYPE_CHECKING:
    from qwen_lsp.lsp.server import QwenLanguageServer

SERVER_FIX_IN_BACKGROUND = "qwen.server.fixInBackground"
log = logging.getLogger(__name__)


def resolves_edits(capabilities: types.ClientCapabilities) -> bool:
    """Pure: can this client fill in a code action's edit with `codeAction/resolve`?"""
    text = capabilities.text_document
    action = text.code_action if text else None
    support = action.resolve_support if action else None
    return bool(support and "edit" in support.properties)


def as_command(action: types.CodeAction) -> types.CodeAction:
    """Pure: an unresolved fix action (its `data` is ActionData) as one that runs the background command."""
    data = protocol.ActionData.model_validate(action.data)
    args = protocol.FixArgs(uri=data.uri, range=data.diagnostic["range"], diagnostic=data.diagnostic)
    command = types.Command(title=action.title, command=SERVER_FIX_IN_BACKGROUND, arguments=[args.dump()])
    return types.CodeAction(title=action.title, kind=action.kind, diagnostics=action.diagnostics, command=command)


def start(ls: QwenLanguageServer, argument: Any) -> dict[str, Any]:
    """The command's answer, at once; the fix goes on as a task of the server."""
    args = protocol.FixArgs.model_validate(argument)
    task = asyncio.ensure_future(_fix_and_report(ls, args))
    ls.background_fixes.add(task)
    task.add_done_callback(ls.background_fixes.discard)
    return {"started": True}


async def _fix_and_report(ls: QwenLanguageServer, args: protocol.FixArgs) -> None:
    """cmd_fix reports progress and sends the edit; a fix that was not applied is said in a message."""
    try:
        outcome = await ls.fixes.cmd_fix(args)
    except asyncio.CancelledError:
        raise
    except Exception:  # never crash the server: the progress already ended with the failure
        log.exception("background fix failed")
        return
    if not outcome.applied:
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning,
                                                       message=f"Qwen: no fix applied: {outcome.summary}"))
