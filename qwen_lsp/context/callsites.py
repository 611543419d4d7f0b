"""What a span of source calls, and how a Python file binds imported names: the raw material of
the callee walk (callees.py). Pure functions over text and tree-sitter trees.

A call site is a name as it is used: called (`f(x)`, `obj.m()`), passed as a value (`partial(f, 1)`,
`sorted(xs, key=k)`, `map(self.conv, xs)`), used as a decorator or a base class. Languages
without patterns here give no sites (the walk then stops at their frames)."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from functools import cache

from tree_sitter import Query, QueryCursor, Tree

from qwen_lsp.context.grammars import get_language
from qwen_lsp.context.treesitter import node_str, source_of

log = logging.getLogger(__name__)

# @call: a called name; @value: a name passed as an argument; @decorator, @base; @recv: the object
# a method is called on (its text, "self", "np", "self.type").
_JS_CALLS = [
    "(call_expression function: (identifier) @call)",
    "(call_expression function: (member_expression object: (_) @recv property: (property_identifier) @call))",
    "(new_expression constructor: (identifier) @call)",
    "(arguments (identifier) @value)",
]
CALL_PATTERNS: dict[str, list[str]] = {
    "python": [
        "(call function: (identifier) @call)",
        "(call function: (attribute object: (_) @recv attribute: (identifier) @call))",
        "(argument_list (identifier) @value)",
        "(keyword_argument value: (identifier) @value)",
        "(argument_list (attribute object: (_) @recv attribute: (identifier) @value))",
        "(keyword_argument value: (attribute object: (_) @recv attribute: (identifier) @value))",
        "(decorator (identifier) @decorator)",
        "(decorator (attribute object: (_) @recv attribute: (identifier) @decorator))",
        "(decorator (call function: (identifier) @decorator))",
        "(class_definition superclasses: (argument_list (identifier) @base))",
    ],
    "javascript": _JS_CALLS,
    "typescript": _JS_CALLS,
    "tsx": _JS_CALLS,
    "go": [
        "(call_expression function: (identifier) @call)",
        "(call_expression function: (selector_expression operand: (_) @recv field: (field_identifier) @call))",
    ],
    "rust": [
        "(call_expression function: (identifier) @call)",
        # `tax::apply(x)`, `Money::new(1)`, `crate::a::f()`: the path is the receiver
        "(call_expression function: (scoped_identifier path: (_) @recv name: (identifier) @call))",
        "(call_expression function: (field_expression value: (_) @recv field: (field_identifier) @call))",
        "(macro_invocation macro: (identifier) @call)",
        # Inside a macro's arguments (`assert_eq!(total(&xs), 3)`, where a test's calls are) the grammar
        # sees tokens only: a name followed by a parenthesised group is a call.
        '((token_tree (identifier) @call . (token_tree) @args) (#match? @args "^[(]"))',
        '((token_tree (identifier) @recv . "::" . (identifier) @call . (token_tree) @args) (#match? @args "^[(]"))',
        '((token_tree (self) @recv . "." . (identifier) @call . (token_tree) @args) (#match? @args "^[(]"))',
    ],
    "java": [
        "(method_invocation object: (_) @recv name: (identifier) @call)",
        "(method_invocation name: (identifier) @call)",
        "(object_creation_expression type: (type_identifier) @call)",
    ],
    "c": [
        "(call_expression function: (identifier) @call)",
        "(call_expression function: (field_expression argument: (_) @recv field: (field_identifier) @call))",
    ],
    "cpp": [
        "(call_expression function: (identifier) @call)",
        "(call_expression function: (field_expression argument: (_) @recv field: (field_identifier) @call))",
        "(call_expression function: (qualified_identifier name: (identifier) @call))",
    ],
    "ruby": ["(call receiver: (_) @recv method: (identifier) @call)", "(call method: (identifier) @call)"],
}
KINDS = ("call", "value", "decorator", "base")


@dataclass(frozen=True)
class Site:
    name: str
    receiver: str | None  # the object's text for a method or attribute, None for a plain name
    kind: str  # call, value, decorator, base
    line: int  # 1-based


@dataclass(frozen=True)
class Binding:
    """An imported name: `from m import n as k` binds k to (m, n); `import a.b as k` binds k to (a.b, None)."""

    module: str  # dotted, with leading dots for a relative import
    name: str | None  # None: the name is the module itself

    @property
    def qualified(self) -> str:
        """The dotted name of what is bound, should it be a module (`from . import x` -> `.x`)."""
        if self.name is None:
            return self.module
        return self.module + self.name if self.module.endswith(".") else f"{self.module}.{self.name}"


@cache
def _queries(lang: str) -> tuple[Query, ...]:
    """One query of every pattern the grammar compiles (one cursor per body, not one per pattern)."""
    ok = []
    for pattern in CALL_PATTERNS.get("typescript" if lang == "tsx" else lang, []):
        try:
            Query(get_language(lang), pattern)
            ok.append(pattern)
        except Exception:
            log.debug("%s call pattern not compiled: %s", lang, pattern, exc_info=True)
    try:
        return (Query(get_language(lang), "\n".join(ok)),) if ok else ()
    except Exception:
        log.debug("%s call patterns not compiled together", lang, exc_info=True)
        return ()


def call_sites(tree: Tree, lang: str, start_line: int, end_line: int) -> list[Site]:
    """Sites in lines start_line..end_line (1-based, inclusive), in source order, one per (name, receiver, kind)."""
    found: dict[tuple[str, str | None, str], Site] = {}
    source = source_of(tree)
    for query in _queries(lang):
        cursor = QueryCursor(query)
        cursor.set_point_range((max(0, start_line - 1), 0), (end_line, 0))
        for _, caps in cursor.matches(tree.root_node):
            recv = caps.get("recv")
            for kind in KINDS:
                for node in caps.get(kind, []):
                    line = node.start_point[0] + 1
                    if not start_line <= line <= end_line:
                        continue
                    receiver = " ".join(node_str(recv[0], source).split()) if recv else None
                    if receiver is None and node.type == "identifier" and node.parent is not None \
                            and node.parent.type == "token_tree" and (before := node.prev_sibling) is not None:
                        if before.type == "::" or (before.type == "." and before.prev_sibling is not None
                                                   and before.prev_sibling.type == "self"):
                            continue  # `a::f(…)`, `self.f(…)` in a macro: the pattern with the receiver has it
                        if before.type == ".":
                            receiver = "?"  # `x.len()` in a macro: a method of something unknown
                    if receiver is not None and len(receiver) > 80:
                        receiver = "?"  # a call chain or a literal: its type is unknown
                    key = (node_str(node, source), receiver, kind)
                    if key not in found:
                        found[key] = Site(name=key[0], receiver=receiver, kind=kind, line=line)
    return sorted(found.values(), key=lambda s: s.line)


def python_bindings(tree: Tree) -> dict[str, Binding]:
    """Names the module's top-level imports bind (later imports win, as at run time)."""
    out: dict[str, Binding] = {}
    source = source_of(tree)
    for node in tree.root_node.children:
        if node.type == "import_statement":
            for child in node.children_by_field_name("name"):
                if child.type == "aliased_import":
                    dotted, alias = child.child_by_field_name("name"), child.child_by_field_name("alias")
                    if dotted is not None and alias is not None:
                        out[node_str(alias, source)] = Binding(node_str(dotted, source), None)
                else:
                    dotted = node_str(child, source)
                    out[dotted.split(".")[0]] = Binding(dotted.split(".")[0], None)
        elif node.type == "import_from_statement":
            module_node = node.child_by_field_name("module_name")
            if module_node is None:
                continue
            module = "".join(node_str(module_node, source).split())
            for child in node.children_by_field_name("name"):
                if child.type == "aliased_import":
                    name, alias = child.child_by_field_name("name"), child.child_by_field_name("alias")
                    if name is not None and alias is not None:
                        out[node_str(alias, source)] = Binding(module, node_str(name, source))
                else:
                    out[node_str(child, source)] = Binding(module, node_str(child, source))
    return out


