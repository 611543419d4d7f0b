"""The plan cache: task fingerprints that ignore noise, and a store that survives restarts,
corruption and concurrent processes."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from qwen_lsp.engine.cache import StateCache, normalize_output, task_fingerprint
from qwen_lsp.types import CachedState, Plan, Task, TaskKind


def _state(step: str) -> CachedState:
    return CachedState(plan=Plan(steps=[step]), plan_message={"role": "assistant", "content": "{}", "reasoning": "r"})


def test_fingerprint_ignores_timings_and_temp_paths_but_not_files():
    task = Task(kind=TaskKind.command, description="x", terminal_output="1 failed in 0.03s /tmp/abc/x.py")
    same = task.model_copy(update={"terminal_output": "1 failed in 1.20s /tmp/zzz/x.py"})
    assert task_fingerprint(task, {"a.py": "1"}) == task_fingerprint(same, {"a.py": "1"})
    assert task_fingerprint(task, {"a.py": "1"}) != task_fingerprint(task, {"a.py": "2"})
    assert normalize_output("at 0x7f00ab  done") == "at 0x? done"


def test_fingerprint_ignores_thread_ids_goroutine_numbers_and_log_timestamps():
    # Found by bench/fixes: the same failure run twice missed the plan cache.
    pairs = [("thread 'tests::sum' (1818) panicked at src/lib.rs:5:9:", "thread 'tests::sum' (1903) panicked at src/lib.rs:5:9:"),
             ("goroutine 20 [running]:", "goroutine 18 [running]:"),
             ("log in: /root/.npm/_logs/2026-12-03T08_33_07_752Z-debug-0.log", "log in: /root/.npm/_logs/2026-12-03T08_33_09_109Z-debug-0.log")]
    for a, b in pairs:
        assert normalize_output(a) == normalize_output(b)
    assert normalize_output("panicked at src/lib.rs:5:9") != normalize_output("panicked at src/lib.rs:6:9")


def test_cache_survives_restart(tmp_path):
    cache = StateCache(tmp_path / "c")
    cache.put_state("k", _state("one"))
    cache.close()
    assert StateCache(tmp_path / "c").get_state("k") == _state("one")


def test_a_corrupted_cache_directory_starts_empty(tmp_path):
    directory = tmp_path / "c"
    StateCache(directory).put_state("k", _state("one"))
    (directory / "cache.db").write_bytes(b"this is not sqlite" * 100)
    cache = StateCache(directory)
    assert cache.get_state("k") is None
    cache.put_state("k", _state("two"))
    assert cache.get_state("k") == _state("two")
    assert list(tmp_path.glob("c.corrupt-*"))  # the broken one is kept aside, not deleted


def _writer(directory: str, n: int) -> None:
    cache = StateCache(Path(directory))
    for i in range(20):
        cache.put_state(f"{n}-{i}", _state(f"{n}-{i}"))


def test_concurrent_processes_share_the_cache(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path / "c"), n)) for n in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)
    cache = StateCache(tmp_path / "c")
    assert all(cache.get_state(f"{n}-{i}") == _state(f"{n}-{i}") for n in range(3) for i in range(20))
