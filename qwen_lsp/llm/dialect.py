"""Qwen3.6's tool-call dialect, in one place: where its calls are, and what their arguments mean.

Qwen3-Coder writes a call as XML:

    <tool_call>
    <function=edit_file>
    <parameter=path>
    calc.py
    </parameter>
    ...
    </function>
    </tool_call>

and vLLM's `qwen3_coder` parser turns it into an OpenAI `tool_calls` entry, converting each value by
the tool's JSON schema. In the field the model also leaves calls where no parser looks: in the
content beside parsed ones, inside its reasoning (vllm#39056), split between the reasoning and the
content, and it writes drafts in its thinking that it then rejects. `find_calls` decides which calls an
answer commits to, and says where each was found; `coerce` gives the arguments the types the schema
asks for, as vLLM's parser does, without ever changing the text of a string.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

Source = Literal["native", "content", "reasoning", "split"]

# Qwen3-Coder sometimes drops the <tool_call> wrapper; vLLM's parser accepts a bare <function=...> too.
_CALL = re.compile(r"(?:<tool_call>\s*)?<function=([^>\s]+)>(.*?)</function>(?:\s*</tool_call>)?", re.DOTALL)
_PARAM = re.compile(r"<parameter=([^>\s]+)>(.*?)(?:</parameter>|(?=<parameter=)|(?=</function>)|\Z)", re.DOTALL)
_OPENING = re.compile(r"<tool_call>|<function=")
_CLOSING = re.compile(r"</tool_call>|</function>")


@dataclass
class FoundCall:
    name: str
    arguments: dict[str, Any]
    source: Source


@dataclass
class Found:
    """The calls an answer commits to, the content without the XML taken out of it, and the
    calls seen in the reasoning but not taken (drafts the model moved on from)."""

    calls: list[FoundCall]
    content: str
    drafts: list[FoundCall] = field(default_factory=list)


def parse_params(body: str) -> dict[str, str]:
    """A call body's parameters as the text the model wrote: vLLM removes one newline after the
    opening tag and one before the closing tag, and nothing else (no trimming, no decoding)."""
    params: dict[str, str] = {}
    for key, raw in _PARAM.findall(body):
        if raw.startswith("\n"):
            raw = raw[1:]
        if raw.endswith("\n"):
            raw = raw[:-1]
        params[key] = raw
    return params


def xml_calls(text: str, source: Source) -> list[tuple[re.Match[str], FoundCall]]:
    return [(m, FoundCall(m.group(1), parse_params(m.group(2)), source)) for m in _CALL.finditer(text)]


def find_calls(content: str, reasoning: str, *, native: bool = False) -> Found:
    """Which calls an answer commits to.

    - Native calls (`native`: the server parsed some) and XML calls in the content are the final
      text: all of them run, and the reasoning is not looked at (a draft there was superseded by
      what the model sent). Returned: the XML ones only.
    - A call the reasoning opened and the content finished ("split"), when the break falls between
      parameters (a break inside a value would change its text: refused, with the calls after it);
    - else the calls at the very end of the reasoning, with nothing but whitespace between them and
      after them: what the thinking ended on. A call followed by more thinking ("wait, that's
      wrong") is a draft and never runs.
    """
    if not native and _dangling(content):
        split = _split_call(reasoning, content)
        if split is None:  # the first call's head is lost: running the calls after it would be half a change
            return Found([], content, drafts=[c for _, c in xml_calls(reasoning, "reasoning")])
        call, rest = split
        more = xml_calls(rest, "content")
        return Found([call, *(c for _, c in more)], _CALL.sub("", rest).strip() if more else rest)
    in_content = xml_calls(content, "content")
    rest = _CALL.sub("", content).strip() if in_content else content
    if native or in_content:
        return Found([c for _, c in in_content], rest, drafts=[c for _, c in xml_calls(reasoning, "reasoning")])
    found = xml_calls(reasoning, "reasoning")
    committed: list[FoundCall] = []
    end = len(reasoning.rstrip())
    for match, call in reversed(found):
        if reasoning[match.end():end].strip():
            break
        committed.insert(0, call)
        end = match.start()
    drafts = [c for _, c in found if not any(c is k for k in committed)]
    return Found(committed, content, drafts)


def _dangling(content: str) -> bool:
    """The content begins inside a call: a closing tag or a parameter before any opening tag."""
    first_close = re.search(r"</function>|</tool_call>|<parameter=", content)
    first_open = _OPENING.search(content)
    return first_close is not None and (first_open is None or first_close.start() < first_open.start())


def _split_call(reasoning: str, content: str) -> tuple[FoundCall, str] | None:
    """A call opened at the end of the reasoning and closed in the content: (call, content left)."""
    openings = list(_OPENING.finditer(reasoning))
    if not openings:
        return None
    start = openings[-1].start()
    if reasoning.startswith("<function=", start) and reasoning[:start].rstrip().endswith("<tool_call>"):
        start = reasoning[:start].rstrip().rfind("<tool_call>")
    head = reasoning[start:]
    if _CLOSING.search(head) or not _CALL.match(head + content.lstrip()):
        return None
    # The break must fall outside a value: the head's last parameter is closed (or none opened yet).
    last_param = head.rfind("<parameter=")
    if last_param != -1 and "</parameter>" not in head[last_param:]:
        return None
    joined = head.rstrip() + "\n" + content.lstrip()
    match = _CALL.match(joined)
    if match is None:
        return None
    call = FoundCall(match.group(1), parse_params(match.group(2)), "split")
    return call, joined[match.end():].strip()


# -- argument types, as vLLM's qwen3_coder parser converts them ------------------------------------

def coerce_xml(arguments: dict[str, str], properties: dict[str, Any]) -> dict[str, Any]:
    """XML values (all text) typed by the tool's schema `properties`, as vLLM's parser does: text stays
    text where the schema says string (or says nothing); it is converted only where the schema asks for
    an integer, number, boolean, object or array, and a value that does not convert stays as written
    (the tool's own check then says what is wrong)."""
    typed: dict[str, Any] = {}
    for key, value in arguments.items():
        kind = _kind(properties.get(key))
        typed[key] = value if kind in ("string", None) else _from_text(value, kind)
    return typed


def coerce_native(text: str | bytes, properties: dict[str, Any]) -> Any:
    """A native call's JSON arguments, where a number, boolean, object or array sent for a string
    parameter becomes the exact JSON text the model wrote for it, instead of being refused.
    Raises ValueError on text that is not JSON."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")  # UnicodeDecodeError is a ValueError
    arguments = json.loads(text)
    if not isinstance(arguments, dict):
        return arguments
    wrong = [k for k, v in arguments.items() if _kind(properties.get(k)) == "string" and v is not None and not isinstance(v, str)]
    if not wrong:
        return arguments
    raw = _top_level_texts(text)
    return {k: (raw.get(k) or json.dumps(v, ensure_ascii=False)) if k in wrong else v for k, v in arguments.items()}


_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def _top_level_texts(text: str) -> dict[str, str]:
    """Each top-level value of a JSON object as the text that spelled it (the last one for a repeated key)."""
    texts: dict[str, str] = {}
    i = _SPACE.match(text, 0).end()
    if not text.startswith("{", i):
        return texts
    i = _SPACE.match(text, i + 1).end()
    while i < len(text) and text[i] != "}":
        key, i = _DECODER.raw_decode(text, i)
        i = _SPACE.match(text, i).end()
        if not text.startswith(":", i):
            return texts
        i = _SPACE.match(text, i + 1).end()
        _value, end = _DECODER.raw_decode(text, i)
        texts[key] = text[i:end]
        i = _SPACE.match(text, end).end()
        if text.startswith(",", i):
            i = _SPACE.match(text, i + 1).end()
    return texts


def _kind(schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if isinstance(kind, list):  # ["string", "null"]: the first that is not null
        kind = next((k for k in kind if k != "null"), None)
    return kind if isinstance(kind, str) else None


def _from_text(text: str, kind: str) -> Any:
    stripped = text.strip()
    if stripped.lower() in ("null", "none"):
        return None
    try:
        if kind == "integer":
            return int(stripped)
        if kind == "number":
            number = float(stripped)
            return int(number) if number.is_integer() and stripped.lstrip("-").isdigit() else number
        if kind == "boolean":
            return {"true": True, "false": False}.get(stripped.lower(), text)
        if kind in ("object", "array"):
            try:
                return json.loads(stripped)
            except ValueError:
                return ast.literal_eval(stripped)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return text
    return text
