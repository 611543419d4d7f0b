"""Incremental parsing (treesitter._edited_base): a text that differs from a recent one by an edit is
parsed from the earlier tree, and the tree is the one a fresh parse gives, whatever the edit."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from qwen_lsp.context import treesitter
from qwen_lsp.context.grammars import get_parser
from qwen_lsp.context.treesitter import language_for, one_edit, parse

LANGS = Path(__file__).parent / "langs"
ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    *(p for p in sorted(LANGS.glob("*.sample"))),
    ROOT / "qwen_lsp" / "context" / "treesitter.py",  # a long one: many blocks before the change
]
INSERTS = ["x", "\n", "    ", "def f():\n    pass\n", "é", "🙂", "}", "(", '"', "# ü\n", "", "\t"]


@pytest.fixture(autouse=True)
def fresh_caches():
    treesitter._parse_bytes.cache_clear()
    treesitter._SOURCES.clear()
    yield
    treesitter._parse_bytes.cache_clear()
    treesitter._SOURCES.clear()


def lang_of(path: Path) -> str:
    lang = language_for(path.name.removesuffix(".sample"))
    assert lang is not None, path
    return lang


def edited(text: str, rng: random.Random) -> str:
    """`text` with one random deletion, insertion or replacement (multi-byte characters included)."""
    a = rng.randrange(len(text) + 1)
    b = min(len(text), a + rng.choice([0, 0, 1, 3, 20, 200]))
    return text[:a] + rng.choice(INSERTS) + text[b:]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_every_edit_parses_to_the_tree_a_fresh_parse_gives(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lang, text, rng = lang_of(path), path.read_text(), random.Random(path.name)
    bases: dict[bytes, object] = {}  # each text parsed, and the base it was parsed from
    find = treesitter._edited_base
    monkeypatch.setattr(treesitter, "_edited_base", lambda data, lg: bases.setdefault(data, find(data, lg)))
    fresh = get_parser(lang)
    assert parse(text, lang) is not None and bases[text.encode()] is None  # nothing to start from yet
    reused = 0
    for _ in range(40):
        before, text = text.encode(), edited(text, rng)
        tree = parse(text, lang)
        assert tree is not None
        assert str(tree.root_node) == str(fresh.parse(text.encode()).root_node)
        start, old_end, _ = one_edit(before, text.encode())
        if (start + len(before) - old_end) * 2 >= len(text.encode()) and text.encode() != before:
            assert bases[text.encode()] is not None  # the last tree, or one as close
            reused += 1
    assert reused >= 25


def test_a_text_unlike_any_recent_one_is_parsed_from_scratch(monkeypatch: pytest.MonkeyPatch) -> None:
    parse("def a():\n    return 1\n" * 50, "python")
    bases: list[object] = []
    find = treesitter._edited_base
    monkeypatch.setattr(treesitter, "_edited_base", lambda data, lg: bases.append(b := find(data, lg)) or b)
    tree = parse("class B:\n    x = 2\n" * 50, "python")
    assert bases == [None] and tree is not None and not tree.root_node.has_error
    other = parse("def a():\n    return 1\n" * 50, "javascript")  # the same bytes in another language: not its base
    assert bases == [None, None] and other is not None


@pytest.mark.parametrize("size", [0, 1, 5, 4095, 4096, 4097, 9000])
def test_one_edit_is_the_widest_unchanged_prefix_and_suffix(size: int) -> None:
    rng = random.Random(size)
    for _ in range(50):
        old = bytes(rng.choice(b"ab\n") for _ in range(size))
        cut = rng.randrange(len(old) + 1)
        new = old[:cut] + bytes(rng.choice(b"ab\n") for _ in range(rng.randrange(6))) + old[cut + rng.randrange(6):]
        check_one_edit(old, new)


def check_one_edit(old: bytes, new: bytes) -> None:
    start, old_end, new_end = one_edit(old, new)
    assert old[:start] == new[:start] and old[old_end:] == new[new_end:]
    assert old[:start] + new[start:new_end] + old[old_end:] == new
    assert 0 <= start <= old_end <= len(old) and start <= new_end <= len(new)
    # as wide as can be: one more byte on either side differs (or there is none)
    assert start == min(len(old), len(new)) or old[start] != new[start]
    suffix = len(old) - old_end
    assert start + suffix == min(len(old), len(new)) or old[old_end - 1] != new[new_end - 1]
