"""Counting and cutting text in Qwen3.6 tokens."""

from __future__ import annotations

from qwen_lsp.llm.tokens import count_tokens, truncate_to_tokens


def test_qwen_token_counts_and_truncation():
    assert count_tokens("") == 0 and count_tokens("def f():\n    return 1\n") > 3
    text = "".join(f"line {i}\n" for i in range(100))
    cut = truncate_to_tokens(text, 20)
    assert text.startswith(cut) and cut.endswith("\n") and count_tokens(cut) <= 20
