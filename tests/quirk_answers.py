"""The four places Qwen3.6 leaves a call it means (issue 33), as scripted answers for the vLLM double:
shared by the language-server and qfix quirk tests, each with its own file and edit."""

from __future__ import annotations

from typing import Any

import pytest

from tests.vllm_double import Reply, qwen_xml_tool_call as xml


def wherever_the_model_left_it(edit: dict[str, Any], draft: dict[str, Any], cut_before: str) -> list[Any]:
    """pytest params of one answer each: the call in the reasoning, after a rejected draft there, as XML
    beside a native call, and split between the reasoning and the content just before `cut_before`
    (a parameter tag: the think block closed between two parameters)."""
    whole = xml("edit_file", edit)
    cut = whole.index(cut_before)
    return [
        pytest.param(Reply(reasoning="Editing now.\n" + whole, content=""), id="call-in-reasoning"),
        pytest.param(Reply(reasoning=f"{xml('edit_file', draft)}\nNo, that is not it. The right one:\n{whole}",
                           content=""), id="rejected-draft"),
        pytest.param(Reply(content="Also:\n" + whole, tool_calls=[("read_file", {"path": edit["path"]})]),
                     id="xml-beside-native"),
        pytest.param(Reply(reasoning="Applying.\n" + whole[:cut], content=whole[cut:]), id="split-call"),
    ]
