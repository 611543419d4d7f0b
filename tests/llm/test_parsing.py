"""Parsing model output: inline reasoning, XML tool calls, loose JSON and edit blocks."""

from __future__ import annotations

import pytest

from qwen_lsp.llm.parsing import loads_loose, parse_edit_blocks, split_reasoning


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


def test_loose_json_is_found_in_prose_and_fences():
    assert loads_loose('Here:\n```json\n{"steps": ["a"]}\n```') == {"steps": ["a"]}
    assert loads_loose('prose {"steps": []} prose') == {"steps": []}
    with pytest.raises(ValueError):
        loads_loose("no json here")


def test_edit_blocks():
    blocks = parse_edit_blocks("calc.py\n```python\n<<<<<<< SEARCH\na - b\n=======\na + b\n>>>>>>> REPLACE\n```\n")
    assert [(b.path, b.old, b.new) for b in blocks] == [("calc.py", "a - b\n", "a + b\n")]
