"""Parsing model output: inline reasoning, XML tool calls, loose JSON and edit blocks."""

from __future__ import annotations

import pytest

from qwen_lsp.llm.parsing import loads_loose, parse_edit_blocks, parse_xml_tool_calls, split_reasoning


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


def test_loose_json_is_found_in_prose_and_fences():
    assert loads_loose('Here:\n```json\n{"steps": ["a"]}\n```') == {"steps": ["a"]}
    assert loads_loose('prose {"steps": []} prose') == {"steps": []}
    with pytest.raises(ValueError):
        loads_loose("no json here")


def test_edit_blocks():
    blocks = parse_edit_blocks("calc.py\n```python\n<<<<<<< SEARCH\na - b\n=======\na + b\n>>>>>>> REPLACE\n```\n")
    assert [(b.path, b.old, b.new) for b in blocks] == [("calc.py", "a - b\n", "a + b\n")]
