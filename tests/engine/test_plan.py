"""The plan the thinking round answers: read tolerantly, since a plan in prose still helps."""

from __future__ import annotations

from qwen_lsp.engine.loop import parse_plan
from qwen_lsp.types import Plan


def test_plans_are_parsed_tolerantly():
    assert parse_plan('{"steps": ["x"], "verify_command": null}') == Plan(steps=["x"])
    assert parse_plan("just change a - b to a + b").steps == ["just change a - b to a + b"]
    assert parse_plan("") == Plan()
