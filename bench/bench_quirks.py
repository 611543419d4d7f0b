#!/usr/bin/env python3
"""Qwen3.6 as it really answers: does the fix still land?

Each behaviour reported for Qwen3.5/3.6 on vLLM (tool calls inside the reasoning, split between the
reasoning and the content, rejected drafts in the thinking, XML beside native calls, text values that
look like numbers, the same call again and again, finish before the work, ...) is a scripted model that
knows the right fix (the case's reference edits) but delivers it that way. It runs through the real
HTTP test double (SSE chunks as vLLM streams them), on small real repositories (bench/fixes cases and
bench/quirks_cases), through the same path as `qfix --yes` (bench/fixes/harness.run_pass: Engine.fix,
apply_changes all or nothing, then the case's own command and held-out checks).

Per behaviour and case: fixed / clean stop / wrong, patch rounds and prompt tokens. "wrong" is any
change written that the case's checks reject, or a rejected draft that reached a file.

    .venv/bin/python bench/bench_quirks.py                  # every behaviour, default cases
    .venv/bin/python bench/bench_quirks.py --only reasoning_call rejected_draft --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fixes import case as case_module, harness  # noqa: E402
from bench.fixes.case import Case, Edit, load_cases  # noqa: E402
from tests.vllm_double import Reply, VLLMDouble, qwen_xml_tool_call  # noqa: E402

QUIRK_CASES = ROOT / "bench" / "quirks_cases"
DEFAULT_CASES = ["py-str-int-concat", "py-strip-suffix", "py-mutable-default"]
NUMBER_CASES = ["py-per-page-number", "py-json-retries"]
DRAFT_MARK = "REJECTED-DRAFT"  # only a rejected draft writes this: seen in a file = the draft ran


@dataclass
class Turn:
    """Where the conversation is, as the scripted model sees it."""

    edits: list[Edit]
    done: int  # edit_file calls answered "Edited ..."
    rounds: int  # patch-round answers so far (assistant messages after the plan)
    finish_answers: list[str]  # what the engine answered to earlier finish calls
    reads: int  # read_file calls answered


def edit_args(e: Edit) -> dict[str, Any]:
    return {"path": e.path, "old_string": e.old, "new_string": e.new}


def xml(name: str, args: dict[str, Any]) -> str:
    return qwen_xml_tool_call(name, args)


def native(*calls: tuple[str, dict[str, Any]]) -> Reply:
    return Reply(tool_calls=list(calls))


def finish() -> Reply:
    return native(("finish", {"summary": "applied the fix"}))


def draft_of(e: Edit) -> dict[str, Any]:
    """A wrong edit the model considers and rejects: harmless syntax, but marked."""
    mark = f"# {DRAFT_MARK}\n" if e.path.endswith(".py") else f" {DRAFT_MARK}"
    return {"path": e.path, "old_string": e.old, "new_string": e.new + ("\n" if e.path.endswith(".py") and not e.new.endswith("\n") else "") + mark}


# -- the behaviours: each maps the conversation's state to the next answer ----------------------

def clean(t: Turn) -> Reply:
    return native(*(("edit_file", edit_args(e)) for e in t.edits)) if t.done < len(t.edits) else finish()


def reasoning_call(t: Turn) -> Reply:
    """vllm#39056: the XML call inside <think>, nothing after it."""
    if t.done >= len(t.edits):
        return finish()
    calls = "\n".join(xml("edit_file", edit_args(e)) for e in t.edits)
    return Reply(reasoning=f"The fix is clear; I will make the edit now.\n\n{calls}", content="")


def split_call(t: Turn) -> Reply:
    """The call opens in the reasoning and the think block closes mid-call: the rest is content."""
    if t.done >= len(t.edits):
        return finish()
    calls = "\n".join(xml("edit_file", edit_args(e)) for e in t.edits)
    cut = calls.index("<parameter=old_string>")
    return Reply(reasoning="Let me apply it.\n" + calls[:cut], content=calls[cut:])


def rejected_draft(t: Turn) -> Reply:
    """Several calls in the reasoning: a draft, a change of mind, then the committed call at its end."""
    if t.done >= len(t.edits):
        return finish()
    drafts = "\n".join(xml("edit_file", draft_of(e)) for e in t.edits)
    final = "\n".join(xml("edit_file", edit_args(e)) for e in t.edits)
    return Reply(reasoning=f"First idea:\n{drafts}\nWait, that is wrong: it leaves a stray comment. The right edit:\n{final}",
                 content="")


def draft_then_native(t: Turn) -> Reply:
    """A draft call in the reasoning, rejected; the real call comes back parsed (native)."""
    if t.done >= len(t.edits):
        return finish()
    drafts = "\n".join(xml("edit_file", draft_of(e)) for e in t.edits)
    return Reply(reasoning=f"Maybe:\n{drafts}\nNo, that adds junk. Use the exact fix instead.",
                 tool_calls=[("edit_file", edit_args(e)) for e in t.edits])


