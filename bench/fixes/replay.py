"""Scripted answers for the vLLM test double: each case's known fix, replayed as a model would send it.

This tests the harness and the strategies, not the model: a replayed fix is solved by construction.
The responder reads where the conversation is (a plan request, or the n-th turn after the last user
message), so it answers the same way whatever the strategy skips or repeats. Asked for a reading plan
(strategy reading_plan), it reads once first, as a model checking the code would (the file the known
fix edits; for a suggestion, a search for the command's program), then answers with the plan as text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from bench.fixes.case import Case
from qwen_lsp.engine.prompts import READING_PLAN_REQUEST
from tests.vllm_double import Reply


def _patch_turns(case: Case) -> list[Reply]:
    if case.kind == "suggest":
        return [Reply(tool_calls=[("suggest_command", {"command": case.reference.suggest or "", "reason": case.bug_class})]),
                Reply(tool_calls=[("finish", {"summary": "suggested a command"})])]
    edits = case.reference.edits
    return [
        Reply(tool_calls=[("read_file", {"path": path}) for path in dict.fromkeys(e.path for e in edits)]),
        Reply(tool_calls=[("edit_file", {"path": e.path, "old_string": e.old, "new_string": e.new}) for e in edits]),
        Reply(tool_calls=[("finish", {"summary": f"fixed the {case.bug_class}"})]),
    ]


READING_PLAN_START = READING_PLAN_REQUEST.split("{")[0]


def _plan_read(case: Case) -> tuple[str, dict[str, Any]]:
    if case.reference.edits:
        return "read_file", {"path": case.reference.edits[0].path}
    program = case.command.split()[0] if case.command.split() else case.id
    return "search_code", {"pattern": re.escape(program)}


def responder(case: Case) -> Callable[[dict[str, Any]], Reply]:
    plan = {"hypotheses": [case.bug_class], "evidence": [], "steps": ["apply the known fix"], "verify_command": None}
    turns = _patch_turns(case)

    def answer(body: dict[str, Any]) -> Reply:
        thinking = (body.get("chat_template_kwargs") or {}).get("enable_thinking", True)
        reasoning = f"The failure is a {case.bug_class}." if thinking else None
        if "structured_outputs" in body or "response_format" in body:  # the plan call
            return Reply(reasoning=reasoning, content=json.dumps(plan))
        messages = body["messages"]
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        step = sum(1 for m in messages[last_user + 1:] if m["role"] == "assistant")
        if messages[last_user]["content"].startswith(READING_PLAN_START):  # reading plan: one read, then the plan
            if step == 0:
                return Reply(reasoning=f"{reasoning} Let me read the code first.", tool_calls=[_plan_read(case)])
            return Reply(reasoning=reasoning, content=json.dumps(plan))
        reply = turns[step] if step < len(turns) else Reply(content="Done.")
        return Reply(reasoning=reasoning, content=reply.content, tool_calls=reply.tool_calls)

    return answer
