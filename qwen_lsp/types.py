"""Pydantic models for everything that crosses a process boundary:
tasks in, plans and results out, cached plans on disk."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field


class TaskKind(StrEnum):
    diagnostic = "diagnostic"  # fix an LSP diagnostic (ours or another server's)
    traceback = "traceback"  # fix what a traceback / compiler output points at
    command = "command"  # fix a failing shell command (qfix)
    instruction = "instruction"  # do what the user asked on a selection
    explain = "explain"  # explain a selection; no edits


class Task(BaseModel):
    """What the user wants done. Paths are workspace-relative, lines 1-based."""

    kind: TaskKind
    description: str
    path: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    terminal_output: str | None = None
    command: str | None = None  # the command the user ran; re-run to verify
    exit_code: int | None = None
    cwd: str | None = None  # workspace-relative directory the command ran in

    @classmethod
    def for_command(cls, command: str, exit_code: int, output: str | None, cwd: str | None) -> Task:
        """The task for a failed shell command. qfix and the editor both build it here,
        so the same failure has the same fingerprint and shares one cached plan."""
        return cls(
            kind=TaskKind.command,
            description=f"`{command}` failed with exit code {exit_code}",
            command=command,
            terminal_output=output if output is not None else "(the output was not captured)",
            exit_code=exit_code,
            cwd=None if cwd in (None, "", ".") else cwd,
        )


class Evidence(BaseModel):
    path: str
    start_line: int
    end_line: int
    reason: str


class Plan(BaseModel):
    hypotheses: list[str] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    steps: list[str] = Field(default_factory=list)
    verify_command: str | None = None


class Risk(StrEnum):
    read_only = "read-only"
    modifies_files = "modifies files"
    destructive = "destructive"
    network = "network"


class ShellSuggestion(BaseModel):
    command: str
    reason: str
    risk: Risk
    dangers: list[str] = Field(default_factory=list)  # why it is risky, for a loud label


class FileChange(BaseModel):
    path: str
    original: str  # contents the engine read (what must still be on disk to apply)
    updated: str
    diff: str  # unified diff, a/ b/ prefixes
    created: bool = False


class CheckOutcome(BaseModel):
    name: str  # "parse" or the verify command
    ok: bool
    detail: str = ""
    stopped_by: str | None = None  # the sandbox limit that stopped the command: "memory", "processes", ...
    not_copied: list[str] = Field(default_factory=list)  # left out of the verification copy, and why


class Validation(BaseModel):
    checks: list[CheckOutcome] = Field(default_factory=list)
    # Why no command verified the change ("no sandbox", "verification is off", ...); None when one ran.
    not_verified: str | None = None
    not_verified_detail: str = ""  # the long form: what is missing and how to enable it
    # Model-created/edited files that run as configuration when the command runs: "conftest.py (pytest imports it)".
    runs_during_verification: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)


class Accounting(BaseModel):
    thinking_calls: int = 0
    non_thinking_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    wall_seconds: float = 0.0
    plan_from_cache: bool = False
    plan_reads: int = 0  # read_file / search_code calls the reading plan ran (0 from the cache: nothing re-read)
    rounds: int = 0  # patch rounds run
    # A patch request extended the previous prompt of the fix and the server cached none of it
    # (engine/loop.py): its prefix cache is not hitting; `qwen-lsp doctor` says why.
    prefix_cache_missed: bool = False


# "repeated": stopped because the model sent the same call a third time, with no change to offer;
# "gave_up": the model finished twice without making the edits its plan named (not "nothing to change").
Outcome = Literal["fixed", "changed_unverified", "no_change", "failed", "cancelled", "explained", "repeated", "gave_up"]
SummaryBy = Literal["model", "engine"]  # who wrote a FixResult's summary: front ends label the model's words


class FixResult(BaseModel):
    task: Task
    outcome: Outcome
    summary: str = ""
    summary_by: SummaryBy = "model"
    plan: Plan | None = None
    changes: list[FileChange] = Field(default_factory=list)
    suggestions: list[ShellSuggestion] = Field(default_factory=list)
    validation: Validation = Field(default_factory=Validation)
    accounting: Accounting = Field(default_factory=Accounting)
    error: str | None = None
    refused_writes: list[str] = Field(default_factory=list)  # protected paths the model tried to change
    # Changed files some tool runs later without the user reading them: "path (why)"; and changed
    # files git ignores. Either kind is written only after the user's explicit yes (never by qfix --yes).
    runs_later: list[str] = Field(default_factory=list)
    not_tracked: list[str] = Field(default_factory=list)
    # Tool calls no server parser handed over, and where they were found: "round 2: edit_file recovered
    # from the end of the reasoning" (llm/dialect.py).
    recovered_calls: list[str] = Field(default_factory=list)
    fix_id: str | None = None  # Engine.refine continues this run's conversation while the engine keeps it
    # Changed files inside a git submodule (or another repository nested in the workspace): "path
    # (submodule NAME)". Another repository: like an ignored file, only after an explicit yes.
    in_submodule: list[str] = Field(default_factory=list)


class CachedState(BaseModel):
    """What the disk cache keeps for one task fingerprint: enough to resume
    without the thinking call (the plan and its reasoning), and what the plan saw.

    Not the patch rounds: a repeated fix re-runs them from the plan, so that a failed
    attempt's edits do not anchor the next one. The only tool output kept is the reading plan's
    reads, part of the plan itself; every file they read is in `file_hashes`."""

    plan: Plan
    plan_message: dict[str, Any]  # the assistant message, with `reasoning`
    # The reading plan's turns before its answer (engine/reading.py): its read-only calls and their
    # answers, replayed as they were so the conversation and its prefix are those of the first time.
    plan_reads: list[dict[str, Any]] = Field(default_factory=list)
    file_hashes: dict[str, str] = Field(default_factory=dict)  # what the plan saw; any change = miss


# A progress message that starts with NOTICE is a notice the user should keep seeing (a retry on a
# busy server, an answer asked again after its stream broke off), not a phase of the work.
NOTICE = "! "
