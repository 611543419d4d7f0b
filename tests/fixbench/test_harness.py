"""The fix benchmark against the vLLM test double: the harness runs cases through the real engine and
judges them itself, and each strategy sends what it claims (read from the double's request records).

The double replays each case's known fix, so "solved" here tests the harness, not a model."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.fixes import harness, report
from bench.fixes.case import Case, Edit, Reference, load_case, load_cases
from bench.fixes.replay import responder
from qwen_lsp.context.prompt import HEADINGS as SECTIONS
from tests.vllm_double import VLLMDouble

HEADINGS = set(SECTIONS.values())

CASES = Path(__file__).resolve().parents[2] / "bench" / "fixes" / "cases"


def case(name: str) -> Case:
    return load_case(CASES / name)


async def run(double: VLLMDouble, c: Case, strategy: str, tmp_path: Path, *, script: Case | None = None, second_pass=True,
              cache: str = "cache"):
    """Run `c`; the double replays `script`'s reference (default: `c`'s). Returns the run and the
    request bodies of each pass."""
    double.responder = responder(script or c)
    settings = {"base_url": double.base_url, "max_retries": 0}
    first = await harness.run_pass(c, tmp_path / "ws", {**settings, "strategy": strategy, "cache_dir": tmp_path / cache})
    first_bodies = double.chat_requests()
    double.requests.clear()
    second = None
    if second_pass:
        second = await harness.run_pass(c, tmp_path / "ws", {**settings, "strategy": strategy, "cache_dir": tmp_path / cache})
    return first, second, first_bodies, double.chat_requests()


def thinking(bodies: list[dict]) -> list[bool]:
    return [b["chat_template_kwargs"]["enable_thinking"] for b in bodies]


def plan_calls(bodies: list[dict]) -> int:
    return sum("structured_outputs" in b for b in bodies)


def test_there_are_enough_sound_looking_cases_in_every_language():
    cases = load_cases()
    assert len(cases) >= 30
    assert {c.language for c in cases} >= {"python", "javascript", "typescript", "go", "rust", "shell"}
    assert sum(c.kind == "suggest" for c in cases) >= 3
    for c in cases:
        assert c.inspiration and c.requires and (c.hidden.command or c.hidden.unchanged), c.id
        assert c.reference.edits or c.reference.suggest, c.id
        assert (c.kind == "suggest") == (c.suggestion is not None), c.id


# A handful here; `bench/fixes/run --check-cases` checks them all (every toolchain, about a minute).
@pytest.mark.parametrize("name", ["py-off-by-one-pages", "py-config-section-typo", "js-async-foreach", "sh-git-subcommand-typo"])
def test_a_case_fails_as_shipped_and_its_known_fix_passes_every_check(name, tmp_path):
    status, why = harness.self_check(case(name), tmp_path)
    assert status in ("solved", "skipped"), why


async def test_default_thinks_once_on_a_first_pass_and_not_at_all_on_the_second(vllm, tmp_path):
    first, second, bodies1, bodies2 = await run(vllm, case("py-off-by-one-pages"), "default", tmp_path)
    assert first.status == "solved" and second.status == "solved"
    assert thinking(bodies1) == [True, False, False, False] and plan_calls(bodies1) == 1
    assert thinking(bodies2) == [False, False, False] and plan_calls(bodies2) == 0
    assert (first.thinking_calls, first.plan_from_cache, second.thinking_calls, second.plan_from_cache) == (1, False, 0, True)
    assert first.rounds == 3 and first.changed_files == ["pages.py"]
    # Byte-stable prefix: every request extends the one before it.
    for earlier, later in zip(bodies1, bodies1[1:]):
        assert later["messages"][: len(earlier["messages"])] == earlier["messages"]


async def test_reading_plan_reads_once_inside_the_plan_and_the_second_pass_replays_it(vllm, tmp_path):
    first, second, bodies1, bodies2 = await run(vllm, case("py-off-by-one-pages"), "reading_plan", tmp_path)
    assert first.status == "solved" and second.status == "solved"
    # A thinking round that reads, the plan given as text in the next one, then the patch rounds.
    assert thinking(bodies1) == [True, True, False, False, False] and plan_calls(bodies1) == 0
    assert (first.thinking_calls, first.plan_reads, second.thinking_calls, second.plan_reads) == (2, 1, 0, 0)
    assert second.plan_from_cache and thinking(bodies2) == [False, False, False]
    read = bodies1[1]["messages"][-1]
    assert read["role"] == "tool" and read["content"].startswith("pages.py (lines 1-")
    for earlier, later in zip(bodies1, bodies1[1:]):
        assert later["messages"][: len(earlier["messages"])] == earlier["messages"]
        assert later["tools"] == earlier["tools"]
    # The cached plan brings its read: the same conversation after the context (whose test timings differ).
    assert bodies2[0]["messages"][2:] == bodies1[2]["messages"][2:]
    runs = [harness.CaseRun(case="c", language="python", kind="fix", bug_class="b", strategy="reading_plan",
                            first=first, second=second)]
    heading, row = report.summary_rows(report.Report(base_url="x", runs=runs, totals=report.totals(runs)))
    columns = dict(zip(heading, row))
    assert (columns["think/fix"], columns["reads"], columns["2nd-pass hits"]) == ("2.00", "1", "1/1")


async def test_reading_plan_searches_for_a_suggestion_case(vllm, tmp_path):
    first, _, bodies, _ = await run(vllm, case("sh-make-target-typo"), "reading_plan", tmp_path, second_pass=False)
    assert first.status == "solved" and first.plan_reads == 1
    asked = bodies[1]["messages"][-2]["tool_calls"][0]["function"]
    assert asked["name"] == "search_code"


async def test_think_every_round_thinks_on_every_patch_round_too(vllm, tmp_path):
    first, second, bodies1, bodies2 = await run(vllm, case("py-off-by-one-pages"), "think_every_round", tmp_path)
    assert first.status == "solved"
    assert thinking(bodies1) == [True] * 4 and plan_calls(bodies1) == 1
    assert thinking(bodies2) == [True] * 3 and plan_calls(bodies2) == 0  # the plan is still cached
    assert first.thinking_calls == 4 and first.non_thinking_calls == 0


async def test_no_thinking_plans_and_patches_without_thinking(vllm, tmp_path):
    first, second, bodies1, bodies2 = await run(vllm, case("py-off-by-one-pages"), "no_thinking", tmp_path)
    assert first.status == "solved"
    assert not any(thinking(bodies1 + bodies2))
    assert plan_calls(bodies1) == 1 and plan_calls(bodies2) == 0 and second.plan_from_cache


async def test_no_plan_sends_only_patch_rounds_and_caches_nothing(vllm, tmp_path):
    first, second, bodies1, bodies2 = await run(vllm, case("py-off-by-one-pages"), "no_plan", tmp_path)
    assert first.status == "solved" and second.status == "solved"
    assert plan_calls(bodies1 + bodies2) == 0 and not any(thinking(bodies1 + bodies2))
    assert len(bodies1) == 3 and not second.plan_from_cache
    assert "carry out the plan" not in bodies1[0]["messages"][-1]["content"]


async def test_prefix_unstable_reorders_the_context_every_call_and_loses_cached_tokens(vllm, tmp_path):
    stable, _, stable_bodies, _ = await run(vllm, case("py-off-by-one-pages"), "default", tmp_path, second_pass=False)
    vllm.reset()  # an empty prefix cache for each, and the same workspace path (it shows in tracebacks)
    unstable, _, bodies, _ = await run(vllm, case("py-off-by-one-pages"), "prefix_unstable", tmp_path, second_pass=False,
                                       cache="cache-unstable")
    assert unstable.status == "solved"
    contexts = [b["messages"][1]["content"] for b in bodies]
    assert all(a != b for a, b in zip(contexts, contexts[1:]))  # re-ordered on every call
    heads = [[line for line in c.splitlines() if line in HEADINGS] for c in contexts]
    assert heads[0] == [line for line in stable_bodies[0]["messages"][1]["content"].splitlines() if line in HEADINGS]
    assert heads[1] == heads[0][1:] + heads[0][:1]  # rotated by one section per call
    assert all(sorted(c.splitlines()) == sorted(contexts[0].splitlines()) for c in contexts)  # same content, moved
    assert [b["messages"][2:] for b in bodies[1:2]] == [stable_bodies[1]["messages"][2:]]  # the rest is unchanged
    assert unstable.cached_tokens < stable.cached_tokens and unstable.prompt_tokens == pytest.approx(stable.prompt_tokens, rel=0.01)


async def test_a_fix_that_edits_the_test_is_caught_by_the_hidden_check(vllm, tmp_path):
    c = case("py-off-by-one-pages")
    cheat = c.model_copy(update={"reference": Reference(edits=[
        Edit(path="test_pages.py", old="[[1, 2], [3, 4], [5]]", new="[[1, 2], [3, 4]]")])})
    first, _, _, _ = await run(vllm, c, "default", tmp_path, script=cheat, second_pass=False)
    assert first.status == "failed" and first.note == "hidden: changed test_pages.py"


async def test_a_wrong_fix_fails_and_no_edit_is_no_change(vllm, tmp_path):
    c = case("py-off-by-one-pages")
    wrong = c.model_copy(update={"reference": Reference(edits=[Edit(path="pages.py", old="len(items) - size", new="len(items) - 1")])})
    first, _, _, _ = await run(vllm, c, "default", tmp_path / "a", script=wrong, second_pass=False)
    # The engine's own sandboxed verification refuses it: nothing is applied.
    assert first.status == "no change" and first.engine_outcome == "failed" and first.changed_files == []
    idle = c.model_copy(update={"reference": Reference()})
    first, _, _, _ = await run(vllm, c, "default", tmp_path / "b", script=idle, second_pass=False)
    assert first.status == "no change"


async def test_a_suggestion_case_is_solved_by_a_matching_command_that_is_never_run(vllm, tmp_path):
    c = case("sh-make-target-typo")
    first, _, _, _ = await run(vllm, c, "default", tmp_path, second_pass=False)
    assert first.status == "solved" and first.suggestions == [{"command": "make test", "risk": "modifies files"}]
    other = c.model_copy(update={"reference": Reference(suggest="make clean")})
    first, _, _, _ = await run(vllm, c, "default", tmp_path / "b", script=other, second_pass=False)
    assert first.status == "failed" and first.note == "no matching suggestion"


async def test_a_missing_toolchain_is_reported_as_skipped(vllm, tmp_path):
    c = case("py-off-by-one-pages").model_copy(update={"requires": ["no-such-tool-qwen"]})
    run_ = await harness.run_case(c, "default", tmp_path, {"base_url": vllm.base_url})
    assert run_.first.status == "skipped" and run_.first.note == "no no-such-tool-qwen"
    assert vllm.chat_requests() == []
    table = report.render(report.Report(base_url="x", runs=[run_], totals=report.totals([run_])))
    assert "skipped (no no-such-tool-qwen)" in table
