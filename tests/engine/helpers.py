"""Shared by the engine tests: the scripted calc-project fix and an engine pointed at the vLLM double."""

from __future__ import annotations

import json
from pathlib import Path

from qwen_lsp.engine.loop import Engine
from qwen_lsp.settings import Settings
from qwen_lsp.types import Task, TaskKind
from tests.calc_project import PYTEST, PYTEST_OUTPUT
from tests.vllm_double import Reply, VLLMDouble

OUTPUT = PYTEST_OUTPUT

PLAN = {
    "hypotheses": ["add subtracts instead of adding"],
    "evidence": [{"path": "calc.py", "start_line": 2, "end_line": 2, "reason": "uses a - b"}],
    "steps": ["use a + b in add"],
    "verify_command": "pytest -q test_calc.py",
}


def make_engine(double: VLLMDouble, cache_dir: Path, **overrides) -> Engine:
    settings = Settings(base_url=double.base_url, cache_dir=cache_dir, max_retries=0, **overrides)
    return Engine(settings)


def failing_test_task() -> Task:
    return Task(kind=TaskKind.command, description="pytest failed", command=PYTEST, terminal_output=OUTPUT, exit_code=1)


def script_fix(double: VLLMDouble, *, with_plan: bool = True, name: str = "total", finishes: int = 1) -> None:
    """`finishes=2`: where the edit may not apply (an edited buffer), the early finish is answered with
    the plan once (engine/loop.py) and the second ends the fix."""
    replies = [Reply(reasoning="add() computes a - b; the test expects 5.", content=json.dumps(PLAN))] if with_plan else []
    replies += [
        Reply(tool_calls=[("read_file", {"path": "calc.py"})]),
        # Indentation drift and trailing spaces: the model dropped the 4-space indent.
        Reply(tool_calls=[("edit_file", {"path": "calc.py", "old_string": f"{name} = a - b   ", "new_string": f"{name} = a + b"})]),
    ] + [Reply(tool_calls=[("finish", {"summary": "add now adds"})])] * finishes
    double.script(*replies)
