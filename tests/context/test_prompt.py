"""Prompt assembly: order, prefix stability, budgets, graceful degradation."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwen_lsp.types import Task, TaskKind
from qwen_lsp.context.prompt import HEADINGS, assemble
from qwen_lsp.settings import Budgets, Settings
from qwen_lsp.llm.tokens import count_tokens

SYSTEM = "You are a careful coding agent. Fix the bug with minimal edits."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a workspace file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]

CALC = "def add(a, b):\n    return a + b\n\n\ndef mean(values):\n    total = sum(values)\n    return totl / len(values)\n"
MAIN = "from pkg.calc import mean\n\n\ndef report(values):\n    return f'mean={mean(values)}'\n\n\nprint(report([1, 2, 3]))\n"


def traceback_for(ws: Path) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "{ws}/main.py", line 8, in <module>\n    print(report([1, 2, 3]))\n'
        f'  File "{ws}/main.py", line 5, in report\n    return f\'mean={{mean(values)}}\'\n'
        f'  File "{ws}/pkg/calc.py", line 7, in mean\n    return totl / len(values)\n           ^^^^\n'
        "NameError: name 'totl' is not defined\n"
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "calc.py").write_text(CALC)
    (root / "main.py").write_text(MAIN)
    return root


def settings(**budgets: int) -> Settings:
    return Settings(budgets=Budgets(**budgets))


def user_text(prompt) -> str:
    return prompt.messages[1]["content"]


def test_traceback_task_layout(ws: Path, tmp_path: Path) -> None:
    task = Task(kind=TaskKind.traceback, description="fix the crash", terminal_output=traceback_for(ws), command="python main.py", exit_code=1)
    prompt = assemble(task, ws, settings(), system=SYSTEM, tools=TOOLS, cache_dir=tmp_path / "cache")
    assert prompt.messages[0] == {"role": "system", "content": SYSTEM}
    assert prompt.tools is TOOLS or prompt.tools == TOOLS
    user = user_text(prompt)
    positions = [user.index(h) for h in HEADINGS.values()]
    assert positions == sorted(positions) and user.startswith(HEADINGS["repo_map"])
    task_part = user[user.index(HEADINGS["task"]) :]
    assert "Primary failure: pkg/calc.py:7:12: NameError: name 'totl' is not defined" in task_part
    assert "Terminal output:" in task_part and "python main.py (exit code 1)" in task_part
    files_part = user[user.index(HEADINGS["files"]) : user.index(HEADINGS["task"])]
    assert "### pkg/calc.py (whole file" in files_part and "return totl / len(values)" in files_part
    assert "main.py (traceback frame at line 5)" in files_part
    assert prompt.primary is not None and prompt.primary.resolved == "pkg/calc.py"
    # Outside a git repository the git section is empty, not an error.
    assert "# Git context\n\n(none)" in user
    assert set(prompt.section_tokens) >= {"system", "tools", "repo_map", "git", "files", "task", "total"}
    assert prompt.section_tokens["total"] <= Settings().budgets.total_input


def test_repo_map_points_at_definitions_used(ws: Path, tmp_path: Path) -> None:
    task = Task(kind=TaskKind.diagnostic, description="report() is wrong", path="main.py", start_line=5, end_line=5)
    prompt = assemble(task, ws, settings(), system=SYSTEM, tools=TOOLS, cache_dir=tmp_path / "cache")
    user = user_text(prompt)
    repo_map = user[: user.index(HEADINGS["git"])]
    assert "pkg/calc.py:" in repo_map and "def mean(values):" in repo_map
    files = user[user.index(HEADINGS["files"]) : user.index(HEADINGS["task"])]
    # mean() is used at the line: its definition comes along.
    assert "pkg/calc.py lines 5-7: def mean(values):" in files


def test_prefix_is_byte_stable_across_calls(ws: Path, tmp_path: Path) -> None:
    a = Task(kind=TaskKind.instruction, description="add docstrings", path="pkg/calc.py", start_line=1, end_line=2)
    b = Task(kind=TaskKind.instruction, description="rename total", path="pkg/calc.py", start_line=1, end_line=2)
    pa = assemble(a, ws, settings(), system=SYSTEM, tools=TOOLS, cache_dir=tmp_path / "cache")
    pb = assemble(b, ws, settings(), system=SYSTEM, tools=TOOLS, cache_dir=tmp_path / "cache")
    assert pa.messages[0] == pb.messages[0]
    ua, ub = user_text(pa), user_text(pb)
    cut = ua.index(HEADINGS["task"])
    assert ua[:cut] == ub[:cut]  # everything but the task is shared, so vLLM reuses it
    assert ua[cut:] != ub[cut:]


def test_unsaved_buffer_wins_over_disk(ws: Path, tmp_path: Path) -> None:
    buffers = {"pkg/calc.py": CALC.replace("totl", "TOTAL_FROM_BUFFER")}
    task = Task(kind=TaskKind.explain, description="explain", path="pkg/calc.py", start_line=7, end_line=7)
    prompt = assemble(task, ws, settings(), system=SYSTEM, tools=[], read_file=buffers.get, cache_dir=tmp_path / "c")
    assert "TOTAL_FROM_BUFFER" in user_text(prompt)
    assert prompt.tools == []


def test_budgets_are_hard_and_truncation_is_visible(ws: Path, tmp_path: Path) -> None:
    big = "\n".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(3000))
    (ws / "big.py").write_text(big)
    huge_output = "\n".join(f"noise line {i}" for i in range(20_000)) + "\n" + traceback_for(ws)
    task = Task(kind=TaskKind.traceback, description="fix", path="big.py", start_line=2000, terminal_output=huge_output)
    s = settings(total_input=6000, repo_map=500, git=500, files=3000, task=1500)
    prompt = assemble(task, ws, s, system=SYSTEM, tools=TOOLS, cache_dir=tmp_path / "c")
    tokens = prompt.section_tokens
    assert tokens["total"] <= 6000
    assert tokens["repo_map"] <= 500 and tokens["files"] <= 3000 and tokens["task"] <= 1500
    user = user_text(prompt)
    assert "excerpt" in user  # big.py did not fit whole: outline + enclosing function instead
    assert "big.py lines 1999-2000: def f666(x):" in user
    assert "lines omitted" in user  # the terminal output was cut around the failure
    assert "NameError: name 'totl' is not defined" in user


def test_total_budget_squeezes_sections(ws: Path, tmp_path: Path) -> None:
    (ws / "big.py").write_text("x = 1\n" * 20_000)
    task = Task(kind=TaskKind.instruction, description="tidy", path="big.py", start_line=1)
    s = settings(total_input=700, repo_map=2048, git=2048, files=16384, task=4096)
    prompt = assemble(task, ws, s, system=SYSTEM, tools=TOOLS, cache_dir=tmp_path / "c")
    assert prompt.section_tokens["total"] <= 700
    assert "truncated to fit" in user_text(prompt)
    assert user_text(prompt).rstrip().endswith("Location: big.py:1")  # the task survives whole


@pytest.mark.parametrize("path", ["missing.py", "blob.bin", None])
def test_missing_binary_or_no_file_degrade(ws: Path, tmp_path: Path, path: str | None) -> None:
    (ws / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    task = Task(kind=TaskKind.instruction, description="do it", path=path, start_line=3 if path else None)
    prompt = assemble(task, ws, settings(), system=SYSTEM, tools=TOOLS, cache_dir=tmp_path / "c")
    user = user_text(prompt)
    assert HEADINGS["task"] in user and "Request: do it" in user
    if path:
        assert f"### {path}\n(could not be read" in user


def test_missing_workspace_and_garbage_output(tmp_path: Path) -> None:
    task = Task(kind=TaskKind.command, description="why", terminal_output="\x1b[31m\x00garbage\r\n", command="x", exit_code=127, cwd="nope")
    prompt = assemble(task, tmp_path / "does-not-exist", settings(), system=SYSTEM, tools=TOOLS, cache_dir=tmp_path / "c")
    assert prompt.primary is None and "garbage" in user_text(prompt)


def test_unknown_language_falls_back_to_window(ws: Path, tmp_path: Path) -> None:
    (ws / "notes.cfg").write_text("\n".join(f"key{i} = {i}" for i in range(5000)))
    task = Task(kind=TaskKind.explain, description="what is key2500", path="notes.cfg", start_line=2500)
    prompt = assemble(task, ws, settings(files=2000), system=SYSTEM, tools=TOOLS, cache_dir=tmp_path / "c")
    files = user_text(prompt).split(HEADINGS["files"])[1]
    assert "key2500 = 2500" in files and "key10 = 10\n" not in files
    assert count_tokens(files) < 2100


def test_max_model_len_caps_the_total(ws: Path, tmp_path: Path) -> None:
    (ws / "big.py").write_text("\n".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(3000)))
    task = Task(kind=TaskKind.instruction, description="tidy", path="big.py", start_line=10)
    prompt = assemble(task, ws, settings(), system=SYSTEM, tools=TOOLS, cache_dir=tmp_path / "c", max_model_len=3000)
    assert prompt.section_tokens["total"] <= 3000


def test_a_head_of_a_long_text_tells_it_is_over_a_token_limit_exactly_as_counting_it_all() -> None:
    from qwen_lsp.context.prompt import more_tokens_than

    sources = [p.read_text() for p in sorted((Path(__file__).parents[2] / "qwen_lsp" / "context").glob("*.py"))][:6]
    texts = [*sources, "\n\n".join(sources), "x = 1\n" + " " * 5000 + "\nyy\n" * 300, "é\nİ\n" * 4000 + "\n\n\nabc" * 100]
    for text in texts:
        total = count_tokens(text)
        for limit in (10, 100, 333.5, 1000, total // 3, total - 1, total, total + 1, 5 * total):
            assert more_tokens_than(text, limit) == (total > limit), (len(text), limit)


def test_a_file_only_the_command_names_is_the_primary(ws: Path, tmp_path: Path) -> None:
    """Issue 38: `sqlite3 < q.sql` prints "Parse error near line 3" and no file: the command names it."""
    (ws / "db").mkdir()
    (ws / "db" / "q.sql").write_text("create table t (a int);\ninsert into t values (1);\nselect * from tt;\n")
    out = "Parse error near line 3: no such table: tt\n"
    task = Task.for_command("sqlite3 :memory: < db/q.sql", 1, out, None)
    prompt = assemble(task, ws, settings(), system=SYSTEM, tools=TOOLS, cache_dir=tmp_path / "cache")
    assert prompt.primary is not None and (prompt.primary.resolved, prompt.primary.line) == ("db/q.sql", 3)
    assert "### db/q.sql" in user_text(prompt)