def module_file_candidates(importer: str, module: str) -> list[str]:
    """Workspace-relative paths `module` may be, imported from file `importer` (relative imports are
    resolved against its package; absolute ones are returned as dotted paths to match by suffix)."""
    dots = len(module) - len(module.lstrip("."))
    parts = [p for p in module.lstrip(".").split(".") if p]
    if dots:
        base = importer.split("/")[:-1]
        if dots - 1 > len(base):
            return []
        base = base[: len(base) - (dots - 1)]
        stem = "/".join([*base, *parts])
    else:
        stem = "/".join(parts)
    if not stem:
        return []
    return [f"{stem}.py", f"{stem}/__init__.py"]


_DOC_QUERY = "(block . (expression_statement (string) @doc))"


@cache
def _doc_query() -> Query | None:
    try:
        return Query(get_language("python"), _DOC_QUERY)
    except Exception:
        log.debug("docstring query not compiled", exc_info=True)
        return None


def elide_docstrings(text_lines: list[str], tree: Tree | None, lang: str | None, start_line: int, end_line: int,
                     keep: int | None = None) -> str:
    """Lines start_line..end_line of a file (`text_lines`), each multi-line docstring cut to its first
    line: the code is what the model must see, and a cut for the budget then falls later in the body.
    A docstring holding line `keep` (a failing doctest) stays whole."""
    lines = text_lines[start_line - 1 : end_line]
    query = _doc_query() if lang == "python" and tree is not None else None
    if query is None:
        return "\n".join(lines)
    cursor = QueryCursor(query)
    cursor.set_point_range((max(0, start_line - 1), 0), (end_line, 0))
    spans = []
    for node in cursor.captures(tree.root_node).get("doc", []):
        a, b = node.start_point[0] + 1, node.end_point[0] + 1
        if start_line <= a < b <= end_line and not (keep is not None and a <= keep <= b):
            spans.append((a, b))
    for a, b in sorted(spans, reverse=True):
        first = lines[a - start_line].rstrip()
        quote = '"""' if '"""' in first else "'''" if "'''" in first else '"'
        lines[a - start_line : b - start_line + 1] = [f"{first} … {quote}" if first.strip() != quote else first + f" … {quote}"]
    return "\n".join(lines)


_STRING_QUERY = "(string) @s"


def words_of_test_name(name: str) -> list[str]:
    """The words of a test's name: test_case_insensitive_choice -> [case, insensitive, choice]."""
    name = re.sub(r"^(test_?|Test)", "", name)
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return [w.lower() for w in spaced.split("_") if w]


@cache
def _string_query() -> Query | None:
    try:
        return Query(get_language("python"), _STRING_QUERY)
    except Exception:
        return None


def filter_names(tree: Tree, lang: str | None, start_line: int, end_line: int) -> list[str]:
    """Names a test's template strings apply as filters or call: `{{ x|min }}` -> min."""
    query = _string_query() if lang == "python" else None
    if query is None:
        return []
    cursor = QueryCursor(query)
    cursor.set_point_range((max(0, start_line - 1), 0), (end_line, 0))
    out: list[str] = []
    source = source_of(tree)
    for node in cursor.captures(tree.root_node).get("s", []):
        out.extend(re.findall(r"\|\s*([A-Za-z_]\w+)", node_str(node, source)))
    return list(dict.fromkeys(out))
