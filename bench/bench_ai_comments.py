"""What finding AI comments costs the language server on each keystroke (engine/comments.py).

    .venv/bin/python bench/bench_ai_comments.py

A 2,650-line Python file (four copies of qwen_lsp/context/treesitter.py): no marker, one marker as the
hint diagnostic needs it (focus=False, every didChange), and with the focus an action needs; each both on
the same text (its tree cached) and edited before every call (an incremental parse)."""

from __future__ import annotations

import time
from pathlib import Path

from qwen_lsp.engine.comments import find_marked

REPEATS = 30


def per_call(texts: list[str], **kwargs) -> float:
    find_marked(texts[0], "big.py", **kwargs)
    started = time.perf_counter()
    for text in texts:
        find_marked(text, "big.py", **kwargs)
    return (time.perf_counter() - started) / len(texts) * 1000


def main() -> None:
    source = (Path(__file__).resolve().parents[1] / "qwen_lsp/context/treesitter.py").read_text() * 4
    marked = source.replace("def parse(", "# qwen: make this faster\ndef parse(", 1)
    edited = [marked.replace("make this faster", f"make this faster {n}", 1) for n in range(REPEATS)]
    print(f"{source.count(chr(10))} lines, ms per call")
    print(f"  no marker:                      {per_call([source] * REPEATS):6.2f}")
    print(f"  marker, hint only, same text:   {per_call([marked] * REPEATS, focus=False):6.2f}")
    print(f"  marker, hint only, edited:      {per_call(edited, focus=False):6.2f}")
    print(f"  marker, with focus, edited:     {per_call(edited):6.2f}")


if __name__ == "__main__":
    main()
