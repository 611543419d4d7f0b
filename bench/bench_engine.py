"""Engine benchmark: a scripted multi-round fix against the vLLM test double.

Prints, per model request: prompt tokens sent, the share of the request that is
a byte-stable prefix of the next one (what vLLM's prefix cache can reuse), and
the cached tokens the double reported; then thinking calls per fix for a first
and a repeated run (the disk cache should make the repeat skip thinking).

    .venv/bin/python bench/bench_engine.py
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qwen_lsp.engine.loop import Engine  # noqa: E402
from qwen_lsp.types import Task, TaskKind  # noqa: E402
from qwen_lsp.settings import Settings  # noqa: E402
from tests.vllm_double import Reply, VLLMDouble, common_prefix, encode, render_prompt  # noqa: E402

from figures import figure  # noqa: E402  (bench/figures.py)

SOURCE = "".join(f"def helper_{i}(x):\n    return x * {i}\n\n\n" for i in range(60)) + "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
PLAN = {"hypotheses": ["add subtracts"], "evidence": [], "steps": ["use +"], "verify_command": None}


def script(double: VLLMDouble, with_plan: bool) -> None:
    replies = [Reply(reasoning="The test expects 5; add() subtracts. " * 20, content=json.dumps(PLAN))] if with_plan else []
    replies += [
        Reply(tool_calls=[("search_code", {"pattern": "def add"})]),
        Reply(tool_calls=[("read_file", {"path": "calc.py", "start_line": 240, "end_line": 245})]),
        Reply(tool_calls=[("edit_file", {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"})]),
        Reply(tool_calls=[("finish", {"summary": "add adds"})]),
    ]
    double.script(*replies)


def prompt_tokens(body: dict) -> list[int]:
    kwargs = body.get("chat_template_kwargs") or {}
    return encode(render_prompt(body["messages"], body.get("tools"), enable_thinking=kwargs.get("enable_thinking", True),
                                preserve_thinking=kwargs.get("preserve_thinking", False)))


async def run(double: VLLMDouble, root: Path, cache: Path, with_plan: bool):
    double.reset()
    script(double, with_plan)
    task = Task(kind=TaskKind.command, description="pytest failed", command=f"{sys.executable} -m pytest -q test_calc.py",
                terminal_output="test_calc.py:5: AssertionError\nE       assert -1 == 5\n", exit_code=1)
    started = time.perf_counter()
    result = await Engine(Settings(base_url=double.base_url, cache_dir=cache, max_retries=0)).fix(task, root)
    return result, time.perf_counter() - started


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, VLLMDouble() as double:
        root = Path(tmp) / "proj"
        root.mkdir()
        (root / "calc.py").write_text(SOURCE)
        (root / "test_calc.py").write_text(TEST)
        cache = Path(tmp) / "cache"

        first, first_s = asyncio.run(run(double, root, cache, with_plan=True))
        bodies = double.chat_requests()
        reported = [r for r in double.requests if r.path.endswith("/chat/completions")]
        tokens = [prompt_tokens(b) for b in bodies]
        shares = [common_prefix(a, b) / len(a) for a, b in zip(tokens, tokens[1:])]
        figure("min prefix share of next request", min(shares), "fraction")
        print("request  mode          prompt_tokens  prefix_of_next")
        for i, (body, toks) in enumerate(zip(bodies, tokens)):
            mode = "thinking" if body["chat_template_kwargs"]["enable_thinking"] else "non-thinking"
            share = f"{common_prefix(toks, tokens[i + 1]) / len(toks):.3f}" if i + 1 < len(tokens) else "-"
            print(f"{i:>7}  {mode:<12}  {len(toks):>13}  {share:>14}")
        print(f"cached tokens reported by the double (whole fix): {first.accounting.cached_tokens} "
              f"of {first.accounting.prompt_tokens} prompt tokens over {len(reported)} requests")

        again, again_s = asyncio.run(run(double, root, cache, with_plan=False))
        figure("thinking calls, first run", first.accounting.thinking_calls, "calls")
        figure("thinking calls, repeated run", again.accounting.thinking_calls, "calls")
        figure("engine wall time, repeated run", again_s, "s")
        print(f"thinking calls per fix: first run {first.accounting.thinking_calls} ({first.outcome}, {first_s:.2f}s), "
              f"repeated run {again.accounting.thinking_calls} ({again.outcome}, {again_s:.2f}s, "
              f"plan from cache: {again.accounting.plan_from_cache})")


if __name__ == "__main__":
    main()
