"""The messages between qfix and its warm process (warm_client.py, warm.py): one JSON object a line.
The sender may build plain dicts (qfix stays import-light); the receiver always validates them here."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from qwen_lsp.types import FixResult


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- qfix -> daemon: the first line of a connection -------------------------------------------------


class Hello(_Message):
    """Think for this client: the child takes on its environment, cwd and umask before anything else."""

    kind: Literal["think"]
    env: dict[str, str]
    cwd: str
    umask: int = Field(ge=0, le=0o777)
    client_pid: int


class StatusRequest(_Message):
    kind: Literal["status", "stop"]


Request = TypeAdapter(Annotated[Hello | StatusRequest, Field(discriminator="kind")])


# -- qfix -> child ------------------------------------------------------------------------------


class FailureMessage(_Message):
    """The failed command, as agent.Failure has it. No workspace: the child finds it as qfix does."""

    kind: Literal["failure"]
    command: str
    exit_code: int
    output: str | None
    cwd: str
    workspace: str | None = None


class RefineMessage(_Message):
    """After a result: the user's note on it (Engine.refine). The child answers as for the failure,
    with progress and a ResultReply (or an ErrorReply, after which it ends); EOF ends it."""

    kind: Literal["refine"]
    note: str = Field(min_length=1)
    fix_id: str = Field(min_length=1)


# -- child / daemon -> qfix -----------------------------------------------------------------------


class ProgressReply(_Message):
    kind: Literal["progress"]
    phase: str


class ResultReply(_Message):
    """The fix, and what it was thought with: qfix uses it only if both match its own."""

    kind: Literal["result"]
    result: FixResult
    workspace: str
    settings: dict[str, Any]  # Settings.model_dump(mode="json")


class ErrorReply(_Message):
    """"rejected" / "busy" / "stream_broken" / "model_server": raised in qfix as RequestRejected / ServerBusy /
    StreamBroken / ModelServerError, as in-process;
    "failed": anything else, and qfix thinks in-process (which reports it properly if it recurs)."""

    kind: Literal["error"]
    error: Literal["rejected", "busy", "stream_broken", "model_server", "failed"]
    message: str


ChildReply = TypeAdapter(Annotated[ProgressReply | ResultReply | ErrorReply, Field(discriminator="kind")])


class StatusReply(_Message):
    kind: Literal["status"]
    pid: int
    fingerprint: str
    started: float  # time.time()
    idle_seconds: float  # since its last connection ended
    idle_limit: float
    served: int  # qfix runs handed to a child (one each, whether its command failed or not)
    thinking: list[int]  # pids of the children still at work
    stopping: bool = False
