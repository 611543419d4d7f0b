"""Pure parsers for model output: reasoning tags, Qwen3-Coder XML tool calls,
loose JSON and plain-text edit blocks (for servers without tool calling)."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

_THINK_BLOCK = re.compile(r"<think>(.*?)</think>", re.DOTALL)
_TOOL_CALL = re.compile(r"<tool_call>\s*<function=([^>\s]+)>(.*?)</function>\s*</tool_call>", re.DOTALL)
_PARAM = re.compile(r"<parameter=([^>\s]+)>\n?(.*?)\n?</parameter>", re.DOTALL)
_FENCED_JSON = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
_EDIT_BLOCK = re.compile(
    r"^(?P<path>[^\n`]+?)\n(?:```[^\n]*\n)?<<<<<<< SEARCH\n(?P<old>.*?)^=======\n(?P<new>.*?)^>>>>>>> REPLACE",
    re.DOTALL | re.MULTILINE,
)


class ParsedToolCall(BaseModel):
    name: str
    arguments: dict[str, Any]


class EditBlock(BaseModel):
    path: str
    old: str
    new: str


def split_reasoning(content: str | None) -> tuple[str, str]:
    """(reasoning, answer) from content that may carry inline <think> blocks.

    Servers without a reasoning parser return the thinking inline; a server that
    opened <think> in the chat template returns only a lone `</think>`. Either
    way nothing before the last `</think>` may reach an edit.
    """
    if not content:
        return "", content or ""
    reasoning = [m.strip() for m in _THINK_BLOCK.findall(content)]
    answer = _THINK_BLOCK.sub("", content)
    if "</think>" in answer:
        head, _, answer = answer.rpartition("</think>")
        reasoning.append(head.replace("<think>", "").strip())
    elif "<think>" in answer:  # opened and never closed: all of it is reasoning
        head, _, tail = answer.partition("<think>")
        reasoning.append(tail.strip())
        answer = head
    return "\n".join(r for r in reasoning if r), answer.strip()


def parse_xml_tool_calls(content: str) -> tuple[str, list[ParsedToolCall]]:
    """Tool calls left in content in Qwen3-Coder's XML form (server without a tool parser)."""
    calls: list[ParsedToolCall] = []
    for name, body in _TOOL_CALL.findall(content):
        args: dict[str, Any] = {}
        for key, raw in _PARAM.findall(body):
            args[key] = _xml_value(raw)
        calls.append(ParsedToolCall(name=name, arguments=args))
    return _TOOL_CALL.sub("", content).strip(), calls


def _xml_value(raw: str) -> Any:
    # Qwen3-Coder writes strings verbatim and other types as JSON.
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # 200,000 nested arrays: kept as the text it is
        return raw
    return value if not isinstance(value, str) else raw


def loads_loose(text: str) -> Any:
    """JSON from a model that may wrap it in prose or a code fence; ValueError if none."""
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    for candidate in [*_FENCED_JSON.findall(text), _outermost_braces(text)]:
        if candidate:
            try:
                return json.loads(candidate)
            except ValueError:
                continue
    raise ValueError("no JSON object found in the model output")


def _outermost_braces(text: str) -> str | None:
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if 0 <= start < end else None


def parse_edit_blocks(text: str) -> list[EditBlock]:
    """SEARCH/REPLACE blocks, the fallback edit format for servers without tools:

        path/to/file.py
        <<<<<<< SEARCH
        old lines
        =======
        new lines
        >>>>>>> REPLACE
    """
    return [
        EditBlock(path=m["path"].strip().strip("`*"), old=m["old"], new=m["new"])
        for m in _EDIT_BLOCK.finditer(text)
    ]
