"""The table a benchmark run prints, its totals, the JSON it saves, and deltas against an older run."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, Field

from bench.fixes.harness import CaseRun, Pass

OUTCOMES = ("solved", "failed", "no change", "skipped", "broken", "error")


class Totals(BaseModel):
    cases: int = 0
    outcomes: dict[str, int] = Field(default_factory=dict)
    thinking_calls: int = 0
    non_thinking_calls: int = 0
    plan_reads: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    wall_seconds: float = 0.0
    rounds: int = 0
    second_pass_cache_hits: int = 0
    second_pass_thinking_calls: int = 0
    second_passes: int = 0


class Report(BaseModel):
    base_url: str
    model: str | None = None
    double: bool = False  # scripted test double: the figures say nothing about quality or cost
    prefix_cache_reset: bool = False  # emptied before each strategy, so none inherits another's cached prefixes
    runs: list[CaseRun]
    totals: dict[str, Totals]  # by strategy


def totals(runs: list[CaseRun]) -> dict[str, Totals]:
    out: dict[str, Totals] = {}
    for run in runs:
        t = out.setdefault(run.strategy, Totals())
        t.cases += 1
        t.outcomes[run.first.status] = t.outcomes.get(run.first.status, 0) + 1
        p = run.first
        t.thinking_calls += p.thinking_calls
        t.non_thinking_calls += p.non_thinking_calls
        t.plan_reads += p.plan_reads
        t.prompt_tokens += p.prompt_tokens
        t.cached_tokens += p.cached_tokens
        t.completion_tokens += p.completion_tokens
        t.wall_seconds += p.wall_seconds
        t.rounds += p.rounds
        if run.second is not None:
            t.second_passes += 1
            t.second_pass_cache_hits += run.second.plan_from_cache
            t.second_pass_thinking_calls += run.second.thinking_calls
    return out


HEADER = ("case", "result", "think", "plain", "reads", "prompt", "cached", "compl", "wall s", "rounds", "2nd pass")


def _second(p: Pass | None) -> str:
    if p is None:
        return "-"
    hit = "hit" if p.plan_from_cache else "miss"
    return f"{hit}, {p.thinking_calls} think, {p.status}"


def _row(run: CaseRun) -> tuple[str, ...]:
    p = run.first
    result = p.status + (f" ({p.note})" if p.note and p.status != "solved" else "")
    if p.status in ("skipped", "broken"):
        return (run.case, result, *("",) * 9)
    return (run.case, result[:48], str(p.thinking_calls), str(p.non_thinking_calls), str(p.plan_reads), str(p.prompt_tokens),
            str(p.cached_tokens), str(p.completion_tokens), f"{p.wall_seconds:.1f}", str(p.rounds), _second(run.second))


def _grid(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    numeric = set(range(2, 10))
    lines = []
    for row in rows:
        cells = [c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def outcome_line(t: Totals) -> str:
    return " · ".join(f"{name} {t.outcomes[name]}" for name in OUTCOMES if t.outcomes.get(name))


def render(report: Report) -> str:
    """Per strategy: one row per case and a total; then one summary row per strategy."""
    parts = []
    for strategy, t in report.totals.items():
        rows = [HEADER] + [_row(r) for r in report.runs if r.strategy == strategy]
        rows.append((f"total ({t.cases} cases)", outcome_line(t), str(t.thinking_calls), str(t.non_thinking_calls),
                     str(t.plan_reads), str(t.prompt_tokens), str(t.cached_tokens), str(t.completion_tokens), f"{t.wall_seconds:.1f}",
                     str(t.rounds), f"{t.second_pass_cache_hits}/{t.second_passes} hits, "
                     f"{t.second_pass_thinking_calls} think"))
        parts.append(f"strategy: {strategy}\n{_grid(rows)}")
    parts.append("summary (first pass; 2nd pass = the same case again with the same plan cache)\n" + summary(report))
    if not report.prefix_cache_reset and len(report.totals) > 1:
        parts.append("NOTE: the server's prefix cache could not be emptied between strategies (vLLM offers "
                     "POST /reset_prefix_cache with VLLM_SERVER_DEV_MODE=1): later strategies may reuse earlier prefixes.")
    if report.double:
        parts.append("NOTE: answers scripted by the vLLM test double, replaying each case's known fix. These figures "
                     "test the harness; they are not evidence of fix quality or cost.")
    return "\n\n".join(parts)


def per_fix(count: int, t: Totals) -> str:
    """`count` per case the engine ran (skipped and broken cases make no call)."""
    fixes = t.cases - t.outcomes.get("skipped", 0) - t.outcomes.get("broken", 0)
    return f"{count / fixes:.2f}" if fixes else "-"


def summary(report: Report) -> str:
    rows = summary_rows(report)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                     for r in rows)


def summary_rows(report: Report) -> list[tuple[str, ...]]:
    """The heading, then one row per strategy."""
    rows = [("strategy", "solved", "failed", "no change", "skipped", "think", "think/fix", "plain", "reads", "prompt",
             "cached %", "compl", "wall s", "2nd-pass hits", "2nd think")]
    for strategy, t in report.totals.items():
        o = Counter(t.outcomes)
        share = f"{100 * t.cached_tokens / t.prompt_tokens:.0f}" if t.prompt_tokens else "-"
        rows.append((strategy, str(o["solved"]), str(o["failed"]), str(o["no change"]), str(o["skipped"]),
                     str(t.thinking_calls), per_fix(t.thinking_calls, t), str(t.non_thinking_calls), str(t.plan_reads),
                     str(t.prompt_tokens), share, str(t.completion_tokens), f"{t.wall_seconds:.1f}", f"{t.second_pass_cache_hits}/{t.second_passes}",
                     str(t.second_pass_thinking_calls)))
    return rows


def compare(new: Report, old: Report) -> str:
    """Deltas per strategy (new − old) and every case whose first-pass result changed."""
    lines = [f"compared with {old.base_url}" + (" (test double)" if old.double else "")]
    fields = ("thinking_calls", "non_thinking_calls", "plan_reads", "prompt_tokens", "cached_tokens", "completion_tokens",
              "wall_seconds")
    for strategy, t in new.totals.items():
        before = old.totals.get(strategy)
        if before is None:
            lines.append(f"{strategy}: not in the old run")
            continue
        solved = t.outcomes.get("solved", 0) - before.outcomes.get("solved", 0)
        deltas = [f"solved {solved:+d}"] + [f"{name} {_delta(getattr(t, name), getattr(before, name))}" for name in fields]
        lines.append(f"{strategy}: " + ", ".join(deltas))
    old_status = {(r.strategy, r.case): r.first.status for r in old.runs}
    for run in new.runs:
        was = old_status.get((run.strategy, run.case))
        if was is not None and was != run.first.status:
            lines.append(f"  {run.strategy} {run.case}: {was} -> {run.first.status}")
    return "\n".join(lines)


def _delta(new: Any, old: Any) -> str:
    return f"{new - old:+.1f}" if isinstance(new, float) else f"{new - old:+d}"
