"""The plan cache follows the code, not the checkout: the same failure in a second clone,
a worktree or a CI checkout of the same code reuses the plan without a thinking call."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from qwen_lsp.engine.cache import relative_to_root, task_fingerprint
from qwen_lsp.types import Task, TaskKind
from tests.calc_project import BUGGY, PYTEST, make_project
from tests.engine.helpers import make_engine, script_fix
from tests.vllm_double import VLLMDouble


@pytest.fixture
def away_from_tmp() -> Iterator[Path]:
    """A scratch directory whose path has no "/tmp/" in it.

    The old key blurred any /tmp/... path, so checkouts under pytest's tmp_path
    would share a plan even without path normalisation; these must not.
    """
    for base in (Path("/dev/shm"), Path.home(), Path.cwd()):
        if base.is_dir() and os.access(base, os.W_OK) and "/tmp/" not in f"{base.resolve()}/":
            scratch = Path(tempfile.mkdtemp(prefix="qwen-lsp-checkouts-", dir=base))
            yield scratch
            shutil.rmtree(scratch, ignore_errors=True)
            return
    pytest.skip("no writable directory outside /tmp")


def traceback_task(root: Path) -> Task:
    """What pytest prints in `root`: absolute paths of that checkout all over it."""
    output = f"""============================= test session starts ==============================
rootdir: {root}
collected 1 item

test_calc.py F                                                           [100%]

=================================== FAILURES ===================================
___________________________________ test_add ___________________________________
Traceback (most recent call last):
  File "{root}/test_calc.py", line 5, in test_add
    assert add(2, 3) == 5
  File "{root}/calc.py", line 2, in add
    total = a - b
