"""Real-model tier: the fix benchmark end to end against llama.cpp serving SmolLM2-135M.

The model is far too small to fix anything: the solved rate is expected to be about zero. The point is
that the real pipeline runs (server, engine, sandboxed verification, apply, the harness's own checks),
prints its table, and nothing unsafe happens: the cases' sources are untouched and a workspace changes
only where the engine said it would."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from bench.fixes import harness, report
from bench.fixes.case import CASES_DIR, load_cases

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(1200)]  # CPU inference: minutes

CASES = ["py-off-by-one-pages", "sh-make-target-typo"]  # a fix case and a suggestion case: minutes on a CPU
SKIP = {".git", "target", "node_modules", "__pycache__"}


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not SKIP & set(p.relative_to(root).parts)}


async def test_the_benchmark_runs_on_a_real_model_prints_its_table_and_changes_nothing_it_should_not(llama_server, tmp_path):
    sources = tree(CASES_DIR)
    cases = load_cases(CASES)
    settings = {"base_url": llama_server, "plan_max_tokens": 160, "patch_max_tokens": 160, "max_rounds": 2}
    runs = await harness.run_benchmark(cases, ["default"], tmp_path, settings, echo=lambda r: print(r.case, r.first.status, flush=True))
    table = report.render(report.Report(base_url=llama_server, runs=runs, totals=report.totals(runs)))
    print(table)

    assert all(name in table for name in CASES) and "total (2 cases)" in table
    assert tree(CASES_DIR) == sources
    for run, case in zip(runs, cases):
        assert run.first.status in ("solved", "failed", "no change"), run.first.note  # not an error, not broken
        assert run.first.thinking_calls == 1 and not run.first.plan_from_cache
        last = run.second or run.first
        ws = tmp_path / "ws-default" / case.id
        changed = {path for path, digest in tree(ws).items() if tree(case.root / "files").get(path) != digest}
        held_out = set(tree(case.root / "hidden")) if (case.root / "hidden").is_dir() else set()
        assert changed - held_out <= set(last.changed_files), f"{case.id}: written without being reported"
