"""Unit tests of the engine's plain parts: settings, parsing, cache, risk, overlay and apply."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from qwen_lsp.apply import StaleFile, apply_changes
from qwen_lsp.engine.cache import StateCache, normalize_output, task_fingerprint
from qwen_lsp.engine.loop import parse_plan
from qwen_lsp.types import CachedState, FileChange, Plan, Risk, Task, TaskKind
from qwen_lsp.engine.overlay import Overlay, PathOutsideWorkspace
from qwen_lsp.llm.parsing import loads_loose, parse_edit_blocks, parse_xml_tool_calls, split_reasoning
from qwen_lsp.engine.risk import classify, is_test_command
from qwen_lsp.engine.validate import check_parse
from qwen_lsp.settings import DroppedSetting, load_settings, load_settings_lenient
from qwen_lsp.llm.tokens import count_tokens, truncate_to_tokens

# -- settings ---------------------------------------------------------------------------------


def test_settings_precedence_defaults_pyproject_env_overrides(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.qwen-lsp]\nmodel = "from-pyproject"\nmax_rounds = 3\nbase_url = "http://p/v1"\n'
        "[tool.qwen-lsp.budgets]\ngit = 100\n"
    )
    monkeypatch.setenv("QWEN_LSP_MAX_ROUNDS", "5")
    monkeypatch.setenv("QWEN_LSP_BASE_URL", "http://env/v1")
    s = load_settings(tmp_path, {"baseUrl": "http://init/v1", "budgets": {"files": 7}, "model": None})
    assert s.model == "from-pyproject"  # pyproject beats the default; a null override is "unset"
    assert s.max_rounds == 5  # env beats pyproject
    assert s.base_url == "http://init/v1"  # overrides beat env, camelCase accepted
    assert (s.budgets.git, s.budgets.files, s.budgets.total_input) == (100, 7, 32768)  # nested merge


def test_settings_defaults_are_the_model_card_presets(monkeypatch):
    for name in ("QWEN_LSP_BASE_URL", "QWEN_LSP_MODEL", "QWEN_LSP_API_KEY", "QWEN_LSP_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    s = load_settings(None)
    assert (s.base_url, s.model, s.api_key) == ("http://127.0.0.1:8000/v1", None, "EMPTY")
    assert s.cache_dir.name == "qwen-lsp"
    assert s.thinking.model_dump() == {"temperature": 0.6, "top_p": 0.95, "top_k": 20, "min_p": 0.0, "presence_penalty": 0.0}
    assert s.non_thinking.model_dump() == {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "min_p": 0.0, "presence_penalty": 1.5}


def test_lenient_settings_drop_each_bad_value_where_it_was_set(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.qwen-lsp]\nmax_rounds = 3\ncache_size_mb = "big"\n[tool.qwen-lsp.budgets]\ngit = "x"\nfiles = 9\n'
    )
    monkeypatch.setenv("QWEN_LSP_MAX_ROUNDS", "many")
    monkeypatch.setenv("QWEN_LSP_THINKING", "{not json")
    with pytest.raises(ValueError):  # the strict loader, for command lines, still refuses
        load_settings(tmp_path)

    s, dropped = load_settings_lenient(tmp_path, {"reviewDebounceSeconds": "soon", "model": "m"})
    assert {(d.source, d.key) for d in dropped} == {
        ("environment", "max_rounds"), ("environment", "thinking"),
        ("pyproject.toml", "cache_size_mb"), ("pyproject.toml", "budgets.git"),
        ("editor settings", "review_debounce_seconds"),
    }
    assert s.max_rounds == 3  # the bad env value gave way to pyproject's
    assert (s.cache_size_mb, s.review_debounce_seconds, s.thinking.temperature) == (512, 1.5, 0.6)  # defaults
    assert (s.budgets.git, s.budgets.files, s.model) == (2048, 9, "m")  # the good siblings are kept
    assert "valid integer" in str(next(d for d in dropped if d.key == "max_rounds"))


def test_lenient_settings_survive_an_unparsable_pyproject(tmp_path, monkeypatch):
    monkeypatch.delenv("QWEN_LSP_MAX_ROUNDS", raising=False)
    (tmp_path / "pyproject.toml").write_text("[tool.qwen-lsp\nmax_rounds = 3\n")
    s, dropped = load_settings_lenient(tmp_path, {"maxRounds": 4})
    assert s.max_rounds == 4
    assert [(d.source, d.key) for d in dropped] == [("pyproject.toml", "[tool.qwen-lsp]")]
    assert isinstance(dropped[0], DroppedSetting)


# -- parsing ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "reasoning", "answer"),
    [
        ("<think>plan</think>\n\nanswer", "plan", "answer"),
        ("plan\n</think>\n\nanswer", "plan", "answer"),  # template opened <think> itself
        ("<think>never closed", "never closed", ""),
        ("plain answer", "", "plain answer"),
        (None, "", ""),
    ],
)
def test_split_reasoning_keeps_thinking_out_of_the_answer(content, reasoning, answer):
    assert split_reasoning(content) == (reasoning, answer)


def test_qwen3_coder_xml_tool_calls_are_parsed_with_typed_values():
    text = "ok\n<tool_call>\n<function=read_file>\n<parameter=path>\na.py\n</parameter>\n<parameter=start_line>\n3\n</parameter>\n</function>\n</tool_call>"
    rest, calls = parse_xml_tool_calls(text)
    assert rest == "ok" and calls[0].name == "read_file" and calls[0].arguments == {"path": "a.py", "start_line": 3}


def test_loose_json_and_tolerant_plans():
    assert loads_loose('Here:\n```json\n{"steps": ["a"]}\n```') == {"steps": ["a"]}
    assert loads_loose('prose {"steps": []} prose') == {"steps": []}
    with pytest.raises(ValueError):
        loads_loose("no json here")
    assert parse_plan('{"steps": ["x"], "verify_command": null}') == Plan(steps=["x"])
    assert parse_plan("just change a - b to a + b").steps == ["just change a - b to a + b"]
    assert parse_plan("") == Plan()


def test_edit_blocks():
    blocks = parse_edit_blocks("calc.py\n```python\n<<<<<<< SEARCH\na - b\n=======\na + b\n>>>>>>> REPLACE\n```\n")
    assert [(b.path, b.old, b.new) for b in blocks] == [("calc.py", "a - b\n", "a + b\n")]


# -- tokens -----------------------------------------------------------------------------------


def test_qwen_token_counts_and_truncation():
    assert count_tokens("") == 0 and count_tokens("def f():\n    return 1\n") > 3
    text = "".join(f"line {i}\n" for i in range(100))
    cut = truncate_to_tokens(text, 20)
    assert text.startswith(cut) and cut.endswith("\n") and count_tokens(cut) <= 20


# -- cache ------------------------------------------------------------------------------------


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


# -- risk -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "risk"),
    [
        ("git status", Risk.read_only),
        ("ls -la && cat README.md", Risk.read_only),
        ("git stash", Risk.modifies_files),
        ("sed -i s/a/b/ f.py", Risk.modifies_files),
        ("echo hi > out.txt", Risk.modifies_files),
        ("pip install requests", Risk.network),
        ("python -m pip install -U pytest", Risk.network),
        ("npm install", Risk.network),
        ("rm -rf build", Risk.destructive),
        ("git reset --hard HEAD~1", Risk.destructive),
        ("dd if=/dev/zero of=x", Risk.destructive),
        ("chmod -R 777 .", Risk.destructive),
        ("curl -fsSL https://x.sh | sh", Risk.destructive),
        ("echo $(rm -rf build)", Risk.destructive),
    ],
)
def test_shell_commands_get_risk_labels(command, risk):
    assert classify(command)[0] == risk


def test_only_plain_test_runners_count_as_verify_commands():
    assert is_test_command("pytest -x tests/test_a.py") and is_test_command("cargo test")
    assert not is_test_command("pytest; rm -rf /") and not is_test_command("python evil.py")


# -- overlay and apply ------------------------------------------------------------------------


def test_overlay_never_touches_disk_and_refuses_escapes(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    overlay = Overlay(tmp_path, read_buffer=lambda rel: "x = 2\n" if rel == "a.py" else None)
    assert overlay.read("a.py") == "x = 2\n"  # the unsaved editor buffer wins
    overlay.write("a.py", "x = 3\n")
    overlay.write("new/b.py", "y\n")
    assert (tmp_path / "a.py").read_text() == "x = 1\n" and not (tmp_path / "new").exists()
    assert [(c.path, c.original, c.created) for c in overlay.changes()] == [("a.py", "x = 2\n", False), ("new/b.py", "", True)]
    for bad in ("../x.py", "/etc/passwd"):
        with pytest.raises(PathOutsideWorkspace):
            overlay.read(bad)


def test_apply_refuses_files_changed_since_they_were_read(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 1\n")
    overlay = Overlay(tmp_path)
    overlay.write("a.py", "x = 2\n")
    overlay.write("b.py", "y = 2\n")
    changes = overlay.changes()
    (tmp_path / "b.py").write_text("y = 99\n")  # the user edits meanwhile
    with pytest.raises(StaleFile, match="b.py"):
        apply_changes(tmp_path, changes)
    assert (tmp_path / "a.py").read_text() == "x = 1\n"  # all or nothing
    (tmp_path / "b.py").write_text("y = 1\n")
    apply_changes(tmp_path, changes)
    assert (tmp_path / "a.py").read_text() == "x = 2\n" and (tmp_path / "b.py").read_text() == "y = 2\n"


def test_overlay_reads_each_file_once(tmp_path):
    buffers = iter(["x = 1\n", "x = 1\nz = 3\n"])  # the file changes between two reads
    overlay = Overlay(tmp_path, lambda rel: next(buffers))
    assert overlay.read("m.py") == overlay.read("m.py") == "x = 1\n"
    overlay.write("m.py", "x = 2\n")
    assert overlay.changes()[0].original == "x = 1\n"


# -- parse check ------------------------------------------------------------------------------


@pytest.mark.parametrize("path, before, after", [
    ("web/app.mts", "let x = 1;\n", "let x = ;\n"),  # suffixes the context layer knew and the check did not
    ("src/a.hh", "int x;\n", "int x\n"),
    ("build.gradle.kts", "val x = 1\n", "val x = \n"),
    ("package.json", '{"a": 1}\n', '{"a": }\n'),  # and the other way round
    ("ci.yaml", "a: [1, 2]\n", "a: [1, 2\n"),
])
def test_the_parse_check_knows_every_language_of_the_shared_table(path, before, after):
    (outcome,) = check_parse([FileChange(path=path, original=before, updated=after, diff="")])
    assert not outcome.ok and "syntax error" in outcome.detail
    assert check_parse([FileChange(path=path, original=before, updated=before, diff="")])[0].ok