def xml_beside_native(t: Turn) -> Reply:
    """A parsed read_file call and, in the content, the edit as XML."""
    if t.done >= len(t.edits):
        return finish()
    calls = "\n".join(xml("edit_file", edit_args(e)) for e in t.edits)
    return Reply(content=f"Reading once more, and editing:\n{calls}", tool_calls=[("read_file", {"path": t.edits[0].path})])


def xml_only(t: Turn) -> Reply:
    """The whole call as XML in the content (the parser missed it, e.g. stray text before it)."""
    if t.done >= len(t.edits):
        return finish()
    return Reply(content="I'll edit it.\n" + "\n".join(xml("edit_file", edit_args(e)) for e in t.edits))


def draft_only(t: Turn) -> Reply:
    """A draft in the thinking, then more thinking and no call, every round (no fix is reachable):
    the draft must never run."""
    return Reply(reasoning=xml("edit_file", draft_of(t.edits[0])) + "\nHmm, no. Let me reconsider the caller first.",
                 content="")


def split_in_value(t: Turn) -> Reply:
    """The think block closed inside a value (no fix is reachable without guessing the lost text)."""
    calls = "\n".join(xml("edit_file", draft_of(e)) for e in t.edits)
    cut = calls.index(DRAFT_MARK)
    return Reply(reasoning="Applying.\n" + calls[:cut], content=calls[cut:])


def native_typed(t: Turn) -> Reply:
    """A native call whose string argument came out as a JSON number or object."""
    if t.done >= len(t.edits):
        return finish()
    calls = []
    for e in t.edits:
        args: dict[str, Any] = edit_args(e)
        try:
            args["new_string"] = json.loads(e.new)
        except ValueError:
            pass
        calls.append(("edit_file", args))
    return native(*calls)


def repeat_edit(t: Turn) -> Reply:
    """qwen-code#3167: the edit succeeded, and the model sends it again, and again."""
    return native(*(("edit_file", edit_args(e)) for e in t.edits))


def repeat_read(t: Turn) -> Reply:
    """The same read_file twice, then the fix."""
    if t.reads < 2:
        return native(("read_file", {"path": t.edits[0].path}))
    return clean(t)


def stuck_read(t: Turn) -> Reply:
    """QwenPaw#6116: the same read_file every round, never an edit (no fix is reachable)."""
    return native(("read_file", {"path": t.edits[0].path}))


def finish_first(t: Turn) -> Reply:
    """`finish` before any edit; told that the plan named edits, the model makes them."""
    if not t.finish_answers:
        return native(("finish", {"summary": "The code is already correct; nothing needs to change."}))
    return clean(t)


def finish_always(t: Turn) -> Reply:
    """Gives up every time (no fix reachable): must end cleanly, saying the model gave up."""
    return native(("finish", {"summary": "Nothing needs to change."}))


def announced(t: Turn) -> Reply:
    """Qwen3.8#150: "Now let me edit ..." and the turn ends; the call comes after the nudge."""
    if t.done < len(t.edits) and t.rounds == 0:
        return Reply(content=f"Now let me edit {t.edits[0].path}.")
    return clean(t)


def stray_think(t: Turn) -> Reply:
    """Stray think tags in the content around a native call."""
    reply = clean(t)
    return Reply(content="<think>\n\n</think>\n\n", tool_calls=reply.tool_calls)


BEHAVIOURS: dict[str, tuple[Callable[[Turn], Reply], list[str] | None, bool]] = {
    # name: (script, cases (None: the default ones), whether a fix is reachable)
    "clean": (clean, None, True),
    "reasoning_call": (reasoning_call, None, True),
    "split_call": (split_call, None, True),
    "rejected_draft": (rejected_draft, None, True),
    "draft_then_native": (draft_then_native, None, True),
    "xml_beside_native": (xml_beside_native, None, True),
    "draft_only": (draft_only, None, False),
    "split_in_value": (split_in_value, None, False),
    "xml_number_text": (xml_only, NUMBER_CASES, True),
    "native_number": (native_typed, NUMBER_CASES, True),
    "repeat_edit": (repeat_edit, None, True),
    "repeat_read": (repeat_read, None, True),
    "stuck_read": (stuck_read, None, False),
    "finish_first": (finish_first, None, True),
    "finish_always": (finish_always, None, False),
    "announced": (announced, None, True),
    "stray_think": (stray_think, None, True),
}


def responder(case: Case, script: Callable[[Turn], Reply]) -> Callable[[dict[str, Any]], Reply]:
    plan = {"hypotheses": [case.bug_class], "evidence": [], "steps": [f"edit {e.path}" for e in case.reference.edits],
            "verify_command": None}

    def answer(body: dict[str, Any]) -> Reply:
        if "structured_outputs" in body or "response_format" in body:  # the plan call, thinking
            return Reply(reasoning=f"The failure is a {case.bug_class}.", content=json.dumps(plan))
        messages = body["messages"]
        plan_at = next(i for i, m in enumerate(messages) if m["role"] == "assistant")
        later = messages[plan_at + 1:]
        calls = {c["id"]: c["function"]["name"] for m in later if m["role"] == "assistant" for c in m.get("tool_calls") or []}
        results = [(calls.get(m.get("tool_call_id"), ""), m.get("content") or "") for m in later if m["role"] == "tool"]
        turn = Turn(
            edits=case.reference.edits,
            done=sum(1 for name, text in results if name == "edit_file" and text.startswith("Edited")),
            rounds=sum(1 for m in later if m["role"] == "assistant"),
            finish_answers=[text for name, text in results if name == "finish"],
            reads=sum(1 for name, _ in results if name == "read_file"),
        )
        return script(turn)

    return answer


