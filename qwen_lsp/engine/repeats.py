"""The same tool call again and again (qwen-code#3167, QwenPaw#6116, vllm#50989): noticed, not re-run.

A call identical in name and arguments to an earlier one of this fix is answered with what it did
then ("already done: ..."), instead of running again: an edit that succeeded is never applied twice
(its new text may contain its old text), and a read of an unchanged workspace says nothing new. The
third identical call stops the fix (`stopped` names it); the engine keeps the change found so far.

What counts as "the same": a read or search is the same only while no edit happened in between (a
read after an edit is new information); an edit, a create or a suggestion is the same for the
whole fix once it has succeeded, and while the workspace is unchanged once it has failed.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

STOP_AT = 3  # the third identical call ends the fix: a repeat costs at most two extra rounds
_READS = ("read_file", "search_code")


class _Runs(Protocol):
    edits_applied: int

    def call(self, name: str, arguments: str | dict[str, Any] | None) -> str: ...


class Repeats:
    def __init__(self) -> None:
        self.answers: dict[tuple[str, str, int | None], str] = {}
        self.counts: dict[tuple[str, str], int] = {}
        self.stopped: str | None = None  # the call that was sent a third time

    def run(self, name: str, arguments: str | dict[str, Any] | None, toolbox: _Runs) -> str:
        """The call's answer: run once, or what it did before; sets `stopped` at the third time."""
        if name == "finish":  # finishing twice is the validation loop's business
            return toolbox.call(name, arguments)
        key = canonical(arguments)
        state = toolbox.edits_applied
        earlier = self.answers.get((name, key, None)) or self.answers.get((name, key, state))
        if earlier is None:
            answer = toolbox.call(name, arguments)
            succeeded_edit = name not in _READS and toolbox.edits_applied > state
            self.answers[(name, key, None if succeeded_edit else state)] = answer
            self.counts[(name, key)] = 1
            return answer
        count = self.counts[(name, key)] = self.counts.get((name, key), 1) + 1
        if count >= STOP_AT:
            self.stopped = name
            return f"Not run: this exact {name} call was sent {count} times; the fix stops here."
        return (f"already done: this exact {name} call ran earlier in this fix and answered:\n{earlier}\n"
                "Do not send it again: continue with the next step of the plan, or call finish.")


def canonical(arguments: str | dict[str, Any] | None) -> str:
    """The arguments as one text, whatever their key order or spacing (raw text when not JSON)."""
    try:
        value = json.loads(arguments) if isinstance(arguments, str | bytes) else arguments
    except ValueError:
        return str(arguments)
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