AssertionError: assert -1 == 5
{root}/test_calc.py:5: AssertionError
FAILED test_calc.py::test_add - assert -1 == 5
1 failed in 0.02s
"""
    return Task(kind=TaskKind.command, description="pytest failed", command=PYTEST, terminal_output=output, exit_code=1)


def thinking_requests(double: VLLMDouble) -> int:
    return sum(body["chat_template_kwargs"]["enable_thinking"] is True for body in double.chat_requests())


async def test_a_second_checkout_of_the_same_code_reuses_the_plan(vllm, away_from_tmp):
    first, second = make_project(away_from_tmp / "ci" / "build-17" / "proj"), make_project(away_from_tmp / "home" / "clone")
    cache = away_from_tmp / "cache"

    script_fix(vllm)
    one = await make_engine(vllm, cache).fix(traceback_task(first), first)
    assert one.outcome == "fixed" and thinking_requests(vllm) == 1

    vllm.reset()
    script_fix(vllm, with_plan=False)
    two = await make_engine(vllm, cache).fix(traceback_task(second), second)
    assert thinking_requests(vllm) == 0
    assert two.accounting.plan_from_cache and two.outcome == "fixed"
    assert two.changes[0].updated == BUGGY.replace("total = a - b", "total = a + b")


async def test_a_checkout_with_different_code_plans_again(vllm, away_from_tmp):
    first, second = make_project(away_from_tmp / "a" / "proj"), make_project(away_from_tmp / "b" / "proj")
    (second / "calc.py").write_text(BUGGY.replace("total", "result"))
    cache = away_from_tmp / "cache"

    script_fix(vllm)
    await make_engine(vllm, cache).fix(traceback_task(first), first)
    vllm.reset()
    script_fix(vllm, name="result")
    again = await make_engine(vllm, cache).fix(traceback_task(second), second)
    assert thinking_requests(vllm) == 1 and not again.accounting.plan_from_cache


def test_only_paths_under_the_root_are_made_relative() -> None:
    text = 'File "/w/proj/calc.py", line 2\nrootdir: /w/proj\nalso /w/proj2/x.py and /v/w/proj/y.py'
    assert relative_to_root(text, Path("/w/proj")) == (
        'File "calc.py", line 2\nrootdir: .\nalso /w/proj2/x.py and /v/w/proj/y.py'
    )


def test_the_key_ignores_where_the_checkout_is_but_not_what_failed() -> None:
    a, b = Path("/home/alice/src/proj"), Path("/srv/ci/build-9/proj")
    hashes = {"calc.py": "h1"}
    assert task_fingerprint(traceback_task(a), hashes, a) == task_fingerprint(traceback_task(b), hashes, b)
    other = traceback_task(b).model_copy(update={"terminal_output": traceback_task(b).terminal_output.replace("-1", "-2")})
    assert task_fingerprint(traceback_task(a), hashes, a) != task_fingerprint(other, hashes, b)


async def test_a_plan_cached_against_one_server_is_not_replayed_against_another(vllm, away_from_tmp):
    """The same failure, the same code, the same cache dir: a second server (another URL) and a second
    model (same URL) each think for themselves; asking the first again restores its plan."""
    project = make_project(away_from_tmp / "proj")
    cache = away_from_tmp / "cache"
    script_fix(vllm)
    first = await make_engine(vllm, cache).fix(traceback_task(project), project)
    assert first.changes and thinking_requests(vllm) == 1

    with VLLMDouble() as other:  # another server: a small local model, a test double, a colleague's
        script_fix(other)
        there = await make_engine(other, cache).fix(traceback_task(project), project)
        assert thinking_requests(other) == 1 and not there.accounting.plan_from_cache
    vllm.reset()
    vllm.model = "smollm2"  # the same URL serving another model now
    script_fix(vllm)
    again = await make_engine(vllm, cache).fix(traceback_task(project), project)
    assert thinking_requests(vllm) == 1 and not again.accounting.plan_from_cache
    vllm.model = "Qwen/Qwen3.6-27B"

    vllm.reset()
    script_fix(vllm, with_plan=False)
    back = await make_engine(vllm, cache).fix(traceback_task(project), project)
    assert thinking_requests(vllm) == 0 and back.accounting.plan_from_cache


async def test_no_cache_thinks_again_and_keeps_the_new_plan(vllm, away_from_tmp):
    project = make_project(away_from_tmp / "proj")
    cache = away_from_tmp / "cache"
    script_fix(vllm)
    await make_engine(vllm, cache).fix(traceback_task(project), project)
    vllm.reset()
    script_fix(vllm)
    engine = make_engine(vllm, cache)
    engine.reuse_plans = False  # qfix --no-cache
    fresh = await engine.fix(traceback_task(project), project)
    assert thinking_requests(vllm) == 1 and not fresh.accounting.plan_from_cache


def test_the_key_names_the_server_and_the_model() -> None:
    root, hashes = Path("/w/proj"), {"calc.py": "h1"}
    key = task_fingerprint(traceback_task(root), hashes, root, ("http://127.0.0.1:8000/v1", "Qwen/Qwen3.6-27B"))
    assert key == task_fingerprint(traceback_task(root), hashes, root, ("http://127.0.0.1:8000/v1/", "Qwen/Qwen3.6-27B"))
    assert key != task_fingerprint(traceback_task(root), hashes, root, ("http://127.0.0.1:8001/v1", "Qwen/Qwen3.6-27B"))
    assert key != task_fingerprint(traceback_task(root), hashes, root, ("http://127.0.0.1:8000/v1", "smollm2"))


def test_the_key_names_how_the_plan_was_made() -> None:
    root, hashes, server = Path("/w/proj"), {"calc.py": "h1"}, ("http://127.0.0.1:8000/v1", "Qwen/Qwen3.6-27B")
    keys = {mode: task_fingerprint(traceback_task(root), hashes, root, server, mode)
            for mode in ("thinking", "reading", "no_thinking")}
    assert len(set(keys.values())) == 3
    assert keys["thinking"] == task_fingerprint(traceback_task(root), hashes, root, server)
