"""How a Go file names the packages it calls into: its imports, and the folder a package is.
Pure functions over tree-sitter trees and path strings, for the callee walk (callees.py).

A Go package is a folder: `import "example.com/shop/tax"` then `tax.Apply()` means `Apply` at the
top of one of that folder's files; the folder is found by the import path's last segments."""

from __future__ import annotations

from collections.abc import Iterable
from posixpath import commonprefix, dirname

from tree_sitter import Tree

from qwen_lsp.context.callsites import Binding
from qwen_lsp.context.treesitter import node_str, source_of


def go_bindings(tree: Tree) -> dict[str, Binding]:
    """Package names the file's imports bind: `import "a/b/tax"` binds tax, `import m "a/money"`
    binds m, each to (import path, None). Blank (`_`) and dot imports bind no name."""
    source = source_of(tree)
    out: dict[str, Binding] = {}
    stack = [n for n in tree.root_node.named_children if n.type == "import_declaration"]
    while stack:
        node = stack.pop()
        if node.type != "import_spec":
            stack.extend(node.named_children)
            continue
        path_node, name_node = node.child_by_field_name("path"), node.child_by_field_name("name")
        if path_node is None:
            continue
        path = node_str(path_node, source).strip('"`')
        if name_node is not None:
            if name_node.type != "package_identifier":
                continue
            name = node_str(name_node, source)
        else:
            name = path.rstrip("/").rsplit("/", 1)[-1]
        out[name] = Binding(module=path, name=None)
    return out


def package_files(import_path: str, files: Iterable[str]) -> list[str]:
    """The workspace's non-test Go files of the package `import_path`: those in the folder whose last
    segments are the most of the import path's (`example.com/shop/tax` -> `tax/*.go`, or
    `shop/tax/*.go` rather than `other/tax/*.go` when both exist), then with the fewest segments
    besides (`tax/` rather than `vendor/x/tax/`)."""
    wanted = [s for s in import_path.strip("/").split("/") if s]
    best: list[str] = []
    best_key = (0, 0)
    for f in files:
        if not f.endswith(".go") or f.endswith("_test.go"):
            continue
        folder = [s for s in dirname(f).split("/") if s]
        n = len(commonprefix([folder[::-1], wanted[::-1]]))  # last segments in common
        # most segments matched, then fewest left over: `money/` (under go.mod's module) before `other/money/`
        key = (n, -(len(folder) - n))
        if n and key > best_key:
            best, best_key = [f], key
        elif n and key == best_key:
            best.append(f)
    return sorted(best)
