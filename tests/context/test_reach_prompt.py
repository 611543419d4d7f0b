"""The prompt carries the code the failure reaches: a bug below the traceback's frames, the user's
own uncommitted edit, the cause of a chained exception; within budgets and a byte-stable prefix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from qwen_lsp.context.frames import parse_output, primary_frame
from qwen_lsp.context.prompt import HEADINGS, assemble
from qwen_lsp.context.reached import failure_starts, failing_test_start
from qwen_lsp.settings import Budgets, Settings
from qwen_lsp.types import Task, TaskKind
from tests.context.helpers import write
from tests.context.reach_project import break_it, commit_all, make_package, pytest_output

SYSTEM = "You fix bugs."


def section(user: str, key: str) -> str:
    start = user.index(HEADINGS[key])
    later = [user.index(h) for h in HEADINGS.values() if user.index(h) > start]
    return user[start : min(later, default=len(user))]


def prompt_for(ws: Path, output: str, tmp_path: Path, description: str = "fix the failing test", **budgets: int):
    task = Task(kind=TaskKind.command, description=description, terminal_output=output, command="pytest", exit_code=1)
    s = Settings(budgets=Budgets(**budgets)) if budgets else Settings()
    return assemble(task, ws, s, system=SYSTEM, tools=[], cache_dir=tmp_path / "cache")


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The package with its bug committed, then broken again in the working tree; its real pytest output."""
    root = make_package(tmp_path_factory.mktemp("reach") / "ws")
    commit_all(root, "Initial package")
    break_it(root)
    return root, pytest_output(root)


def test_a_bug_below_the_frames_reaches_the_prompt(broken: tuple[Path, str], tmp_path: Path) -> None:
    ws, output = broken
    assert "normalize" not in output  # no frame of the traceback is in the faulty function
    user = prompt_for(ws, output, tmp_path).messages[1]["content"]
    callees = section(user, "callees")
    # Reached by the walk (test_callees.py) and edited in the working tree: the changed function leads.
    assert callees.startswith(f"{HEADINGS['callees']}\n\n#### pkg/util.py lines 4-12 (whole; changed in the working tree)")
    assert "    if not fold:\n        return value.lower()" in callees
    assert "def fold_all(values, fold):" in callees  # Choice's constructor -> fold_all
    files = section(user, "files")
    assert "    if not fold:" not in files  # the files section alone would not have it


def test_the_uncommitted_edit_is_in_the_plan(broken: tuple[Path, str], tmp_path: Path) -> None:
    ws, output = broken
    user = prompt_for(ws, output, tmp_path).messages[1]["content"]
    changes = section(user, "changes")
    assert "Uncommitted changes (staged and unstaged):" in changes and "-    if fold:\n+    if not fold:" in changes


def test_sections_order_budgets_and_prefix(broken: tuple[Path, str], tmp_path: Path) -> None:
    ws, output = broken
    a = prompt_for(ws, output, tmp_path).messages[1]["content"]
    b = prompt_for(ws, output, tmp_path, description="why does it fail?").messages[1]["content"]
    positions = [a.index(h) for h in HEADINGS.values()]
    assert positions == sorted(positions)
    cut = a.index(HEADINGS["task"])
    assert a[:cut] == b[:cut] and a[cut:] != b[cut:]  # the new sections are part of the shared prefix
    small = prompt_for(ws, output, tmp_path, total_input=1500, callees=4096, changes=2048)
    assert small.section_tokens["total"] <= 1500
    assert small.section_tokens["callees"] + small.section_tokens["changes"] > 0
    none = prompt_for(ws, output, tmp_path, callees=0, changes=0).messages[1]["content"]
    assert f"{HEADINGS['callees']}\n\n(none)" in none and f"{HEADINGS['changes']}\n\n(none)" in none


def test_the_test_function_and_its_name_are_starts(broken: tuple[Path, str]) -> None:
    ws, output = broken
    frames = parse_output(output, cwd=ws, workspace=ws)
    starts = failure_starts(frames, primary_frame(frames), (None, None))
    assert ("tests/test_choice.py", 6) in starts and failing_test_start(starts, frames) == ("tests/test_choice.py", 6)


CONFIG = '''from pkg.parsing import parse_port


def load(text):
    try:
        return {"port": parse_port(text)}
    except ValueError as exc:
        raise RuntimeError("bad config") from exc
'''
PARSING = '''def parse_port(text):
    digits = text.split("=")[0]
    return int(digits)
'''
CHAIN_TEST = '''from pkg.config import load


def test_load():
    assert load("port=80") == {"port": 80}
'''


@pytest.mark.parametrize("tb", ["--tb=long", "--tb=native"])
def test_the_cause_of_a_chained_exception_counts_like_the_outer_trace(tmp_path: Path, tb: str) -> None:
    ws = tmp_path / "ws"
    write(ws, "pkg/__init__.py", "")
    write(ws, "pkg/config.py", CONFIG)
    write(ws, "pkg/parsing.py", PARSING)
    write(ws, "tests/test_config.py", CHAIN_TEST)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", tb, "tests"], cwd=ws,
                         capture_output=True, text=True, env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert "direct cause" in run.stdout
    frames = parse_output(run.stdout, cwd=ws, workspace=ws)
    primary = primary_frame(frames)
    assert primary is not None and primary.resolved == "pkg/config.py"  # the outer exception is the one raised last
    assert ("pkg/parsing.py", 3) in failure_starts(frames, primary, (None, None))
    user = prompt_for(ws, run.stdout, tmp_path).messages[1]["content"]
    assert '    digits = text.split("=")[0]' in user[: user.index(HEADINGS["task"])]


DISPATCH = '''HANDLERS = {}


def handler(name):
    def register(fn):
        HANDLERS[name] = fn
        return fn
    return register


@handler("double")
def twice(x):
    return x * 2


def run(name, x):
    return HANDLERS[name](x)
'''


def test_a_function_edited_in_the_working_tree_is_shown_whole_even_when_no_call_reaches_it(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "app/__init__.py", "")
    write(ws, "app/ops.py", DISPATCH)
    write(ws, "tests/test_ops.py", "from app.ops import run\n\n\ndef test_double():\n    assert run('double', 2) == 4\n")
    commit_all(ws, "ops")
    ops = ws / "app/ops.py"
    ops.write_text(ops.read_text().replace("return x * 2", "return x * 3"))
    output = (f"{'=' * 20} FAILURES {'=' * 20}\n{'_' * 10} test_double {'_' * 10}\n\n    def test_double():\n"
              ">       assert run('double', 2) == 4\nE       assert 6 == 4\n\ntests/test_ops.py:5: AssertionError\n")
    user = prompt_for(ws, output, tmp_path).messages[1]["content"]
    callees = section(user, "callees")
    assert "#### app/ops.py lines 11-13 (whole; changed in the working tree)" in callees
    assert "@handler(\"double\")\ndef twice(x):\n    return x * 3" in callees
