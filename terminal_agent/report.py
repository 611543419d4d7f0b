"""`qfix --json`: the machine-readable account of one run."""

from __future__ import annotations

from pydantic import BaseModel, Field

from qwen_lsp.sanitize import visible
from qwen_lsp.types import FixResult, Plan, ShellSuggestion, SummaryBy, Validation


class FileDiff(BaseModel):
    path: str  # workspace-relative
    diff: str  # unified, a/ b/ prefixes
    created: bool = False


class Verification(BaseModel):
    """The check of the fix: the real re-run after it was written, or (dry run, not applied)
    the engine's own run of the verify command in a temporary copy of the workspace."""

    command: str
    exit_code: int | None  # None: the engine's check reports pass/fail only
    passed: bool
    in_temporary_copy: bool = False


class ModelUsage(BaseModel):
    thinking_calls: int = 0
    non_thinking_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens served from vLLM's prefix cache
    wall_seconds: float = 0.0
    cache_hit: bool = False  # the plan came from the disk cache: no thinking call
    plan_reads: int = 0  # reads the plan ran before answering (strategy reading_plan)


class QfixReport(BaseModel):
    command: str
    exit_code: int | None = None  # the failing command's
    workspace: str
    cwd: str
    # What qfix did: "fixed" (applied, the re-run passes), "still_failing", "applied", "proposed" (dry run),
    # "not_applied", "handed_to_shell"; no fix: the engine's "no_change" / "failed"; nothing to fix:
    # "passed" / "interrupted"; "error" (server unavailable), "cancelled".
    outcome: str
    engine_outcome: str | None = None  # the engine's verdict on its fix (qwen_lsp.types.Outcome)
    summary: str = ""  # hidden characters shown (sanitize.visible); who wrote it: summary_by
    summary_by: SummaryBy = "model"  # "model": the model's own claim, not a verdict of qfix's
    plan: Plan | None = None
    diffs: list[FileDiff] = Field(default_factory=list)
    suggestions: list[ShellSuggestion] = Field(default_factory=list)
    validation: Validation = Field(default_factory=Validation)  # what the engine checked before asking
    applied: bool = False
    not_applied: str | None = None  # why a fix was not written
    refused_writes: list[str] = Field(default_factory=list)  # protected paths the model tried to change
    runs_later: list[str] = Field(default_factory=list)  # "path (why)": changed files a tool runs later
    not_tracked: list[str] = Field(default_factory=list)  # changed files git ignores
    recovered_calls: list[str] = Field(default_factory=list)  # tool calls found outside the server's parsing
    in_submodule: list[str] = Field(default_factory=list)  # "path (submodule NAME)": another repository's files
    verification: Verification | None = None
    model: ModelUsage = Field(default_factory=ModelUsage)
    error: str | None = None
    exit_status: int = 0  # qfix's own exit code

    def add_result(self, result: FixResult) -> None:
        a = result.accounting
        self.engine_outcome, self.plan = result.outcome, result.plan
        self.summary, self.summary_by = visible(result.summary), result.summary_by
        self.error = result.error if result.outcome != "failed" else None  # that text was meant for the model
        ran = [c for c in result.validation.checks if not c.name.startswith("parses:")]
        if ran:  # the engine ran the verify command on its fix, in a temporary copy
            self.verification = Verification(command=ran[-1].name, exit_code=None, passed=ran[-1].ok,
                                              in_temporary_copy=True)
        self.diffs = [FileDiff(path=c.path, diff=c.diff, created=c.created) for c in result.changes]
        self.suggestions = list(result.suggestions)
        self.validation = result.validation
        self.refused_writes = list(result.refused_writes)
        self.recovered_calls = list(result.recovered_calls)
        self.runs_later, self.not_tracked = list(result.runs_later), list(result.not_tracked)
        self.in_submodule = list(result.in_submodule)
        self.model = ModelUsage(
            thinking_calls=a.thinking_calls, non_thinking_calls=a.non_thinking_calls, prompt_tokens=a.prompt_tokens,
            completion_tokens=a.completion_tokens, cached_tokens=a.cached_tokens, wall_seconds=round(a.wall_seconds, 3),
            cache_hit=a.plan_from_cache, plan_reads=a.plan_reads,
        )
