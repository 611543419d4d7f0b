"""Calls a span makes without naming the callee: the language's own dispatch (issue 34). Pure
functions over tree-sitter trees, the raw material the callee walk (callees.py) resolves.

- operators and builtins mean dunders: `a == b` -> __eq__, `k in d` -> __contains__, `d[k]` ->
  __getitem__ (a target: __setitem__), `len(x)` -> __len__, `with x:` -> __enter__/__exit__, ...
- `getattr(self, "visit_" + kind)` and JavaScript's `this['check' + type]` mean the family of
  methods whose names start with the prefix;
- `self.handlers[kind](node)`, `handler = self.handlers[kind]; handler(node)` / `const fn = table[kind]` mean the members of the table (a dict,
  list or object literal assigned to that name);
- a string that spells a definition's or a module's name (`render(invoice, 'csv')`, a plug-in
  loaded by name) may mean it.

And JavaScript/TypeScript's bindings (`require`, `import`, re-exports) and the function around a
line even when it is an anonymous arrow (`test('…', () => {…})`) with the hooks that run before it."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from functools import cache

from tree_sitter import Node, Query, QueryCursor, Tree

from qwen_lsp.context.callsites import Binding
from qwen_lsp.context.grammars import get_language
from qwen_lsp.context.treesitter import node_str, node_text, source_of

log = logging.getLogger(__name__)

JS_LANGS = ("javascript", "typescript", "tsx")

# Python operators and builtins -> the dunders they call.
_COMPARE = {"==": ("__eq__",), "!=": ("__ne__", "__eq__"), "<": ("__lt__",), "<=": ("__le__",), ">": ("__gt__",),
            ">=": ("__ge__",), "in": ("__contains__",), "not in": ("__contains__",)}
_BINARY = {"+": "__add__", "-": "__sub__", "*": "__mul__", "/": "__truediv__", "//": "__floordiv__", "%": "__mod__",
           "**": "__pow__", "|": "__or__", "&": "__and__", "^": "__xor__", "<<": "__lshift__", ">>": "__rshift__",
           "@": "__matmul__"}
_BUILTINS = {"len": ("__len__",), "str": ("__str__", "__repr__"), "repr": ("__repr__",), "iter": ("__iter__",),
             "hash": ("__hash__",), "bool": ("__bool__", "__len__"), "next": ("__next__",), "reversed": ("__reversed__",),
             "abs": ("__abs__",), "int": ("__int__",), "float": ("__float__",), "format": ("__format__",),
             "sorted": ("__lt__",), "min": ("__lt__",), "max": ("__gt__", "__lt__"), "list": ("__iter__",),
             "tuple": ("__iter__",), "set": ("__iter__", "__hash__"), "dict": ("__iter__", "__getitem__"),
             "pickle.dumps": ("__reduce__", "__getstate__"), "copy": ("__copy__",), "deepcopy": ("__deepcopy__",)}
# Methods a Mapping/MutableMapping/Set mixin implements with the dunders a subclass defines:
# `cache.update(...)` runs the cache's own __setitem__.
_MIXINS = {"update": ("__setitem__",), "setdefault": ("__getitem__", "__setitem__"), "get": ("__getitem__",),
           "pop": ("__getitem__", "__delitem__"), "popitem": ("__delitem__", "__iter__"), "clear": ("__delitem__",),
           "keys": ("__iter__",), "items": ("__iter__", "__getitem__"), "values": ("__iter__", "__getitem__"),
           "extend": ("__iadd__", "append"), "copy": ("__copy__",), "discard": ("__contains__",)}
_STRING = re.compile(r"^[A-Za-z_][\w\-]{2,40}$")
_PREFIX = re.compile(r"""^[fbrFBR]?['"`]([A-Za-z_]\w*)""")
# a built name's literal end: f"{e.key}_sql", kind + "_sql", "%s_sql" % kind
_SUFFIX = re.compile(r"""(?:^[fF]['"]\{[^{}'"]*\}(\w+)['"]$|\+\s*['"](\w+)['"]$|^['"]%s(\w+)['"]\s*%)""")
_HOOKS = ("beforeEach", "before", "beforeAll", "setup")
_JS_FUNCTIONS = ("arrow_function", "function_expression", "function", "function_declaration", "method_definition",
                 "generator_function", "generator_function_declaration")
_JS_EXTENSIONS = ("", ".js", ".ts", ".mjs", ".cjs", ".jsx", ".tsx", ".mts", ".cts", "/index.js", "/index.ts",
                  "/index.mjs", "/index.cjs", "/index.tsx")
MAX_STRINGS = 24  # string literals looked at per body


@dataclass(frozen=True)
class Dispatch:
    """One dispatched call in a body: `kind` is dunder (names: the dunders), family (names: the
    prefix, or "" and the suffix, or "" and "" for any method of the class), table (names: the table's dotted name, e.g. "self.nodes") or string (names: the text)."""

    kind: str
    names: tuple[str, ...]
    line: int


_QUERIES = {
    "python": """
(comparison_operator) @cmp
(binary_operator) @bin
(augmented_assignment) @aug
(subscript) @sub
(for_statement) @iter
(for_in_clause) @iter
(with_item) @with
(call function: (identifier) @fn)
(call function: (attribute attribute: (identifier) @mixin))
(call function: (subscript value: (_) @table))
(assignment left: (identifier) right: (subscript value: (_) @picked))
""",
    "javascript": """
(subscript_expression index: (binary_expression) @prefix)
(subscript_expression object: [(identifier) (member_expression)] @table index: [(identifier) (member_expression) (call_expression)])
""",
}
_STRINGS_QUERY = "(string) @str"


@cache
def _query(lang: str, strings: bool = False) -> Query | None:
    text = _QUERIES.get("javascript" if lang in JS_LANGS else lang)
    if text is None:
        return None
    if strings:
        text = _STRINGS_QUERY
    try:
        return Query(get_language(lang), text)
    except Exception:
        log.debug("%s dispatch query not compiled", lang, exc_info=True)
        return None


def dispatches(tree: Tree, lang: str, start_line: int, end_line: int, *, strings: bool = True) -> list[Dispatch]:
    """The dispatched calls in lines start_line..end_line, one per (kind, names), in source order;
    string literals that may name a definition only if `strings`."""
    queries = [q for q in (_query(lang), _query(lang, True) if strings else None) if q is not None]
    if not queries:
        return []
    source = source_of(tree)
    out: dict[tuple[str, tuple[str, ...]], Dispatch] = {}
    strings = 0

    def add(kind: str, names: tuple[str, ...], node: Node) -> None:
        key = (kind, names)
        if names and key not in out:
            out[key] = Dispatch(kind, names, node.start_point[0] + 1)

    called: set[str] = set()  # names called in the span: `handler = self.nodes[k]; handler(node)`
    picked: list[tuple[str, Node]] = []  # (the name assigned, the table it was picked from)
    matches = []
    for query in queries:
        cursor = QueryCursor(query)
        cursor.set_point_range((max(0, start_line - 1), 0), (end_line, 0))
        matches += cursor.matches(tree.root_node)
    for _, caps in matches:
        for cap, nodes in caps.items():
            for node in nodes:
                if not start_line <= node.start_point[0] + 1 <= end_line:
                    continue
                if cap == "cmp":
                    for op in node.children:
                        if not op.is_named or op.type in ("in", "not in"):
                            add("dunder", _COMPARE.get(" ".join(node_str(op, source).split()), ()), node)
                elif cap == "bin" and (op := node.child_by_field_name("operator")) is not None:
                    if name := _BINARY.get(node_str(op, source)):
                        add("dunder", (name, "__r" + name[2:]), node)
                elif cap == "aug" and (op := node.child_by_field_name("operator")) is not None:
                    if name := _BINARY.get(node_str(op, source).rstrip("=")):
                        add("dunder", ("__i" + name[2:], name), node)
                elif cap == "sub":
                    parent = node.parent
                    target = parent is not None and parent.type in ("assignment", "augmented_assignment") \
                        and parent.child_by_field_name("left") == node
                    deleted = parent is not None and parent.type == "delete_statement"
                    add("dunder", ("__setitem__",) if target else ("__delitem__",) if deleted else ("__getitem__",), node)
                elif cap == "iter":
                    add("dunder", ("__iter__",), node)
                elif cap == "with":
                    add("dunder", ("__enter__", "__exit__"), node)
                elif cap == "fn":
                    name = node_str(node, source)
                    called.add(name)
                    if name in _BUILTINS:
                        add("dunder", _BUILTINS[name], node)
                    elif name == "getattr" and (args := node.parent.child_by_field_name("arguments")) is not None \
                            and len(args.named_children) >= 2:
                        add("family", _family(args.named_children[0], args.named_children[1], source), node)
                elif cap == "mixin" and (name := node_str(node, source)) in _MIXINS:
                    add("dunder", _MIXINS[name], node)
                elif cap == "table":
                    add("table", (" ".join(node_str(node, source).split()),), node)
                elif cap == "picked" and node.parent is not None and node.parent.parent is not None \
                        and (left := node.parent.parent.child_by_field_name("left")) is not None:
                    picked.append((node_str(left, source), node))
                elif cap == "prefix":
                    while node.type == "binary_expression" and (left := node.child_by_field_name("left")) is not None:
                        node = left  # 'check' + a + b: the leftmost operand
                    if node.type in ("string", "template_string") and (m := _PREFIX.match(node_str(node, source))):
                        add("family", (m.group(1),), node)
                elif cap == "str" and strings < MAX_STRINGS:
                    strings += 1
                    parent = node.parent
                    call = parent.parent if parent is not None else None
                    if call is not None and call.type == "call_expression" and call.children \
                            and node_str(call.children[0], source) == "require":
                        continue  # a module specifier: bindings resolve it
                    if (text := _string_text(node, source)) and _STRING.match(text):
                        add("string", (text,), node)
    for name, node in picked:  # a table entry picked into a name, then called by that name
        if name in called:
            add("table", (" ".join(node_str(node, source).split()),), node)
    return sorted(out.values(), key=lambda d: d.line)


def _family(obj: Node, name: Node, source: bytes | None) -> tuple[str, ...]:
    """What a getattr's built name says of the methods it may pick: (prefix,) for `"visit_" + kind`,
    ("", suffix) for f"{key}_sql", ("", "") for any other name built on self or cls (pyflakes'
    `getattr(self, node_class.__name__.upper())`: any method of the class); () for nothing to go on."""
    text = " ".join(node_str(name, source).split())
    if m := _PREFIX.match(text):
        return (m.group(1),)
    if m := _SUFFIX.search(text):
        return ("", next(g for g in m.groups() if g))
    if name.type != "string" and node_str(obj, source) in ("self", "cls"):
        return ("", "")
    return ()


def _string_text(node: Node, source: bytes | None) -> str:
    text = node_str(node, source)
    m = re.match(r"""^[A-Za-z]*(['"`]{1,3})(.*?)\1$""", text, re.S)
    return m.group(2) if m else ""


# --------------------------------------------------------------------------- tables


def table_members(tree: Tree, lang: str, name: str, start_line: int, end_line: int) -> list[tuple[str | None, str, int]]:
    """(receiver, name, line) of each member of the literal assigned to `name` ("self.nodes",
    "OPERATORS", "evaluators") within lines start_line..end_line, and the line span of the literal
    as a last entry (None, "", first*100000+last) so that definitions inside it (JavaScript methods of
    an object literal) can be found by the caller."""
    source = source_of(tree)
    out: list[tuple[str | None, str, int]] = []
    lines = (source or b"").decode("utf-8", "replace").splitlines()
    assigned = re.compile(rf"^\s*(?:(?:const|let|var|export)\s+)*{re.escape(name)}\s*(?::[^=]*)?=\s*[\[{{(]")
    hits = [i for i in range(max(0, start_line - 1), min(end_line, len(lines))) if assigned.match(lines[i])]
    stack = []
    for i in hits[:4]:  # the statement on that line: found through the tree, not by walking all of it
        col = max(0, lines[i].find(name))  # on the assigned name: its parents are the assignment
        node = tree.root_node.descendant_for_point_range((i, col), (i, col))
        while node is not None and node.type not in ("assignment", "assignment_expression", "variable_declarator"):
            node = node.parent
        if node is not None:
            stack.append(node)
    while stack:
        node = stack.pop()
        left = right = None
        if node.type in ("assignment", "assignment_expression"):
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        elif node.type == "variable_declarator":
            left, right = node.child_by_field_name("name"), node.child_by_field_name("value")
        elif node.type in ("pair",) and lang == "python":
            continue
        if left is None or right is None or node_str(left, source) != name:
            continue
        if right.type not in ("dictionary", "list", "tuple", "set", "object", "array"):
            continue
        for item in right.named_children:
            value = item.child_by_field_name("value") if item.type == "pair" else item
            if value is None:
                continue
            if value.type in ("identifier",):
                out.append((None, node_str(value, source), value.start_point[0] + 1))
            elif value.type in ("attribute", "member_expression"):
                obj = value.child_by_field_name("object")
                attr = value.child_by_field_name("attribute") or value.child_by_field_name("property")
                if obj is not None and attr is not None:
                    out.append((" ".join(node_str(obj, source).split()), node_str(attr, source), value.start_point[0] + 1))
        out.append((None, "", (right.start_point[0] + 1) * 100_000 + right.end_point[0] + 1))
        break
    return out


# --------------------------------------------------------------------------- JavaScript


def js_bindings(tree: Tree) -> dict[str, Binding]:
    """Names a JavaScript/TypeScript module's top-level `require`s and `import`s bind, and what its
    exports re-export: `const {a, b: c} = require('./x')` binds a -> ('./x', 'a') and c -> ('./x', 'b');
    `const m = require('./m')` and `import * as m` bind m -> ('./m', None); `export * from`, and
    `...require('./w')` in module.exports, are kept under the keys "*0", "*1", ... ."""
    source = source_of(tree)
    out: dict[str, Binding] = {}
    stars = 0

    def required(node: Node | None) -> str | None:
        while node is not None and node.type in ("await_expression", "parenthesized_expression"):
            node = node.named_children[0] if node.named_children else None
        if node is None or node.type != "call_expression":
            return None
        fn, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
        if fn is None or args is None or node_str(fn, source) not in ("require", "import") or not args.named_children:
            return None
        first = args.named_children[0]
        return _string_text(first, source) or None if first.type == "string" else None

    def export_object(obj: Node) -> None:
        nonlocal stars
        for item in obj.named_children:
            if item.type == "spread_element" and item.named_children and (mod := required(item.named_children[0])):
                out[f"*{stars}"] = Binding(mod, None)
                stars += 1
            elif item.type == "pair" and (key := item.child_by_field_name("key")) is not None \
                    and (mod := required(item.child_by_field_name("value"))):
                out[node_str(key, source)] = Binding(mod, None)

    for top in tree.root_node.children:
        node = top.child_by_field_name("declaration") if top.type == "export_statement" and top.child_by_field_name("declaration") else top
        if node.type in ("lexical_declaration", "variable_declaration"):
            for decl in node.named_children:
                if decl.type != "variable_declarator":
                    continue
                name, value = decl.child_by_field_name("name"), decl.child_by_field_name("value")
                mod = required(value)
                if value is not None and value.type == "member_expression" and (obj := value.child_by_field_name("object")) is not None:
                    mod = required(obj)  # const x = require('./m').x
                    prop = value.child_by_field_name("property")
                    if mod and name is not None and prop is not None and name.type == "identifier":
                        out[node_str(name, source)] = Binding(mod, node_str(prop, source))
                    continue
                if mod is None or name is None:
                    continue
                if name.type == "identifier":
                    out[node_str(name, source)] = Binding(mod, None)
                elif name.type == "object_pattern":
                    for part in name.named_children:
                        if part.type == "shorthand_property_identifier_pattern":
                            out[node_str(part, source)] = Binding(mod, node_str(part, source))
                        elif part.type == "pair_pattern":
                            k, v = part.child_by_field_name("key"), part.child_by_field_name("value")
                            if k is not None and v is not None and v.type == "identifier":
                                out[node_str(v, source)] = Binding(mod, node_str(k, source))
        elif top.type in ("import_statement", "export_statement"):
            src = top.child_by_field_name("source")
            mod = _string_text(src, source) if src is not None else ""
            if not mod:
                continue
            if top.type == "export_statement" and not any(c.type == "export_clause" for c in top.named_children):
                out[f"*{stars}"] = Binding(mod, None)  # export * from './m'
                stars += 1
                continue
            for spec in _descendants(top, ("import_specifier", "export_specifier", "namespace_import", "identifier")):
                if spec.type in ("import_specifier", "export_specifier"):
                    n, alias = spec.child_by_field_name("name"), spec.child_by_field_name("alias")
                    if n is not None:
                        out[node_str(alias or n, source)] = Binding(mod, node_str(n, source))
                elif spec.type == "namespace_import":
                    if spec.named_children:
                        out[node_str(spec.named_children[0], source)] = Binding(mod, None)
                elif spec.parent is not None and spec.parent.type == "import_clause":
                    out[node_str(spec, source)] = Binding(mod, "default")
        elif top.type == "expression_statement" and top.named_children:
            expr = top.named_children[0]
            if expr.type == "assignment_expression" and (left := expr.child_by_field_name("left")) is not None \
                    and node_str(left, source) in ("module.exports", "exports") \
                    and (right := expr.child_by_field_name("right")) is not None:
                if right.type == "object":
                    export_object(right)
                elif mod := required(right):
                    out[f"*{stars}"] = Binding(mod, None)
                    stars += 1
    return out


def _descendants(node: Node, types: tuple[str, ...]) -> list[Node]:
    out, stack = [], list(reversed(node.children))
    while stack:
        n = stack.pop()
        if n.type in types:
            out.append(n)
        if n.type not in ("import_specifier", "export_specifier", "namespace_import"):
            stack.extend(reversed(n.children))
    return out


def js_module_candidates(importer: str, module: str) -> list[str]:
    """Workspace-relative paths a relative specifier may be (`./x` -> x.js, x.ts, x/index.js, ...)."""
    if not module.startswith("."):
        return []
    parts = importer.split("/")[:-1]
    for piece in module.split("/"):
        if piece in ("", "."):
            continue
        if piece == "..":
            if not parts:
                return []
            parts.pop()
        else:
            parts.append(piece)
    stem = "/".join(parts)
    if not stem:
        return []
    return [stem + ext for ext in _JS_EXTENSIONS if ext or "." in stem.rsplit("/", 1)[-1]]


def js_function_span(tree: Tree, line: int) -> tuple[int, int, str] | None:
    """(first, last line, name) of the innermost function around `line`, arrows included: a test's
    `it('name', () => {…})` is named by its title."""
    source = source_of(tree)
    node = tree.root_node.descendant_for_point_range((line - 1, 0), (line - 1, 0))
    # the line's first non-blank column: a descendant at column 0 may be the whole program
    while node is not None and node.type not in _JS_FUNCTIONS:
        node = node.parent
    if node is None:
        return None
    title = "<function>"
    call = node.parent.parent if node.parent is not None and node.parent.type == "arguments" else None
    if call is not None and call.type == "call_expression":
        fn = call.child_by_field_name("function")
        args = call.child_by_field_name("arguments")
        first = args.named_children[0] if args is not None and args.named_children else None
        label = _string_text(first, source) if first is not None and first.type == "string" else ""
        title = f"{node_str(fn, source) if fn is not None else 'call'}({label!r})" if label else title
    elif (name := node.child_by_field_name("name")) is not None:
        title = node_str(name, source)
    return node.start_point[0] + 1, node.end_point[0] + 1, title


def js_hooks(tree: Tree, line: int) -> list[tuple[int, int]]:
    """Spans of the `beforeEach`/`before` callbacks of every `describe` block around `line`."""
    out: list[tuple[int, int]] = []
    node = tree.root_node.descendant_for_point_range((line - 1, 0), (line - 1, 0))
    while node is not None:
        if node.type in ("statement_block", "program"):
            for stmt in node.named_children:
                expr = stmt.named_children[0] if stmt.type == "expression_statement" and stmt.named_children else None
                if expr is None or expr.type != "call_expression":
                    continue
                fn, args = expr.child_by_field_name("function"), expr.child_by_field_name("arguments")
                if fn is None or args is None or fn.type != "identifier" or node_text(fn, source_of(tree)).decode() not in _HOOKS:
                    continue
                for arg in args.named_children:
                    if arg.type in _JS_FUNCTIONS:
                        out.append((arg.start_point[0] + 1, arg.end_point[0] + 1))
        node = node.parent
    return out


def words_of(text: str) -> set[str]:
    """Lower-cased identifier words of a failure's text: `expected 'Struct'` -> {expected, struct}."""
    return {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9]{2,}", text)}
