"""`qwen-lsp stats`: a summary of the local call log, and of vLLM's /metrics."""

from __future__ import annotations

import statistics
from collections import defaultdict

from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel

from qwen_lsp.llm.calllog import CallRecord, FixRecord


class Stats(BaseModel):
    fixes: int
    calls: int
    calls_per_fix: float | None
    thinking_calls: int
    non_thinking_calls: int
    disk_cache_hit_rate: float | None  # fixes whose plan came from the reasoning cache
    prefix_cache_hit_rate: float | None  # cached prompt tokens / prompt tokens, as the server reported
    latency_p50: float | None
    latency_p95: float | None
    ttft_p50: float | None
    ttft_p95: float | None
    failed_calls: int
    prefix_cache_missed_fixes: int = 0  # fixes whose patch rounds found none of the previous prompt cached


def summarize(records: list[CallRecord | FixRecord]) -> Stats:
    calls = [r for r in records if isinstance(r, CallRecord)]
    fixes = [r for r in records if isinstance(r, FixRecord)]
    per_fix: dict[str, int] = defaultdict(int)
    for call in calls:
        if call.fix_id:
            per_fix[call.fix_id] += 1
    prompt = sum(c.prompt_tokens for c in calls)
    ok = [c for c in calls if c.outcome == "ok"]
    ttfts = [c.ttft for c in ok if c.ttft is not None]
    return Stats(
        fixes=len(fixes),
        calls=len(calls),
        calls_per_fix=round(statistics.fmean(per_fix.values()), 2) if per_fix else None,
        thinking_calls=sum(c.mode == "thinking" for c in calls),
        non_thinking_calls=sum(c.mode == "non-thinking" for c in calls),
        disk_cache_hit_rate=round(sum(f.plan_from_cache for f in fixes) / len(fixes), 3) if fixes else None,
        prefix_cache_hit_rate=round(sum(c.cached_tokens for c in calls) / prompt, 3) if prompt else None,
        latency_p50=_percentile([c.seconds for c in ok], 50),
        latency_p95=_percentile([c.seconds for c in ok], 95),
        ttft_p50=_percentile(ttfts, 50),
        ttft_p95=_percentile(ttfts, 95),
        failed_calls=sum(c.outcome not in ("ok", "cancelled") for c in calls),
        prefix_cache_missed_fixes=sum(f.prefix_cache_missed for f in fixes),
    )


def _percentile(values: list[float], pct: int) -> float | None:
    """Nearest-rank percentile: the value a user actually saw, not an interpolation."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-pct * len(ordered) // 100))  # ceil
    return round(ordered[rank - 1], 3)


class ServerMetrics(BaseModel):
    prompt_tokens: float | None = None
    generation_tokens: float | None = None
    prefix_cache_queries: float | None = None
    prefix_cache_hits: float | None = None
    prefix_cache_hit_rate: float | None = None
    ttft_mean: float | None = None


def parse_metrics(text: str) -> ServerMetrics:
    """The few vLLM Prometheus metrics that say whether prefix caching pays off."""
    values: dict[str, float] = defaultdict(float)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            values[sample.name] += sample.value
    def get(name: str) -> float | None:
        return values.get(f"vllm:{name}")
    queries, hits = get("prefix_cache_queries_total"), get("prefix_cache_hits_total")
    ttft_sum, ttft_count = get("time_to_first_token_seconds_sum"), get("time_to_first_token_seconds_count")
    return ServerMetrics(
        prompt_tokens=get("prompt_tokens_total"),
        generation_tokens=get("generation_tokens_total"),
        prefix_cache_queries=queries,
        prefix_cache_hits=hits,
        prefix_cache_hit_rate=round(hits / queries, 3) if queries and hits is not None else None,
        ttft_mean=round(ttft_sum / ttft_count, 3) if ttft_count and ttft_sum is not None else None,
    )


def render(stats: Stats, metrics: ServerMetrics | None = None) -> str:
    def fmt(value: float | None, pct: bool = False) -> str:
        if value is None:
            return "-"
        return f"{value:.1%}" if pct else f"{value:g}"

    lines = [
        f"fixes                  {stats.fixes}",
        f"model calls            {stats.calls} ({stats.thinking_calls} thinking, {stats.non_thinking_calls} non-thinking, {stats.failed_calls} failed)",
        f"calls per fix          {fmt(stats.calls_per_fix)}",
        f"reasoning cache hits   {fmt(stats.disk_cache_hit_rate, pct=True)} of fixes reused a cached plan",
        f"prefix cache hits      {fmt(stats.prefix_cache_hit_rate, pct=True)} of prompt tokens (server-reported)",
        f"latency p50 / p95      {fmt(stats.latency_p50)}s / {fmt(stats.latency_p95)}s",
        f"first token p50 / p95  {fmt(stats.ttft_p50)}s / {fmt(stats.ttft_p95)}s",
    ]
    if stats.prefix_cache_missed_fixes:
        lines.append(f"warning: in {stats.prefix_cache_missed_fixes} fix(es) a patch round repeated the previous prompt "
                     "and the server cached none of it (its prefix cache is not hitting): run `qwen-lsp doctor`")
    if metrics is not None:
        lines += [
            "vLLM /metrics:",
            f"  prefix cache hits    {fmt(metrics.prefix_cache_hit_rate, pct=True)} "
            f"({fmt(metrics.prefix_cache_hits)} of {fmt(metrics.prefix_cache_queries)} tokens queried)",
            f"  mean time to first   {fmt(metrics.ttft_mean)}s",
            f"  prompt / generated   {fmt(metrics.prompt_tokens)} / {fmt(metrics.generation_tokens)} tokens",
        ]
    return "\n".join(lines)
