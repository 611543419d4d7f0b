"""Source context with tree-sitter, per language (tests/context/langs/*.sample)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from qwen_lsp.context.source import enclosing, focus, read_source, referenced_names, render_context, source_context
from qwen_lsp.context.treesitter import definitions, imports, language_for, parser_for

LANGS = Path(__file__).parent / "langs"

# file: (language, expected (kind, name, line) definitions, a line inside `size`, imports count)
EXPECTED = {
    "sample.py": ("python", [("class", "Store", 5), ("method", "__init__", 8), ("method", "size", 12), ("function", "load", 16)], 13, 2),
    "sample.js": ("javascript", [("class", "Store", 4), ("method", "constructor", 5), ("method", "size", 9), ("function", "load", 14), ("function", "helper", 18)], 10, 2),
    "sample.ts": ("typescript", [("interface", "Row", 3), ("type", "Id", 7), ("class", "Store", 9), ("method", "constructor", 10), ("method", "size", 12), ("function", "load", 17), ("function", "helper", 21)], 13, 1),
    "sample.rs": ("rust", [("class", "Store", 4), ("impl", "Store", 8), ("method", "size", 9), ("interface", "Sized2", 14), ("method", "size", 15), ("function", "load", 18)], 10, 2),
    "sample.go": ("go", [("type", "Store", 7), ("method", "Size", 11), ("function", "Load", 16)], 12, 2),
    "Sample.java": ("java", [("class", "Sample", 5), ("method", "Sample", 8), ("method", "size", 12), ("method", "load", 16)], 13, 2),
    "sample.c": ("c", [("class", "store", 4), ("function", "size", 9), ("function", "load", 13)], 10, 2),
    "sample.cpp": ("cpp", [("module", "app", 4), ("class", "Store", 6), ("method", "Store", 8), ("method", "size", 9), ("function", "size", 15), ("function", "load", 19)], 16, 2),
    "sample.rb": ("ruby", [("module", "App", 4), ("class", "Store", 5), ("method", "initialize", 6), ("method", "size", 10), ("method", "load", 15)], 11, 2),
    "sample.lua": ("lua", [("function", "new", 6), ("function", "size", 10), ("function", "load", 14)], 11, 1),
    "sample.kt": ("kotlin", [("class", "Store", 5), ("method", "size", 6), ("function", "load", 11)], 7, 2),
}


def sample(name: str) -> str:
    return (LANGS / f"{name}.sample").read_text()


def test_every_language_sample_is_covered() -> None:
    assert {p.name.removesuffix(".sample") for p in LANGS.glob("*.sample")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_definitions_enclosing_and_imports(name: str) -> None:
    lang, defs_expected, size_line, n_imports = EXPECTED[name]
    text = sample(name)
    assert language_for(name) == lang
    defs = definitions(text, lang)
    assert [(d.kind, d.name, d.line) for d in defs] == defs_expected
    inner = enclosing(defs, size_line)
    assert inner is not None and inner.name.lower() == "size"
    assert inner.line <= size_line <= inner.end_line
    assert len(imports(text, lang)) == n_imports
    # Signatures stop before the body.
    assert all("return" not in d.signature for d in defs)


def test_python_signatures_and_outline(tmp_path: Path) -> None:
    shutil.copyfile(LANGS / "sample.py.sample", tmp_path / "store.py")
    ctx = source_context(tmp_path, "store.py", 17)
    assert ctx is not None and ctx.language == "python"
    assert ctx.imports == ["import os", "from pathlib import Path"]
    assert ctx.outline.splitlines() == [
        "    5: class Store:",
        "    8:     def __init__(self, root: Path) -> None:",
        "   12:     def size(self) -> int:",
        "   16: def load(path: str, *, strict: bool = False) -> Store:",
    ]
    assert ctx.focus is not None and (ctx.focus.start_line, ctx.focus.end_line) == (16, 18)
    # Store and Path are used at line 17; Store is defined in this file, Path is not in the workspace.
    assert [s.title for s in ctx.related] == ["class Store:"]
    rendered = render_context(ctx)
    assert "store.py lines 16-18: def load" in rendered and "Outline" in rendered


def test_related_definitions_from_other_files(tmp_path: Path) -> None:
    (tmp_path / "util.py").write_text("def helper(x):\n    return x * 2\n")
    (tmp_path / "app.py").write_text("from util import helper\n\n\ndef run():\n    return helper(3)\n")
    from qwen_lsp.context.repomap import build_index

    index = build_index(tmp_path)
    ctx = source_context(tmp_path, "app.py", 5, lookup=index.lookup)
    assert ctx is not None
    assert [(s.path, s.start_line, s.text) for s in ctx.related] == [("util.py", 1, "def helper(x):\n    return x * 2")]


def test_referenced_names_on_a_line() -> None:
    text = sample("sample.py")
    assert referenced_names(text, "python", 13) == ["os", "listdir", "root"]


def test_unknown_language_falls_back_to_window(tmp_path: Path) -> None:
    (tmp_path / "data.xyz").write_text("\n".join(f"row {i}" for i in range(1, 201)))
    ctx = source_context(tmp_path, "data.xyz", 100)
    assert ctx is not None and ctx.language is None and ctx.outline == ""
    assert ctx.focus is not None and ctx.focus.start_line == 60 and ctx.focus.end_line == 140
    assert "row 100" in ctx.focus.text


def test_huge_function_falls_back_to_window() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(400))
    text = f"def big():\n{body}\n"
    snip = focus(text, "python", 200)
    assert snip.start_line > 1 and snip.end_line - snip.start_line <= 80


def test_missing_binary_and_buffer(tmp_path: Path) -> None:
    (tmp_path / "bin.py").write_bytes(b"\x00\x00\x01")
    assert source_context(tmp_path, "missing.py", 3) is None
    assert source_context(tmp_path, "bin.py", 1) is None
    assert read_source(tmp_path, "x.py", {"x.py": "print(1)\n"}.get) == "print(1)\n"
    ctx = source_context(tmp_path, "x.py", 99, read_file={"x.py": "print(1)\n"}.get)  # line past the end: clamped
    assert ctx is not None and ctx.focus is not None and ctx.focus.text == "print(1)"


def test_syntax_errors_still_give_context(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def ok():\n    return 1\n\n\ndef main(:\n    ok()\n")
    ctx = source_context(tmp_path, "broken.py", 5)
    assert ctx is not None and ctx.focus is not None and "def main(:" in ctx.focus.text
    assert "def ok():" in ctx.outline


def test_a_swallowed_failure_is_logged_with_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="qwen_lsp.context.treesitter")
    assert parser_for("no-such-language") is None  # the caller falls back to a line window...
    (record,) = [r for r in caplog.records if "no-such-language" in r.getMessage()]
    assert record.levelno == logging.DEBUG and record.exc_info is not None  # ...and the reason is in the log
