"""How a Rust file names what it calls: its `use` declarations and the files a module path may be.
Pure functions over tree-sitter trees and path strings, for the callee walk (callees.py).

Rust's modules follow files (`mod tax;` is `tax.rs` or `tax/mod.rs` beside the declaring file), so
a path's last module segment names a file stem; a capitalised segment names a type, whose methods
live in its `impl` blocks anywhere in the crate."""

from __future__ import annotations

from collections.abc import Iterable
from posixpath import commonprefix, dirname

from tree_sitter import Node, Tree

from qwen_lsp.context.callsites import Binding
from qwen_lsp.context.treesitter import node_str, source_of

PATH_WORDS = ("crate", "super", "self")  # a path of these alone is the current crate or module


def rust_bindings(tree: Tree) -> dict[str, Binding]:
    """Names the file's `use` declarations bind: `use crate::tax::apply;` binds apply to
    ("crate::tax", "apply"); `use a::{b, c as d}` binds b and d; `use a::b as c` binds c. A glob
    (`use super::*`) binds nothing by name."""
    source = source_of(tree)
    out: dict[str, Binding] = {}

    def bind(node: Node, prefix: str) -> None:
        kind = node.type
        if kind == "use_list":
            for child in node.named_children:
                bind(child, prefix)
        elif kind == "scoped_use_list":
            path = node.child_by_field_name("path")
            inner = _joined(prefix, node_str(path, source)) if path is not None else prefix
            if (listed := node.child_by_field_name("list")) is not None:
                bind(listed, inner)
        elif kind == "use_as_clause":
            path, alias = node.child_by_field_name("path"), node.child_by_field_name("alias")
            if path is not None and alias is not None:
                module, _, name = _joined(prefix, node_str(path, source)).rpartition("::")
                out[node_str(alias, source)] = Binding(module=module, name=name)
        elif kind in ("scoped_identifier", "identifier"):
            module, _, name = _joined(prefix, node_str(node, source)).rpartition("::")
            out[name] = Binding(module=module, name=name)
        elif kind == "self" and prefix:  # `use a::b::{self}` binds b
            module, _, name = prefix.rpartition("::")
            out[name] = Binding(module=module, name=name)

    for decl in tree.root_node.named_children:
        if decl.type == "use_declaration" and (arg := decl.child_by_field_name("argument")) is not None:
            bind(arg, "")
    return out


def _joined(prefix: str, path: str) -> str:
    path = "".join(path.split())
    return f"{prefix}::{path}" if prefix else path


def module_files(importer: str, module: str, files: Iterable[str]) -> list[str]:
    """Files the module `module` (its last segment: `crate::pricing::tax` -> tax) may be, those
    nearest the importing file first: `tax.rs` or `tax/mod.rs`."""
    stem = module.rsplit("::", 1)[-1]
    if not stem or stem in PATH_WORDS:
        return []
    found = [f for f in files if f.endswith((f"/{stem}.rs", f"/{stem}/mod.rs")) or f in (f"{stem}.rs", f"{stem}/mod.rs")]
    here = dirname(importer).split("/")

    def distance(f: str) -> tuple[int, str]:  # folders up from the importer, then down to f
        there = dirname(f).split("/")
        return (len(here) + len(there) - 2 * len(commonprefix([here, there])), f)

    return sorted(found, key=distance)[:3]


def is_type_segment(segment: str) -> bool:
    """`Money` in `Money::new`: a type (Rust's naming), not a module."""
    return segment[:1].isupper()
