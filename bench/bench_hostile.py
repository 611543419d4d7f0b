"""Hostile inputs stay cheap: search_code with a catastrophic-backtracking pattern, and the
tree-sitter parse check on long runs of broken syntax (issue 13). Figures only, no pass/fail.

Then the attack and fault classes of issue 35 (round 3), each tried in-process through the APIs
the entry points use, and counted: "held" when it got nowhere (hostile_round3.py).

    python bench/bench_hostile.py [--round3-only]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qwen_lsp.engine.overlay import Overlay
from qwen_lsp.engine.tools import ToolBox
from qwen_lsp.engine.validate import error_count

from figures import figure  # bench/figures.py


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    if "--round3-only" not in sys.argv:
        cheap()
    from hostile_round3 import run_all  # bench/hostile_round3.py

    held, total = run_all()
    print(f"round 3 attack and fault classes held: {held}/{total}")
    figure("round 3 classes held", held, f"of {total}")


def cheap() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for i in range(200):
            (root / f"m{i}.py").write_text(("a" * 40 + "!\n") * 50)
        tools = ToolBox(Overlay(root))
        seconds = timed(lambda: tools.call("search_code", {"pattern": "(a+)+$"}))
        print(f"search_code '(a+)+$' over 200 files x 50 hostile lines: {seconds * 1000:.1f} ms")
        figure("hostile search, 10k lines", seconds * 1000, "ms")
    for lines in (1000, 4000, 16000):
        for language, line in (("javascript", "/* c\n"), ("lua", "# c\n")):
            seconds = timed(lambda: error_count(line * lines, language))
            print(f"parse check, {lines} lines of {line.strip()!r} ({language}): {seconds:.2f} s")
            figure(f"parse check {language} {lines} broken lines", seconds, "s")


if __name__ == "__main__":
    main()
