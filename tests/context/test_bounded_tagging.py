"""Tagging is bounded: an open buffer over the file size limit is left out of the live index (and
named), queries run in byte slices with the same result as one pass over the file, and a parse
that runs over its time budget is abandoned."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwen_lsp.context import treesitter
from qwen_lsp.context.index import WorkspaceIndex
from qwen_lsp.context.repomap import MAX_FILE_BYTES, extract_tags

LANGS = Path(__file__).parent / "langs"


def test_a_buffer_over_the_size_limit_is_not_indexed_and_comes_back_under_it(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("def small():\n    return 1\n")
    index = WorkspaceIndex(tmp_path)
    assert "big.py" in index.tag_index().files
    huge = "def huge_{0}():\n    return {0}\n"
    text = "".join(huge.format(i) for i in range(MAX_FILE_BYTES // 20))
    index.set_text("big.py", text)
    assert "big.py" not in index.tag_index().files and index.not_indexed() == {"big.py": len(text)}
    index.set_text("big.py", text + "x = 1\n")  # still too large: nothing re-tagged, still named
    assert index.not_indexed() == {"big.py": len(text) + 6}
    index.set_text("big.py", "def again():\n    pass\n")
    assert index.not_indexed() == {} and [d.name for d in index.tag_index().files["big.py"].defs] == ["again"]
    # Multi-byte text: the limit is in bytes, as on disk.
    index.set_text("big.py", "é" * (MAX_FILE_BYTES // 2 + 1))
    assert "big.py" in index.not_indexed()


def _long_sample(suffix: str) -> str:
    """A language sample repeated over many slices (definitions cross slice boundaries)."""
    (sample,) = [p for p in LANGS.iterdir() if p.name.lower().endswith(suffix + ".sample")]
    text = sample.read_text()
    return "\n".join([text] * (20_000 // len(text) + 2))


@pytest.mark.parametrize(("lang", "suffix"), [("python", ".py"), ("javascript", ".js"), ("go", ".go"), ("rust", ".rs"), ("java", ".java")])
def test_queries_in_slices_find_exactly_what_one_pass_finds(monkeypatch, lang: str, suffix: str) -> None:
    text = _long_sample(suffix)
    whole = extract_tags(text, lang)
    imports = treesitter.imports(text, lang)
    monkeypatch.setattr(treesitter, "QUERY_SLICE_BYTES", 2048)
    treesitter._parse_bytes.cache_clear()
    sliced = extract_tags(text, lang)
    assert whole is not None and sliced is not None and whole.defs
    assert sliced.defs == whole.defs and sliced.refs == whole.refs
    assert treesitter.imports(text, lang) == imports


def test_a_parse_over_its_time_budget_is_abandoned(monkeypatch) -> None:
    monkeypatch.setattr(treesitter, "PARSE_BUDGET_SECONDS", 0.0)
    treesitter._parse_bytes.cache_clear()
    assert treesitter.parse("def f():\n    pass\n" * 5000, "python") is None
    monkeypatch.setattr(treesitter, "PARSE_BUDGET_SECONDS", 5.0)
    treesitter._parse_bytes.cache_clear()
    assert treesitter.parse("def f():\n    pass\n" * 5000, "python") is not None  # the parser was reset


def test_node_texts_come_from_the_parsed_source_and_match_what_tree_sitter_reads() -> None:
    from qwen_lsp.context.callsites import call_sites, python_bindings

    text = "import os.path as p\nfrom .a import b as c, d\n\n\nclass Été:\n    def mé(self, x):\n        return p.join(c(x), d.e(x))\n" * 40
    tree = treesitter.parse(text, "python")
    assert treesitter.source_of(tree) == text.encode()
    refs = treesitter.references(tree, "python")
    sites = call_sites(tree, "python", 1, 280)
    bindings = python_bindings(tree)
    idents = treesitter.identifiers(tree, "python")
    # Without the source, every text is read through Node.text: the same names.
    treesitter._SOURCES.clear()
    assert treesitter.source_of(tree) is None
    assert refs == treesitter.references(tree, "python") and "join" in refs
    assert sites == call_sites(tree, "python", 1, 280) and bindings == python_bindings(tree)
    assert idents == treesitter.identifiers(tree, "python") and ("mé", 6) in idents
