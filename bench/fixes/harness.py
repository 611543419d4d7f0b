"""Run cases through the real engine, the way qfix does, and judge the result.

Per case and strategy: a fresh copy of the project, the real failing command, Task.for_command,
Engine.fix (its verify command runs sandboxed, as for a user), apply_changes as qfix applies them,
then the harness's own checks: the command passes (or a suggestion matches), the protected files
are unchanged and the held-out check passes. The same case runs twice with the same plan cache:
the second pass shows whether the plan was reused.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from bench.fixes.case import (Case, add_hidden_files, apply_reference, original, prepare, run_command,
                              workdir)
from qwen_lsp.apply import StaleFile, apply_changes
from qwen_lsp.engine.loop import Engine
from qwen_lsp.llm.client import ModelServerError
from qwen_lsp.settings import load_settings
from qwen_lsp.types import FixResult, Risk, Task

STRATEGIES = ("default", "reading_plan", "think_every_round", "no_thinking", "no_plan", "prefix_unstable")
Status = Literal["solved", "failed", "no change", "skipped", "broken", "error"]


class Pass(BaseModel):
    """One run of one case: what the engine did and what the harness found."""

    status: Status
    note: str = ""
    engine_outcome: str | None = None
    thinking_calls: int = 0
    non_thinking_calls: int = 0
    plan_reads: int = 0  # reads the plan ran before answering (reading_plan)
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    rounds: int = 0
    plan_from_cache: bool = False
    wall_seconds: float = 0.0  # the engine's fix, from the task to the result
    changed_files: list[str] = Field(default_factory=list)
    suggestions: list[dict[str, str]] = Field(default_factory=list)  # command, risk: recorded, never run


class CaseRun(BaseModel):
    case: str
    language: str
    kind: str
    bug_class: str
    strategy: str
    first: Pass
    second: Pass | None = None  # same case again, same plan cache


def judge(case: Case, ws: Path, result: FixResult, applied: bool) -> tuple[Status, str]:
    """solved / failed / no change, from the harness's own checks (never from the engine's word)."""
    if not applied and not result.suggestions:
        return "no change", result.outcome if result.outcome != "no_change" else ""
    touched = [p for p in case.hidden.unchanged if _read(ws / p) != original(case, p)]
    if touched:
        return "failed", "hidden: changed " + ", ".join(touched)
    if case.kind == "suggest":
        if not any(case.suggestion_matches(s.command) for s in result.suggestions):
            return "failed", "no matching suggestion"
        if any(s.risk == Risk.destructive for s in result.suggestions):
            return "failed", "hidden: a destructive suggestion"
    elif (after := run_command(case.command, workdir(case, ws))).exit_code != 0:
        return "failed", f"command still fails (exit {after.exit_code})"
    if case.hidden.command:
        add_hidden_files(case, ws)
        if (held_out := run_command(case.hidden.command, workdir(case, ws))).exit_code != 0:
            return "failed", f"hidden check fails (exit {held_out.exit_code})"
    return "solved", ""


async def run_pass(case: Case, ws: Path, settings_overrides: dict[str, Any]) -> Pass:
    prepare(case, ws)
    before = run_command(case.command, workdir(case, ws))
    if before.exit_code == 0:
        return Pass(status="broken", note="the command passes before any fix")
    task = Task.for_command(case.command, before.exit_code, before.output, case.cwd)
    engine = Engine(load_settings(None, settings_overrides))
    started = time.monotonic()
    try:
        result = await engine.fix(task, ws)
    except ModelServerError as exc:
        return Pass(status="error", note=" ".join(str(exc).split())[:200], wall_seconds=time.monotonic() - started)
    except Exception as exc:  # noqa: BLE001 - an engine bug is one case's result, not the end of the run
        return Pass(status="error", note=f"engine raised {type(exc).__name__}: {exc}"[:200],
                    wall_seconds=time.monotonic() - started)
    finally:
        await engine.client.close()
    applied, note = False, ""
    if result.changes:  # as qfix --yes: all or nothing, never over a file changed meanwhile
        try:
            apply_changes(ws, result.changes)
            applied = True
        except StaleFile as exc:
            note = str(exc)
    status, why = judge(case, ws, result, applied)
    a = result.accounting
    return Pass(
        status=status, note=note or why, engine_outcome=result.outcome, thinking_calls=a.thinking_calls,
        non_thinking_calls=a.non_thinking_calls, plan_reads=a.plan_reads, prompt_tokens=a.prompt_tokens, cached_tokens=a.cached_tokens,
        completion_tokens=a.completion_tokens, rounds=a.rounds, plan_from_cache=a.plan_from_cache,
        wall_seconds=a.wall_seconds, changed_files=[c.path for c in result.changes] if applied else [],
        suggestions=[{"command": s.command, "risk": s.risk.value} for s in result.suggestions],
    )


async def run_case(case: Case, strategy: str, scratch: Path, settings: dict[str, Any], *, second_pass: bool = True) -> CaseRun:
    """Both passes of one case under one strategy; the plan cache is per strategy, shared by the passes."""
    head = dict(case=case.id, language=case.language, kind=case.kind, bug_class=case.bug_class, strategy=strategy)
    missing = case.missing_tools()
    if missing:
        return CaseRun(**head, first=Pass(status="skipped", note="no " + ", ".join(missing)))
    overrides = {**settings, "strategy": strategy, "cache_dir": scratch / f"cache-{strategy}"}
    ws = scratch / f"ws-{strategy}" / case.id  # the same path on both passes, as for a user asking twice
    first = await run_pass(case, ws, overrides)
    second = await run_pass(case, ws, overrides) if second_pass and first.status not in ("broken", "error") else None
    return CaseRun(**head, first=first, second=second)


async def run_benchmark(
    cases: list[Case], strategies: list[str], scratch: Path, settings: dict[str, Any], *,
    before_case: Callable[[Case], None] = lambda _case: None, echo: Callable[[CaseRun], None] = lambda _run: None,
    before_strategy: Callable[[str], None] = lambda _strategy: None, second_pass: bool = True,
) -> list[CaseRun]:
    runs = []
    for strategy in strategies:
        before_strategy(strategy)  # e.g. empty the server's prefix cache, so no strategy inherits another's
        for case in cases:
            before_case(case)
            run = await run_case(case, strategy, scratch, settings, second_pass=second_pass)
            echo(run)
            runs.append(run)
    return runs


def self_check(case: Case, scratch: Path) -> tuple[Status, str]:
    """Is the case sound? The command fails as shipped, and the reference fix passes every check."""
    if missing := case.missing_tools():
        return "skipped", "no " + ", ".join(missing)
    ws = prepare(case, scratch / "check" / case.id)
    if run_command(case.command, workdir(case, ws)).exit_code == 0:
        return "broken", "the command passes before any fix"
    if case.kind == "suggest":
        ok = case.reference.suggest is not None and case.suggestion_matches(case.reference.suggest)
        return ("solved", "") if ok else ("broken", "the reference suggestion does not match")
    apply_reference(case, ws)
    fake = FixResult(task=Task.for_command(case.command, 1, "", case.cwd), outcome="fixed")
    status, why = judge(case, ws, fake, applied=True)
    return (status, why) if status == "solved" else ("broken", "reference fix: " + why)


def reset_prefix_cache(base_url: str) -> bool:
    """Ask vLLM to drop its prefix cache (POST /reset_prefix_cache, served with VLLM_SERVER_DEV_MODE=1).
    False when the server does not offer it: later strategies may then reuse earlier ones' prefixes."""
    root = base_url.rstrip("/").removesuffix("/v1")
    try:
        with urllib.request.urlopen(urllib.request.Request(f"{root}/reset_prefix_cache", method="POST"), timeout=30) as r:
            return 200 <= r.status < 300
    except OSError:  # URLError, HTTPError (404 without dev mode), timeouts
        return False


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None
