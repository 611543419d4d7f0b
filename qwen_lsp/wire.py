"""Pydantic models of the custom payloads in docs/protocol.md.

Field names are snake_case in Python and camelCase on the wire (`exitCode`);
both spellings are accepted on input. `dump()` gives the wire form.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from qwen_lsp.types import Risk

# -- method and command names -----------------------------------------------------------------

TERMINAL_OUTPUT = "qwen/terminalOutput"  # client -> server notification (also over the side channel)
STATUS = "qwen/status"  # server -> client notification

CLIENT_RUN_IN_TERMINAL = "qwen.runInTerminal"  # implemented by editors; the server never runs commands
CLIENT_ASK = "qwen.ask"  # implemented by editors: prompts for the instruction
CLIENT_REFINE = "qwen.refine"  # implemented by editors: prompts for a note, then runs qwen.server.refine

SERVER_ASK = "qwen.server.ask"
SERVER_EXPLAIN = "qwen.server.explain"
SERVER_REVIEW = "qwen.server.review"
SERVER_FIX = "qwen.server.fix"
SERVER_DO_COMMENTS = "qwen.server.doComments"  # AI comments: do the marked comments of a file
SERVER_REFINE = "qwen.server.refine"  # follow up on the last result proposed for a file

SOURCE = "qwen"  # diagnostics from terminal output
REVIEW_SOURCE = "qwen-review"  # diagnostics from review
COMMENT_CODE = "qwen-comment"  # the code of the hint diagnostic on an AI comment (source "qwen")


class Payload(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def dump(self) -> dict[str, Any]:
        """The JSON-ready wire form (camelCase keys)."""
        return self.model_dump(mode="json", by_alias=True)


class Position(Payload):
    line: int  # 0-based
    character: int  # in the negotiated position encoding (UTF-16 by default)


class Range(Payload):
    start: Position
    end: Position


# -- notifications -----------------------------------------------------------------------------


class TerminalOutput(Payload):
    """`qwen/terminalOutput`: a command finished in a terminal."""

    command: str
    exit_code: int
    output: str = ""
    cwd: str = ""  # absolute, or relative to the workspace root


StatusState = Literal["idle", "busy", "error"]


class Status(Payload):
    """`qwen/status` for a status bar."""

    state: StatusState
    message: str = ""


# -- client command arguments ----------------------------------------------------------------


class RunInTerminal(Payload):
    """Argument of the client command `qwen.runInTerminal`."""

    command: str
    reason: str = ""
    risk: Risk
    dangers: list[str] = Field(default_factory=list)


class Selection(Payload):
    """Argument of `qwen.ask`, `qwen.server.explain`, `qwen.server.fix`."""

    uri: str
    range: Range


# -- server command arguments and results ----------------------------------------------------


class AskArgs(Selection):
    instruction: str


class FixArgs(Selection):
    diagnostic: dict[str, Any] | None = None  # optional: the LSP Diagnostic to fix (else ours in range)
    # optional: the editor's diagnostics in range from any server, used when none of ours is there
    diagnostics: list[dict[str, Any]] | None = None


class DoCommentsArgs(Payload):
    """Argument of `qwen.server.doComments`: the marked comments of `uri` starting on `lines`
    (0-based; none: every marked comment of the file), done in one engine run."""

    uri: str
    lines: list[int] | None = None


class RefineArgs(Payload):
    """Argument of `qwen.server.refine`: the user's note on the last result proposed for `uri`."""

    uri: str
    note: str


class ReviewArgs(Payload):
    uri: str


class ApplyOutcome(Payload):
    """Result of `qwen.server.ask` and `qwen.server.fix`."""

    applied: bool
    summary: str = ""
    title: str = ""  # what was done and validated, e.g. "Fix NameError (✓ parses, ✓ pytest -x)"


class ExplainOutcome(Payload):
    markdown: str


class ReviewOutcome(Payload):
    findings: int
    reviewed: bool = True  # False: no review happened, and the server already said why (e.g. model down)


# -- internal: what unresolved code actions carry in `data` -------------------------------------


class ActionData(Payload):
    """`CodeAction.data` of a "Fix with Qwen" action, so resolve knows what to run."""

    qwen: Literal["fix"] = "fix"
    uri: str
    version: int | None = None  # document version when the action was listed
    diagnostic: dict[str, Any]  # the LSP Diagnostic, as the client sent it


class DiagnosticData(Payload):
    """`Diagnostic.data` of diagnostics published from terminal output."""

    run: str  # key of the terminal run in the server (command + cwd)
    command: str
    exit_code: int
    cwd: str  # workspace-relative, "" for the root


class CommentActionData(Payload):
    """`CodeAction.data` of a "Do it with Qwen" action (an AI comment), so resolve knows what to run."""

    qwen: Literal["comments"] = "comments"
    uri: str
    version: int | None = None  # document version when the action was listed
    lines: list[int]  # 0-based first lines of the chosen comments
