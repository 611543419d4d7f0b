"""An index build tags each file from one pass of one query (treesitter.tags, repomap.raw_tags):
the same definitions and reference counts as `definitions` and `references` give, on every
language sample, whole or in query slices, and nothing of the file kept afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwen_lsp.context import treesitter
from qwen_lsp.context.repomap import extract_tags, raw_tags
from qwen_lsp.context.tagpool import tag_file

LANGS = Path(__file__).parent / "langs"
SAMPLES = sorted(LANGS.iterdir())


def _lang(sample: Path) -> str:
    lang = treesitter.language_for(sample.name.removesuffix(".sample"))
    assert lang is not None
    return lang


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_one_pass_gives_the_tags_definitions_and_references_give(sample: Path) -> None:
    text, lang = sample.read_text(), _lang(sample)
    old = extract_tags(text, lang)
    new = raw_tags(text, lang)
    assert old is not None and new is not None and new[0]
    defs, refs = old._raw()
    assert new[0] == defs  # in source order, kinds, lines, signatures and depths alike
    assert new[1] == refs and new[1]  # the same counts (in match order rather than source order)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_one_pass_over_slices_counts_every_reference_once(monkeypatch, sample: Path) -> None:
    text, lang = sample.read_text(), _lang(sample)
    long = "\n".join([text] * (20_000 // len(text) + 2))
    whole = raw_tags(long, lang)
    monkeypatch.setattr(treesitter, "QUERY_SLICE_BYTES", 1000)  # boundaries all over the file
    sliced = raw_tags(long, lang)
    assert sliced == whole
    in_one_call = raw_tags(long, lang, whole=True)  # a tag worker's: the query over the file at once
    assert in_one_call == sliced and list(in_one_call[1]) == list(sliced[1])  # the counts in the same order too


def test_a_match_starting_in_one_slice_with_its_capture_in_the_next_is_kept_once(monkeypatch) -> None:
    # The call starts before the slice boundary; the name it captures starts after it.
    head = "import thing\n"
    pad = "x = 1\n" * ((1024 - len(head) - len("thing.")) // 6)
    text = head + pad + " " * (1024 - len(head) - len(pad) - len("thing.")) + "thing.reference_me()\n"
    assert text.index("reference_me") == 1024
    monkeypatch.setattr(treesitter, "QUERY_SLICE_BYTES", 1024)
    tags = raw_tags(text, "python")
    assert tags is not None and tags[1]["reference_me"] == 1


def test_an_index_build_keeps_no_tree_and_respects_the_parse_budget(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "m.py").write_text("def f():\n    return g()\n" * 200)
    before = dict(treesitter._SOURCES)
    defs, refs = tag_file(str(tmp_path / "m.py"), "m.py") or ([], {})
    assert len(defs) == 200 and refs == {"g": 200}
    assert treesitter._SOURCES == before  # a file parsed once leaves nothing behind
    monkeypatch.setattr(treesitter, "PARSE_BUDGET_SECONDS", 0.0)
    assert treesitter.parse_uncached(b"def f():\n    pass\n" * 5000, "python") is None
    assert tag_file(str(tmp_path / "m.py"), "m.py") is None
