"""Qwen3.6's tool-call dialect: which calls an answer commits to, and their arguments' types."""

from __future__ import annotations

import json

import pytest

from qwen_lsp.engine.tools import TOOLS
from qwen_lsp.llm.client import Completion, ToolCall, _finish
from qwen_lsp.llm.dialect import coerce_native, coerce_xml, find_calls
from tests.vllm_double import qwen_xml_tool_call as xml

EDIT = {t["function"]["name"]: t["function"]["parameters"]["properties"] for t in TOOLS}["edit_file"]
READ = {t["function"]["name"]: t["function"]["parameters"]["properties"] for t in TOOLS}["read_file"]


def edit(new: str, old: str = "x = 1") -> dict[str, str]:
    return {"path": "calc.py", "old_string": old, "new_string": new}


def test_calls_in_the_content_are_found_and_the_prose_kept():
    found = find_calls("I'll fix it.\n" + xml("edit_file", edit("x = 2")), "")
    assert [(c.name, c.arguments, c.source) for c in found.calls] == [("edit_file", edit("x = 2"), "content")]
    assert found.content == "I'll fix it."


def test_a_call_at_the_end_of_the_reasoning_is_taken_when_the_answer_has_none():
    found = find_calls("", "The bug is on line 3.\n" + xml("edit_file", edit("x = 2")) + "\n")
    assert [(c.arguments, c.source) for c in found.calls] == [(edit("x = 2"), "reasoning")]


def test_a_rejected_draft_in_the_reasoning_never_runs():
    reasoning = (xml("edit_file", edit("x = 99")) + "\nWait, that's wrong: 99 breaks the caller. The right one:\n"
                 + xml("edit_file", edit("x = 2")))
    found = find_calls("", reasoning)
    assert [c.arguments["new_string"] for c in found.calls] == ["x = 2"]
    assert [c.arguments["new_string"] for c in found.drafts] == ["x = 99"]


def test_a_draft_followed_by_more_thinking_and_no_final_call_runs_nothing():
    found = find_calls("", xml("edit_file", edit("x = 99")) + "\nHmm, no. Let me reconsider the caller first.")
    assert found.calls == [] and len(found.drafts) == 1


def test_the_final_text_wins_over_every_call_in_the_reasoning():
    found = find_calls(xml("edit_file", edit("x = 2")), xml("edit_file", edit("x = 99")))
    assert [(c.arguments["new_string"], c.source) for c in found.calls] == [("x = 2", "content")]
    assert find_calls("", xml("edit_file", edit("x = 99")), native=True).calls == []


def test_a_call_split_between_the_reasoning_and_the_content_between_parameters_is_joined():
    whole = xml("edit_file", edit("x = 2")) + "\n" + xml("read_file", {"path": "b.py"})
    cut = whole.index("<parameter=old_string>")
    found = find_calls(whole[cut:], "Applying it.\n" + whole[:cut])
    assert [(c.name, c.source) for c in found.calls] == [("edit_file", "split"), ("read_file", "content")]
    assert found.calls[0].arguments == edit("x = 2")


def test_a_call_split_inside_a_value_is_refused_with_the_calls_after_it():
    whole = xml("edit_file", edit("x = 2\ny = 3")) + "\n" + xml("edit_file", edit("z", old="w"))
    cut = whole.index("y = 3")
    found = find_calls(whole[cut:], whole[:cut])
    assert found.calls == []


def test_xml_values_stay_exact_text_where_the_schema_says_string():
    body = "<tool_call>\n<function=edit_file>\n<parameter=path>\ncalc.py\n</parameter>\n<parameter=old_string>\n\n    10\n\n</parameter>\n<parameter=new_string>\n3\n</parameter>\n</function>\n</tool_call>"
    call = find_calls(body, "").calls[0]
    typed = coerce_xml(call.arguments, EDIT)
    assert typed == {"path": "calc.py", "old_string": "\n    10\n", "new_string": "3"}  # one newline off each end, no more


@pytest.mark.parametrize(("text", "value"), [("3", 3), (" 12 ", 12), ("null", None), ("three", "three")])
def test_xml_values_become_integers_only_where_the_schema_asks(text, value):
    assert coerce_xml({"path": "a.py", "start_line": text}, READ) == {"path": "a.py", "start_line": value}


@pytest.mark.parametrize(
    ("raw", "new_string"),
    [('25', "25"), ('2.50', "2.50"), ('1e3', "1e3"), ('{"retries":  3}', '{"retries":  3}'), ('[1, 2]', "[1, 2]"),
     ('true', "true"), ('"x = 2"', "x = 2")],
)
def test_a_native_non_string_for_a_string_parameter_becomes_its_exact_json_text(raw, new_string):
    text = '{"path": "calc.py", "old_string": "x = 1", "new_string": ' + raw + "}"
    assert coerce_native(text, EDIT)["new_string"] == new_string


def test_the_client_takes_xml_beside_native_calls_and_says_where_each_came_from():
    native = ToolCall(id="call_1", name="read_file", arguments='{"path": "calc.py"}')
    reply = Completion(content="Also:\n" + xml("edit_file", edit("x = 2")) + "\n" + xml("read_file", {"path": "calc.py"}),
                       tool_calls=[native])
    done = _finish(reply, TOOLS)
    assert [(c.name, c.source) for c in done.tool_calls] == [("read_file", "native"), ("edit_file", "content")]
    assert json.loads(done.tool_calls[1].arguments) == edit("x = 2") and done.content == "Also:"


def test_the_client_recovers_a_reasoning_call_and_counts_the_drafts():
    reasoning = xml("edit_file", edit("x = 9")) + "\nNo, wrong.\n" + xml("edit_file", edit("25"))
    done = _finish(Completion(content="", reasoning=reasoning), TOOLS)
    assert [(c.source, json.loads(c.arguments)["new_string"]) for c in done.tool_calls] == [("reasoning", "25")]
    assert done.draft_calls == 1 and not done.tool_calls_from_text


def test_a_call_in_the_reasoning_of_an_answer_that_may_call_no_tool_is_left_alone():
    # the plan request (tool_choice "none") and requests without tools: the reasoning is only thinking
    done = _finish(Completion(content='{"steps": []}', reasoning=xml("edit_file", edit("x = 2"))), None)
    assert done.tool_calls == [] and done.content == '{"steps": []}'