def verdict(case: Case, ws: Path, run: harness.Pass, reachable: bool) -> str:
    drafted = any(DRAFT_MARK in p.read_text(errors="replace") for p in ws.rglob("*") if p.is_file() and ".git" not in p.parts)
    if drafted or run.status == "failed" or run.status == "error":
        return "wrong" if (drafted or run.changed_files or run.status == "error") else "clean stop"
    if run.status == "solved":
        return "fixed"
    return "clean stop"


async def run_all(only: list[str] | None, max_rounds: int, scratch: Path) -> list[dict[str, Any]]:
    cases = {c.id: c for c in [*load_cases(DEFAULT_CASES), *load_cases(None, QUIRK_CASES)]}
    rows = []
    with VLLMDouble() as double:
        for name, (script, case_ids, reachable) in BEHAVIOURS.items():
            if only and name not in only:
                continue
            for case_id in case_ids or DEFAULT_CASES:
                case = cases[case_id]
                double.reset()
                double.responder = responder(case, script)
                settings = {"base_url": double.base_url, "max_retries": 0, "max_rounds": max_rounds,
                            "cache_dir": scratch / "cache" / name / case_id}
                ws = scratch / "ws" / name / case_id
                run = await harness.run_pass(case, ws, settings)
                row = {"behaviour": name, "case": case_id, "reachable": reachable, "verdict": verdict(case, ws, run, reachable),
                       "engine_outcome": run.engine_outcome, "rounds": run.rounds, "prompt_tokens": run.prompt_tokens,
                       "summary_note": run.note}
                print(f"  {name:<18} {case_id:<20} {row['verdict']:<10} {run.engine_outcome or run.status:<18} "
                      f"rounds {run.rounds:>2}  prompt {run.prompt_tokens:>6}", file=sys.stderr, flush=True)
                rows.append(row)
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    out = [f"{'behaviour':<18} {'cases':>5} {'fixed':>5} {'clean':>5} {'wrong':>5} {'rounds':>6} {'prompt tok':>10}  engine outcomes"]
    for name in dict.fromkeys(r["behaviour"] for r in rows):
        mine = [r for r in rows if r["behaviour"] == name]
        count = {v: sum(1 for r in mine if r["verdict"] == v) for v in ("fixed", "clean stop", "wrong")}
        rounds = sum(r["rounds"] for r in mine) / len(mine)
        tokens = sum(r["prompt_tokens"] for r in mine) / len(mine)
        out.append(f"{name:<18} {len(mine):>5} {count['fixed']:>5} {count['clean stop']:>5} {count['wrong']:>5} "
                   f"{rounds:>6.1f} {tokens:>10.0f}  {','.join(sorted({str(r['engine_outcome']) for r in mine}))}")
    reachable = [r for r in rows if r["reachable"]]
    fixed = sum(1 for r in reachable if r["verdict"] == "fixed")
    wrong = sum(1 for r in rows if r["verdict"] == "wrong")
    unreachable_clean = sum(1 for r in rows if not r["reachable"] and r["verdict"] == "clean stop")
    out.append(f"\nfixed where reachable: {fixed}/{len(reachable)} ({100 * fixed / max(1, len(reachable)):.0f}%); "
               f"wrong: {wrong}/{len(rows)}; unreachable ending in a clean stop: "
               f"{unreachable_clean}/{sum(1 for r in rows if not r['reachable'])}")
    clean_rounds = {r["case"]: r["rounds"] for r in rows if r["behaviour"] == "clean"}
    extra = [r["rounds"] - clean_rounds[r["case"]] for r in rows if r["behaviour"] == "repeat_edit" and r["case"] in clean_rounds]
    if extra:
        out.append(f"repeated edit: {max(extra)} extra rounds at most over the clean answer")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/bench_quirks.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", nargs="+", choices=list(BEHAVIOURS), help="run only these behaviours")
    p.add_argument("--max-rounds", type=int, default=8)
    p.add_argument("--json", type=Path, help="write every row here")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="qwen-quirks-") as tmp:
        # An empty git config of our own: on a shared machine /dev/null is not always the device.
        (Path(tmp) / "gitconfig").write_text("")
        case_module._GIT_ENV["GIT_CONFIG_GLOBAL"] = str(Path(tmp) / "gitconfig")
        rows = asyncio.run(run_all(args.only, args.max_rounds, Path(tmp)))
    print(render(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
