"""Every language qwen-lsp reads or parse-checks has its grammar from the base install: one small
wheel each, not the 180 MB language pack (an optional extra)."""

from __future__ import annotations

import importlib.util

import pytest

from qwen_lsp.context.grammars import WHEELS, get_parser
from qwen_lsp.context.treesitter import EXTENSIONS


def test_every_supported_language_has_a_wheel():
    # One language table (context/treesitter.py) serves context and the parse check alike.
    assert set(EXTENSIONS.values()) <= set(WHEELS)


@pytest.mark.parametrize("language", sorted(WHEELS))
def test_each_grammar_parses_from_its_own_wheel(language, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "tree_sitter_language_pack", None)  # as in a base install
    from qwen_lsp.context import grammars

    grammars.get_language.cache_clear()
    tree = get_parser(language).parse(b"x = 1\n")
    assert tree.root_node is not None
    assert importlib.util.find_spec(WHEELS[language][0]) is not None


def test_a_language_without_a_wheel_or_the_pack_is_a_lookup_error(monkeypatch):
    import sys

    from qwen_lsp.context import grammars

    monkeypatch.setitem(sys.modules, "tree_sitter_language_pack", None)
    grammars.get_language.cache_clear()
    with pytest.raises(LookupError, match="all-grammars"):
        grammars.get_language("elixir")
    grammars.get_language.cache_clear()
