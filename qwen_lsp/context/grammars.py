"""Tree-sitter grammars: one small wheel per supported language (tree-sitter-python, …) in the base
install; the 180 MB tree-sitter-language-pack only as the `[all-grammars]` extra, for anything else."""

from __future__ import annotations

import importlib
from functools import cache

from tree_sitter import Language, Parser

# language name -> (module of its PyPI wheel, the function returning the grammar's pointer)
WHEELS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "rust": ("tree_sitter_rust", "language"),
    "go": ("tree_sitter_go", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "lua": ("tree_sitter_lua", "language"),
    "kotlin": ("tree_sitter_kotlin", "language"),
    # parse checks only (qwen_lsp/engine/validate.py)
    "bash": ("tree_sitter_bash", "language"),
    "json": ("tree_sitter_json", "language"),
    "toml": ("tree_sitter_toml", "language"),
    "yaml": ("tree_sitter_yaml", "language"),
    "csharp": ("tree_sitter_c_sharp", "language"),
    "php": ("tree_sitter_php", "language_php"),
    "swift": ("tree_sitter_swift", "language"),
}


@cache
def get_language(name: str) -> Language:
    """The grammar for `name`; LookupError when neither its wheel nor the language pack has it."""
    if name in WHEELS:
        module, function = WHEELS[name]
        try:
            return Language(getattr(importlib.import_module(module), function)())
        except ImportError:
            pass  # an install without the wheel: the pack may still have it
    try:
        from tree_sitter_language_pack import get_language as from_pack
    except ImportError as exc:
        raise LookupError(f"no tree-sitter grammar for {name!r} (pip install 'qwen-lsp[all-grammars]')") from exc
    try:
        return from_pack(name)  # type: ignore[arg-type]
    except Exception as exc:  # noqa: BLE001 - the pack raises its own error types
        raise LookupError(f"no tree-sitter grammar for {name!r}: {exc}") from exc


def get_parser(name: str) -> Parser:
    return Parser(get_language(name))
