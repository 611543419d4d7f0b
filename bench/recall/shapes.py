"""How a package's code reaches a function other than by a plain call of its name (pure: sources in,
{(file, qualname): shape} out), for issue 34's harder dispatch corpus (build.py --corpus dispatch-big).

    dunder    an operator or builtin's method (`__eq__`, `__getitem__`, `__contains__`, `__str__`, …)
    visitor   a method of a family another function picks with getattr by a built name:
              `getattr(self, "visit_" + name)`, `getattr(self, f"{key}_sql")`, and all-uppercase
              handler methods (pyflakes calls `getattr(self, type(node).__name__.upper())`)
    table     a function named as a member of a dict/list/tuple/set literal, or registered by a
              decorator whose name says so (`@register_check`, `@…register…`), or a method of a
              class so named or handed to a `….register(…)` call as a new instance
    by-name   a function (or a method of a class) whose name the package spells as a string
              literal elsewhere: state-machine transitions, directive registries, plug-ins by name
A function with none of these is not in the map (build.py may still take it when it is deep).
"""

from __future__ import annotations

import ast
import re

try:
    from mutate import functions  # as build.py runs it (bench/recall on the path)
except ImportError:
    from bench.recall.mutate import functions

DUNDER = re.compile(r"^__(?!init__|new__|init_subclass__|post_init__|class_getitem__)\w+__$")
UPPER = re.compile(r"^[A-Z][A-Z0-9_]+$")


def _getattr_affixes(tree: ast.AST) -> tuple[set[str], set[str]]:
    """The literal prefixes and suffixes of names built for getattr (`"visit_" + x`, f"{x}_sql", "%s_x" % y)."""
    prefixes: set[str] = set()
    suffixes: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2):
            continue
        name = node.args[1]
        if isinstance(name, ast.BinOp) and isinstance(name.op, ast.Add):
            if isinstance(name.left, ast.Constant) and isinstance(name.left.value, str):
                prefixes.add(name.left.value)
            if isinstance(name.right, ast.Constant) and isinstance(name.right.value, str):
                suffixes.add(name.right.value)
        elif isinstance(name, ast.BinOp) and isinstance(name.op, ast.Mod) and isinstance(name.left, ast.Constant):
            text = str(name.left.value)
            head, _, tail = text.partition("%s")
            prefixes.add(head)
            suffixes.add(tail)
        elif isinstance(name, ast.JoinedStr) and name.values:
            first, last = name.values[0], name.values[-1]
            if isinstance(first, ast.Constant):
                prefixes.add(str(first.value))
            if isinstance(last, ast.Constant):
                suffixes.add(str(last.value))
    return {p for p in prefixes if len(p) >= 2}, {s for s in suffixes if len(s) >= 2}


def _table_members(tree: ast.AST) -> set[str]:
    """Names (bare, or an attribute's last part) that are members of literal collections, and the
    classes whose instances are handed to a `….register(…)` call (Markdown's processor registries)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        items: list[ast.AST] = []
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and "register" in node.func.attr.lower()
                and node.args and isinstance(node.args[0], ast.Call)):
            items = [node.args[0].func]
        elif isinstance(node, ast.Dict):
            items = [v for v in node.values if v is not None]
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = list(node.elts)
        for item in items:
            if isinstance(item, ast.Name):
                out.add(item.id)
            elif isinstance(item, ast.Attribute):
                out.add(item.attr)
    return out


def _strings(tree: ast.AST) -> set[str]:
    """String literals that look like identifiers (docstrings and `__all__` left out)."""
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets):
            docs |= {id(c) for c in ast.walk(n.value)}
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docs and n.value.isidentifier() and len(n.value) >= 3}


def _registered(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
        if "register" in name.lower():
            return True
    return False


def shapes(sources: dict[str, str]) -> dict[tuple[str, str], str]:
    """{(file, qualname): shape} over a package's library files (see the module's docstring)."""
    trees = {}
    for rel, text in sources.items():
        try:
            trees[rel] = ast.parse(text)
        except SyntaxError:
            continue
    prefixes: set[str] = set()
    suffixes: set[str] = set()
    members: set[str] = set()
    strings: set[str] = set()
    for tree in trees.values():
        p, s = _getattr_affixes(tree)
        prefixes |= p
        suffixes |= s
        members |= _table_members(tree)
        strings |= _strings(tree)
    out: dict[tuple[str, str], str] = {}
    for rel, tree in trees.items():
        for fn, node in functions(tree):
            if "<locals>" in fn.qualname:
                continue
            name = fn.qualname.rsplit(".", 1)[-1]
            owner = fn.qualname.rsplit(".", 1)[0] if "." in fn.qualname else ""
            if DUNDER.match(name):
                shape = "dunder"
            elif (owner and (any(name.startswith(p) and name != p for p in prefixes)
                             or any(name.endswith(s) and name != s for s in suffixes) or UPPER.match(name))):
                shape = "visitor"
            elif name in members or _registered(node) or (owner and owner.split(".")[-1] in members):
                shape = "table"
            elif name in strings or (owner and owner.split(".")[-1] in strings):
                shape = "by-name"
            else:
                continue
            out[(rel, fn.qualname)] = shape
    return out
