"""The reading plan (settings.strategy "reading_plan"): the thinking plan may read before it answers.

Qwen3.6 interleaves thinking and tool calls, so a function the context missed can cost one read
inside the plan instead of a wrong plan. While planning, the model sees the same tools as in the
patch rounds (the `tools` array stays byte-identical, for the prefix cache), but only read_file and
search_code run, on the fix's overlay (paths confined to the workspace, as in the patch rounds);
any other call is answered with a refusal and never run. The budget is counted here:

- calls: every call counts, refused and repeated ones too, so a plan that keeps calling edit_file
  or the same read cannot loop; calls over the budget are answered "not run";
- tokens: each answer is cut to RESULT_MAX_TOKENS and to what is left of the plan's total.

The loop (engine/loop.py) asks for the plan itself once the budget is spent or the model answered
without calls in something that is not a plan (with structured output: no call is possible there).
"""

from __future__ import annotations

from typing import Any, Protocol

from qwen_lsp.engine.prompts import PLAN_READS_SPENT, PLAN_TOOL_REFUSED
from qwen_lsp.engine.repeats import canonical
from qwen_lsp.llm.parsing import loads_loose
from qwen_lsp.llm.tokens import count_tokens, truncate_to_tokens
from qwen_lsp.types import Plan

READ_TOOLS = ("read_file", "search_code")
RESULT_MAX_TOKENS = 4_096  # of one answer: a 400-line read_file page fits
CUT = "\n[cut here: the plan's reading budget; read the rest in the patch rounds if needed]"


class _Runs(Protocol):
    def call(self, name: str, arguments: str | dict[str, Any] | None) -> str: ...


class PlanReads:
    """Answers the planning calls of one fix within its budget."""

    def __init__(self, toolbox: _Runs, max_calls: int, max_tokens: int) -> None:
        self.toolbox, self.max_calls, self.max_tokens = toolbox, max_calls, max_tokens
        self.calls = 0  # answered: run, refused, repeated or over budget
        self.reads = 0  # run on the overlay
        self.tokens = 0  # of the answers of the reads run
        self._answers: dict[tuple[str, str], str] = {}

    @property
    def spent(self) -> bool:
        return self.calls >= self.max_calls or self.tokens >= self.max_tokens

    def answer(self, name: str, arguments: str | dict[str, Any] | None) -> str:
        """The tool result for one planning call; only a read-only call within budget runs."""
        if self.spent:
            return PLAN_READS_SPENT.format(budget=self._budget())
        self.calls += 1
        if name not in READ_TOOLS:
            return PLAN_TOOL_REFUSED.format(name=name)
        key = (name, canonical(arguments))
        if key in self._answers:  # nothing changes while planning: the earlier answer still holds
            return f"already done: this exact {name} call ran earlier while planning; its answer is above."
        answer = self.toolbox.call(name, arguments)
        room = min(RESULT_MAX_TOKENS, self.max_tokens - self.tokens)
        if (size := count_tokens(answer)) > room:
            answer = truncate_to_tokens(answer, room) + CUT
            size = count_tokens(answer)
        self.reads += 1
        self.tokens += size
        self._answers[key] = answer
        return answer

    def _budget(self) -> str:
        return f"{self.max_calls} calls, {self.max_tokens} tokens"


def plan_in(content: str) -> Plan | None:
    """The plan in an answer given without structured output, or None when it holds none
    (prose, or JSON that is not a plan): then the loop asks for it with structured output."""
    try:
        plan = Plan.model_validate(loads_loose(content))
    except (ValueError, TypeError):
        return None
    return plan if plan.steps or plan.hypotheses else None
