"""Tree-sitter plumbing shared by source context and the repo map: which
language a file is, its definitions (with signatures), imports and identifiers.

Queries are written per language, compiled one pattern at a time and cached,
so a pattern that a grammar version does not know costs that pattern only."""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from tree_sitter import Node, Parser, Query, QueryCursor, Tree

log = logging.getLogger(__name__)

EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".rs": "rust", ".go": "go", ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp", ".ipp": "cpp",
    ".rb": "ruby", ".rake": "ruby", ".lua": "lua", ".kt": "kotlin", ".kts": "kotlin",
    # Grammars without definition queries: the engine's parse check uses them, the repo map skips them.
    ".cs": "csharp", ".php": "php", ".swift": "swift", ".sh": "bash", ".bash": "bash",
    ".json": "json", ".toml": "toml", ".yaml": "yaml", ".yml": "yaml",
}

# Definitions: @name is the defined identifier, the other capture names the kind.
_FN = "function"
DEF_PATTERNS: dict[str, list[str]] = {
    "python": [
        "(function_definition name: (identifier) @name) @function",
        "(class_definition name: (identifier) @name) @class",
    ],
    "javascript": [
        "(function_declaration name: (_) @name) @function",
        "(generator_function_declaration name: (_) @name) @function",
        "(class_declaration name: (_) @name) @class",
        "(method_definition name: (_) @name) @method",
        "(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @function",
    ],
    "typescript": [
        "(function_declaration name: (_) @name) @function",
        "(generator_function_declaration name: (_) @name) @function",
        "(function_signature name: (_) @name) @function",
        "(class_declaration name: (_) @name) @class",
        "(abstract_class_declaration name: (_) @name) @class",
        "(method_definition name: (_) @name) @method",
        "(method_signature name: (_) @name) @method",
        "(abstract_method_signature name: (_) @name) @method",
        "(interface_declaration name: (_) @name) @interface",
        "(type_alias_declaration name: (_) @name) @type",
        "(enum_declaration name: (_) @name) @enum",
        "(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @function",
    ],
    "rust": [
        "(function_item name: (_) @name) @function",
        "(function_signature_item name: (_) @name) @function",
        "(struct_item name: (_) @name) @class",
        "(enum_item name: (_) @name) @enum",
        "(union_item name: (_) @name) @class",
        "(trait_item name: (_) @name) @interface",
        "(type_item name: (_) @name) @type",
        "(mod_item name: (_) @name body: (_)) @module",
        "(macro_definition name: (_) @name) @function",
        "(impl_item type: (_) @name) @impl",
    ],
    "go": [
        "(function_declaration name: (_) @name) @function",
        "(method_declaration name: (_) @name) @method",
        "(type_spec name: (_) @name) @type",
    ],
    "java": [
        "(class_declaration name: (_) @name) @class",
        "(interface_declaration name: (_) @name) @interface",
        "(enum_declaration name: (_) @name) @enum",
        "(record_declaration name: (_) @name) @class",
        "(annotation_type_declaration name: (_) @name) @interface",
        "(method_declaration name: (_) @name) @method",
        "(constructor_declaration name: (_) @name) @method",
    ],
    "c": [
        "(function_definition declarator: (function_declarator declarator: (_) @name)) @function",
        "(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (_) @name))) @function",
        "(declaration declarator: (function_declarator declarator: (identifier) @name)) @function",
        "(struct_specifier name: (_) @name body: (_)) @class",
        "(union_specifier name: (_) @name body: (_)) @class",
        "(enum_specifier name: (_) @name body: (_)) @enum",
        "(type_definition declarator: (type_identifier) @name) @type",
        "(preproc_function_def name: (_) @name) @function",
    ],
    "cpp": [
        "(function_definition declarator: (function_declarator declarator: (_) @name)) @function",
        "(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (_) @name))) @function",
        "(function_definition declarator: (reference_declarator (function_declarator declarator: (_) @name))) @function",
        "(declaration declarator: (function_declarator declarator: (_) @name)) @function",
        "(field_declaration declarator: (function_declarator declarator: (_) @name)) @method",
        "(class_specifier name: (_) @name body: (_)) @class",
        "(struct_specifier name: (_) @name body: (_)) @class",
        "(union_specifier name: (_) @name body: (_)) @class",
        "(enum_specifier name: (_) @name body: (_)) @enum",
        "(namespace_definition name: (_) @name) @module",
        "(type_definition declarator: (type_identifier) @name) @type",
        "(alias_declaration name: (_) @name) @type",
        "(preproc_function_def name: (_) @name) @function",
    ],
    "ruby": [
        "(method name: (_) @name) @method",
        "(singleton_method name: (_) @name) @method",
        "(class name: (_) @name) @class",
        "(module name: (_) @name) @module",
    ],
    "lua": [
        "(function_declaration name: (_) @name) @function",
        "(variable_declaration (assignment_statement (variable_list name: (_) @name) (expression_list value: (function_definition)))) @function",
        "(assignment_statement (variable_list name: (_) @name) (expression_list value: (function_definition))) @function",
    ],
    "kotlin": [
        "(function_declaration (simple_identifier) @name) @function",
        "(class_declaration (type_identifier) @name) @class",
        "(object_declaration (type_identifier) @name) @class",
        "(type_alias (type_identifier) @name) @type",
        # tree-sitter-kotlin >= 1.0 (the PyPI wheel) names the nodes differently
        "(function_declaration name: (identifier) @name) @function",
        "(class_declaration name: (identifier) @name) @class",
        "(object_declaration name: (identifier) @name) @class",
    ],
}

IMPORT_TYPES: dict[str, list[str]] = {
    "python": ["import_statement", "import_from_statement", "future_import_statement"],
    "javascript": ["import_statement"],
    "typescript": ["import_statement", "import_alias"],
    "tsx": ["import_statement", "import_alias"],
    "rust": ["use_declaration", "extern_crate_declaration"],
    "go": ["package_clause", "import_declaration"],
    "java": ["package_declaration", "import_declaration"],
    "c": ["preproc_include"],
    "cpp": ["preproc_include", "using_declaration"],
    "kotlin": ["package_header", "import_header", "import"],
}

# References worth ranking by: calls, types, base classes, imported names. Plain
# identifiers (locals, parameters) would tie every file to every "value" or "data".
_JS_REFS = [
    "(call_expression function: (identifier) @ref)",
    "(call_expression function: (member_expression property: (property_identifier) @ref))",
    "(new_expression constructor: (identifier) @ref)",
    "(import_specifier name: (identifier) @ref)",
    "(class_heritage (identifier) @ref)",
]
REF_PATTERNS: dict[str, list[str]] = {
    "python": [
        "(call function: (identifier) @ref)",
        "(call function: (attribute attribute: (identifier) @ref))",
        "(import_from_statement name: (dotted_name (identifier) @ref .))",
        "(import_from_statement name: (aliased_import name: (dotted_name (identifier) @ref .)))",
        "(class_definition superclasses: (argument_list (identifier) @ref))",
        "(class_definition superclasses: (argument_list (attribute attribute: (identifier) @ref)))",
        "(type (identifier) @ref)",
        "(decorator (identifier) @ref)",
        "(except_clause (identifier) @ref)",
    ],
    "javascript": _JS_REFS,
    "typescript": [*_JS_REFS, "(type_identifier) @ref"],
    "tsx": [*_JS_REFS, "(type_identifier) @ref"],
    "rust": [
        "(call_expression function: (identifier) @ref)",
        "(call_expression function: (scoped_identifier name: (identifier) @ref))",
        "(call_expression function: (field_expression field: (field_identifier) @ref))",
        "(macro_invocation macro: (identifier) @ref)",
        "(type_identifier) @ref",
    ],
    "go": [
        "(call_expression function: (identifier) @ref)",
        "(call_expression function: (selector_expression field: (field_identifier) @ref))",
        "(type_identifier) @ref",
    ],
    "java": [
        "(method_invocation name: (identifier) @ref)",
        "(type_identifier) @ref",
    ],
    "c": [
        "(call_expression function: (identifier) @ref)",
        "(call_expression function: (field_expression field: (field_identifier) @ref))",
        "(type_identifier) @ref",
    ],
    "cpp": [
        "(call_expression function: (identifier) @ref)",
        "(call_expression function: (field_expression field: (field_identifier) @ref))",
        "(call_expression function: (qualified_identifier name: (identifier) @ref))",
        "(type_identifier) @ref",
    ],
    "ruby": [
        "(call method: (identifier) @ref)",
        "(constant) @ref",
    ],
    "lua": [
        "(function_call name: (identifier) @ref)",
        "(function_call name: (dot_index_expression field: (identifier) @ref))",
        "(function_call name: (method_index_expression method: (identifier) @ref))",
    ],
    "kotlin": [
        "(call_expression (simple_identifier) @ref)",
        "(navigation_suffix (simple_identifier) @ref)",
        "(user_type (type_identifier) @ref)",
    ],
}

IDENT_TYPES = ["identifier", "type_identifier", "field_identifier", "property_identifier", "constant", "simple_identifier"]

# A definition's signature ends where its body starts.
_BODY_FIELDS = ("body", "value")
_BODY_TYPES = {
    "block", "class_body", "declaration_list", "field_declaration_list", "compound_statement", "statement_block",
    "enum_body", "interface_body", "enumerator_list", "object_type", "function_body", "body_statement",
    "constructor_body", "enum_variant_list", "annotation_type_body", "record_body",
}
_BODY_OR_FUNCTION = _BODY_TYPES | {"function_definition", "arrow_function", "function_expression"}
CONTAINER_KINDS = {"class", "interface", "module", "impl", "enum"}


@dataclass(frozen=True)
class Definition:
    name: str
    kind: str  # function, method, class, interface, type, enum, module, impl
    line: int  # 1-based, first line of the definition (decorators excluded)
    end_line: int  # 1-based, inclusive
    signature: str  # the header up to the body, whitespace-collapsed
    depth: int  # nesting among definitions: 0 top level, 1 method of a class, ...


def language_for(path: str) -> str | None:
    """The language of the file at `path` by its suffix (PurePosixPath's, without building one: an
    index build asks for every file of the workspace)."""
    name = str(path).rstrip("/").rpartition("/")[2]
    dot = name.rfind(".")
    return EXTENSIONS.get(name[dot:].lower()) if 0 < dot < len(name) - 1 else None


@cache
def _language(lang: str) -> Any:
    from qwen_lsp.context.grammars import get_language

    return get_language(lang)


_PARSERS = threading.local()  # a Parser is not thread-safe: the index thread and the engine thread each get theirs


def parser_for(lang: str) -> Parser | None:
    by_lang: dict[str, Parser | None] = _PARSERS.__dict__.setdefault("by_lang", {})
    if lang not in by_lang:
        try:
            from qwen_lsp.context.grammars import get_parser

            by_lang[lang] = get_parser(lang)
        except Exception:  # grammar missing or not loadable: callers fall back to a line window
            log.debug("no tree-sitter parser for %s", lang, exc_info=True)
            by_lang[lang] = None
    return by_lang[lang]


def has_definitions(lang: str) -> bool:
    """Whether definitions (and so a repo-map entry or an outline) can be read from `lang`."""
    return bool(_patterns_for(lang))


def _patterns_for(lang: str) -> list[str]:
    if lang == "tsx":
        return DEF_PATTERNS["typescript"]
    return DEF_PATTERNS.get(lang, [])


def _compiling(lang: str, patterns: list[str], what: str) -> list[str]:
    """The patterns of `patterns` this grammar version compiles (a node type it does not have costs that one only)."""
    language, ok = _language(lang), []
    for pattern in patterns:
        try:
            Query(language, pattern)
            ok.append(pattern)
        except Exception:
            log.debug("%s %s pattern not compiled: %s", lang, what, pattern, exc_info=True)
    return ok


@cache
def _def_query(lang: str) -> Query | None:
    """The definition patterns as one query: one pass over a tree instead of one per pattern."""
    ok = _compiling(lang, _patterns_for(lang), "definition")
    try:
        return Query(_language(lang), "\n".join(ok)) if ok else None
    except Exception:
        log.debug("%s definition query not compiled", lang, exc_info=True)
        return None


@cache
def _tags_query(lang: str) -> tuple[Query, int] | None:
    """The definition and reference patterns as one query, and how many of its patterns (the first
    ones) are definitions: a file's tags in one pass over its tree. None: no reference pattern
    compiles (references then fall back to every identifier)."""
    defs = _compiling(lang, _patterns_for(lang), "definition")
    refs = _compiling(lang, REF_PATTERNS.get(lang, []), "reference")
    try:
        query = Query(_language(lang), "\n".join(defs + refs)) if refs else None
    except Exception:
        log.debug("%s tags query not compiled", lang, exc_info=True)
        return None
    return (query, len(defs)) if query is not None and query.pattern_count == len(defs) + len(refs) else None


@cache
def _kinds_query(lang: str, kinds: tuple[str, ...]) -> Query | None:
    try:
        language = _language(lang)
        present = [k for k in kinds if language.id_for_node_kind(k, True)]
        return Query(language, "[" + " ".join(f"({k})" for k in present) + "] @x") if present else None
    except Exception:
        log.debug("%s kinds query not compiled", lang, exc_info=True)
        return None


def parse(text: str | bytes, lang: str) -> Tree | None:
    """The syntax tree of `text`. One request asks for the same file's tree several times (source
    context, referenced names, imports, the map's tags), so recent trees are kept: trees are
    read-only to every caller here."""
    data = text.encode("utf-8", "replace") if isinstance(text, str) else text
    return _parse_bytes(data, lang)


# A parse that takes longer is abandoned (the file counts as one without a grammar): tree-sitter's
# error recovery is superlinear on some broken input, and the language server's index must not
# spend minutes on one file.
PARSE_BUDGET_SECONDS = 5.0
_CHUNK = 65_536
# One QueryCursor call builds every match in its range as Python objects with the GIL held: over
# a 512 KB file that is ~0.4 s in which the language server's event loop cannot answer anything.
# Run over slices of this many bytes, each call holds it for milliseconds.
QUERY_SLICE_BYTES = 32_768


@lru_cache(maxsize=32)
def _parse_bytes(data: bytes, lang: str) -> Tree | None:
    tree = _budgeted_parse(data, lang, _edited_base(data, lang))
    if tree is not None:
        _remember_source(tree, data, lang)
    return tree


def parse_uncached(data: bytes, lang: str) -> Tree | None:
    """`parse` for a file read once (a tag worker's): nothing looked up or kept. Readers of the
    tree's texts take `data` along (see node_text)."""
    return _budgeted_parse(data, lang, None)


def _budgeted_parse(data: bytes, lang: str, base: Tree | None) -> Tree | None:
    parser = parser_for(lang)
    if parser is None:
        return None
    started = time.perf_counter()
    try:
        # Only the callable-source form of parse() reports progress, so only it can be stopped.
        return parser.parse(
            lambda offset, _point: data[offset : offset + _CHUNK],
            *([base] if base is not None else []),  # the binding takes no None for "no old tree"
            progress_callback=lambda *_: time.perf_counter() - started > PARSE_BUDGET_SECONDS,
        )
    except ValueError:  # stopped by the progress callback
        parser.reset()  # else the next parse would resume this one
        log.debug("%s parse of %d bytes stopped after %.0f s", lang, len(data), PARSE_BUDGET_SECONDS)
        return None
    except Exception:
        log.debug("%s parse failed", lang, exc_info=True)
        return None


# The source of each tree `_parse_bytes` made. A tree parsed from a callable (the only form that
# can be stopped) answers Node.text by calling it again for a 64 KB chunk: ~50 us a node, 40 ms
# for the references of a 2,700-line file. A slice of the source is the same bytes at once. An
# entry holds its tree, so the id it is found by is that tree's for as long as the entry lives.
_SOURCES: dict[int, tuple[Tree, bytes, str]] = {}
_SOURCES_LOCK = threading.Lock()
MAX_SOURCES = 32  # as many as _parse_bytes keeps: a tree held longer reads its texts through Node.text


def _remember_source(tree: Tree, data: bytes, lang: str) -> None:
    with _SOURCES_LOCK:
        _SOURCES.pop(id(tree), None)
        while len(_SOURCES) >= MAX_SOURCES:
            _SOURCES.pop(next(iter(_SOURCES)))
        _SOURCES[id(tree)] = (tree, data, lang)


# Incremental parsing: a buffer edited in the editor is parsed again on every fix, and most of it is
# what an earlier parse saw. Given the earlier tree, edited to say which bytes changed, tree-sitter
# reuses every subtree outside the change (a 2,700-line file: ~2 ms instead of ~17). The earlier tree
# is found among the recent ones by content, not by file name: any tree whose source and `data`
# differ by one edit that leaves most bytes alone gives the tree a fresh parse would.
BASE_CANDIDATES = 8  # the most recent trees of the language looked at
_BLOCK = 4096


def _edited_base(data: bytes, lang: str) -> Tree | None:
    """A copy of the recent `lang` tree whose source shares the most of `data` (at least half),
    edited from that source to `data`; None: parse from scratch."""
    with _SOURCES_LOCK:
        recent = [(tree, src) for tree, src, tl in reversed(_SOURCES.values()) if tl == lang][:BASE_CANDIDATES]
    quarter = len(data) // 4
    best: tuple[int, Tree, bytes, tuple[int, int, int]] | None = None
    for tree, src in recent:
        # Half kept needs a quarter unchanged at one end: two compares turn down an unrelated file
        # (every file of a cold index build is one) before the bisections.
        if src[:quarter] != data[:quarter] and src[len(src) - quarter:] != data[len(data) - quarter:]:
            continue
        edit = one_edit(src, data)
        kept = edit[0] + (len(src) - edit[1])
        if kept * 2 >= len(data) and (best is None or kept > best[0]):
            best = (kept, tree, src, edit)
    if best is None:
        return None
    _kept, tree, src, (start, old_end, new_end) = best
    base = tree.copy()  # the cached tree stays as it is: other readers hold it
    base.edit(start_byte=start, old_end_byte=old_end, new_end_byte=new_end, start_point=_point(src, start),
              old_end_point=_point(src, old_end), new_end_point=_point(data, new_end))
    return base


def one_edit(old: bytes, new: bytes) -> tuple[int, int, int]:
    """(start, old_end, new_end) of the one replacement that turns `old` into `new`: the bytes before
    `start` and from `old_end` on (in `new`, from `new_end` on) are the same in both, as many as can be."""
    start = _common_prefix(old, new, min(len(old), len(new)))
    suffix = _common_suffix(old, new, min(len(old), len(new)) - start)
    return start, len(old) - suffix, len(new) - suffix


def _common_prefix(a: bytes, b: bytes, limit: int) -> int:
    k = 0  # a[:k] == b[:k]; compared a block at a time, then bisected inside the first block that differs
    while k + _BLOCK <= limit and a[k : k + _BLOCK] == b[k : k + _BLOCK]:
        k += _BLOCK
    hi = min(k + _BLOCK, limit)
    while k < hi:
        mid = (k + hi + 1) // 2
        if a[k:mid] == b[k:mid]:
            k = mid
        else:
            hi = mid - 1
    return k


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    la, lb, k = len(a), len(b), 0  # a[la-k:] == b[lb-k:]
    while k + _BLOCK <= limit and a[la - k - _BLOCK : la - k] == b[lb - k - _BLOCK : lb - k]:
        k += _BLOCK
    hi = min(k + _BLOCK, limit)
    while k < hi:
        mid = (k + hi + 1) // 2
        if a[la - mid : la - k] == b[lb - mid : lb - k]:
            k = mid
        else:
            hi = mid - 1
    return k


def _point(data: bytes, offset: int) -> tuple[int, int]:
    """(row, byte column) of `offset` in `data`, as tree-sitter counts them."""
    return data.count(b"\n", 0, offset), offset - (data.rfind(b"\n", 0, offset) + 1)


def source_of(tree: Tree) -> bytes | None:
    """The bytes `tree` was parsed from, if `parse` made it recently."""
    entry = _SOURCES.get(id(tree))
    return entry[1] if entry is not None and entry[0] is tree else None


def node_text(node: Node, source: bytes | None) -> bytes:
    """The node's bytes: a slice of its tree's `source` when known (see _SOURCES), else Node.text."""
    return source[node.start_byte : node.end_byte] if source is not None else (node.text or b"")


def node_str(node: Node, source: bytes | None) -> str:
    """`node_text` decoded (what the walk compares with names and strings)."""
    return node_text(node, source).decode("utf-8", "replace")


def _slices(node: Node) -> list[tuple[int, int]]:
    start, end = node.start_byte, node.end_byte
    return [(lo, min(end, lo + QUERY_SLICE_BYTES)) for lo in range(start, max(end, start + 1), QUERY_SLICE_BYTES)]


def _matches(query: Query, node: Node, whole: bool = False) -> list[tuple[int, dict[str, list[Node]]]]:
    """QueryCursor.matches over `node`, slice by slice (see QUERY_SLICE_BYTES), or in one call when
    `whole`. A match is kept in the slice its first captured node starts in, so one that spans
    slices is not repeated (a slice also returns a match that starts in it and captures only nodes
    past its end)."""
    cursor = QueryCursor(query)
    slices = _slices(node)
    if whole or len(slices) == 1:
        return cursor.matches(node)
    out = []
    for n, (lo, hi) in enumerate(slices):
        cursor.set_byte_range(lo, hi)
        for pattern, caps in cursor.matches(node):
            first = min((c.start_byte for nodes in caps.values() for c in nodes), default=lo)
            if (first >= lo or n == 0) and (first < hi or n == len(slices) - 1):
                out.append((pattern, caps))
    return out


def _captures(query: Query, node: Node, name: str) -> list[Node]:
    """QueryCursor.captures(node)[name], slice by slice like `_matches`."""
    cursor = QueryCursor(query)
    slices = _slices(node)
    if len(slices) == 1:
        return cursor.captures(node).get(name, [])
    out: list[Node] = []
    for n, (lo, hi) in enumerate(slices):
        cursor.set_byte_range(lo, hi)
        out += [c for c in cursor.captures(node).get(name, []) if c.start_byte >= lo or n == 0]
    return out


def _name_text(node: Node, source: bytes | None = None) -> str:
    return _clean_name(node_text(node, source))


def _clean_name(raw_bytes: bytes) -> str:
    raw = raw_bytes.decode("utf-8", "replace")
    # Qualified names (Shape::area, M.foo, obj:method) are tagged by their last part.
    for sep in ("::", ".", ":"):
        raw = raw.rsplit(sep, 1)[-1]
    return raw.strip().lstrip("~*&")


def _signature(node: Node, source: bytes) -> str:
    body = None
    for f in _BODY_FIELDS:
        cand = node.child_by_field_name(f)
        if cand is not None and cand.type in _BODY_OR_FUNCTION:
            body = cand
            break
    if body is None:
        body = next((c for c in node.children if c.type in _BODY_TYPES), None)
    if node.type == "variable_declarator" and body is not None and body.type in {"arrow_function", "function_expression"}:
        inner = body.child_by_field_name("body")
        end = inner.start_byte if inner is not None else body.end_byte
    else:
        end = body.start_byte if body is not None else node.end_byte
        # A comment between the header and the body ("def f():  # why") is not signature.
        name = node.child_by_field_name("name")
        name_end = name.end_byte if name is not None else node.start_byte
        for child in node.children:
            if child.type == "comment" and name_end <= child.start_byte < end:
                end = child.start_byte
                break
    # Where the definition's statement starts (const/export/decorators are part of how it reads).
    start = node.start_byte
    parent = node.parent
    if node.type == "variable_declarator" and parent is not None:
        start = parent.start_byte
        if parent.parent is not None and parent.parent.type == "export_statement":
            start = parent.parent.start_byte
    elif parent is not None and parent.type == "export_statement":
        start = parent.start_byte
    elif node.type == "type_spec" and parent is not None and parent.type == "type_declaration" and parent.named_child_count == 1:
        start = parent.start_byte
    text = source[start:end].decode("utf-8", "replace")
    text = " ".join(text.split())
    if body is None:
        text = text.split("{", 1)[0].strip() if node.type not in {"declaration", "field_declaration"} else text
    text = text.rstrip("{ ").rstrip()
    return text[:240] + (" ..." if len(text) > 240 else "")


def definitions(text: str, lang: str, tree: Tree | None = None) -> list[Definition]:
    """Every definition in the file, in source order, with nesting depth. Kept for recent texts: one
    request asks for the same file's several times (its tags, the files section, the callee walk)."""
    return list(_definitions_of(text, lang))


@lru_cache(maxsize=16)
def _definitions_of(text: str, lang: str) -> tuple[Definition, ...]:
    return tuple(_definitions(text, lang))


def _definitions(text: str, lang: str, tree: Tree | None = None) -> list[Definition]:
    source = text.encode("utf-8", "replace")
    tree = tree or parse(source, lang)
    query = _def_query(lang)
    if tree is None or query is None:
        return []
    return [Definition(*d) for d in _raw_definitions(_matches(query, tree.root_node), source)]


def _raw_definitions(matches: list[tuple[int, dict[str, list[Node]]]], source: bytes) -> list[tuple]:
    """Definition's fields, in source order, of the definition patterns' `matches`. Two patterns
    matching one node: the earlier pattern says its kind."""
    found: dict[tuple[int, int], tuple[Node, Node, str]] = {}
    for _, caps in sorted(matches, key=lambda m: m[0]):  # stable: source order kept
        name_nodes = caps.get("name")
        kind, nodes = next(((k, v) for k, v in caps.items() if k != "name"), (None, None))
        if not name_nodes or not nodes or kind is None:
            continue
        node = nodes[0]
        key = (node.start_byte, node.end_byte)
        if key not in found:
            found[key] = (node, name_nodes[0], kind)
    items = sorted(found.values(), key=lambda t: (t[0].start_byte, -t[0].end_byte))
    out: list[tuple] = []
    stack: list[tuple[int, str]] = []  # (end byte, kind) of the enclosing definitions
    for node, name_node, kind in items:
        while stack and stack[-1][0] <= node.start_byte:
            stack.pop()
        if kind == "function" and stack and stack[-1][1] in CONTAINER_KINDS - {"module"}:
            kind = "method"
        out.append((sys.intern(_name_text(name_node, source)), sys.intern(kind), node.start_point[0] + 1, node.end_point[0] + 1,
                    _signature(node, source), len(stack)))
        stack.append((node.end_byte, kind))
    return out


def tags(tree: Tree, source: bytes, lang: str, *, whole: bool = False) -> tuple[list[tuple], dict[str, int]]:
    """A file's definitions (Definition's fields) and how often it references each name: what
    `definitions` and `references` give (the counts in match order, not always the source order
    `references` lists them in), from one pass of one query over `tree` (parsed from `source`).
    `whole`: the query in one call rather than in slices that hold the GIL for milliseconds each
    (a tag worker's GIL holds up no one; slicing cost it ~10% of a big build's queries)."""
    entry = _tags_query(lang)
    if entry is None:
        query = _def_query(lang)
        defs = _raw_definitions(_matches(query, tree.root_node), source) if query else []
        return defs, dict(Counter(references(tree, lang)))
    query, n_defs = entry
    def_matches: list[tuple[int, dict[str, list[Node]]]] = []
    refs_found: list[Node] = []
    for match in _matches(query, tree.root_node, whole):
        if match[0] < n_defs:
            def_matches.append(match)
        else:
            refs_found += match[1].get("ref", ())
    # Each distinct text is cleaned once: a file references the same few names over and over.
    counts = Counter([source[n.start_byte : n.end_byte] for n in refs_found])
    refs: dict[str, int] = {}
    for raw, n in counts.items():
        name = sys.intern(_clean_name(raw))  # one object per name over a whole index build (marshal keeps it)
        refs[name] = refs.get(name, 0) + n
    return _raw_definitions(def_matches, source), refs


def imports(text: str, lang: str, tree: Tree | None = None) -> list[str]:
    """The import/include/use statements of the file, as written (kept for recent texts, as `definitions`)."""
    return list(_imports_of(text, lang))


@lru_cache(maxsize=16)
def _imports_of(text: str, lang: str) -> tuple[str, ...]:
    return tuple(_imports(text, lang))


def _imports(text: str, lang: str, tree: Tree | None = None) -> list[str]:
    if lang == "tsx":
        kinds = tuple(IMPORT_TYPES["tsx"])
    else:
        kinds = tuple(IMPORT_TYPES.get(lang, []))
    source = text.encode("utf-8", "replace")
    tree = tree or parse(source, lang)
    if tree is None:
        return []
    out = []
    query = _kinds_query(lang, kinds) if kinds else None
    if query is not None:
        for node in _captures(query, tree.root_node, "x"):
            out.append((node.start_byte, node_str(node, source).strip()))
    # Ruby/Lua/CommonJS load modules through ordinary calls.
    if lang in {"ruby", "lua", "javascript", "typescript", "tsx"}:
        for i, ln in enumerate(text.splitlines()):
            s = ln.strip()
            if ("require" in s and ("require(" in s or s.startswith(("require ", "require_relative ")))) and len(s) < 200:
                out.append((i * 10**9, s))  # no byte offset needed: sorted after the statements
    seen: set[str] = set()
    result = []
    for _, s in sorted(out, key=lambda t: t[0]):
        if s not in seen:
            seen.add(s)
            result.append(s)
    return result


def identifiers(tree: Tree, lang: str, start_line: int | None = None, end_line: int | None = None) -> list[tuple[str, int]]:
    """(name, 1-based line) of every identifier, optionally only within [start_line, end_line]."""
    query = _kinds_query(lang, tuple(IDENT_TYPES))
    if query is None:
        return []
    cursor = QueryCursor(query)
    if start_line is not None and end_line is not None:
        cursor.set_point_range((max(0, start_line - 1), 0), (end_line, 0))
    nodes = sorted(cursor.captures(tree.root_node).get("x", []), key=lambda n: n.start_byte)
    source = source_of(tree)
    return [(node_str(n, source), n.start_point[0] + 1) for n in nodes]


@cache
def _ref_query(lang: str) -> Query | None:
    ok = _compiling(lang, REF_PATTERNS.get(lang, []), "reference")
    try:
        return Query(_language(lang), "\n".join(ok)) if ok else None
    except Exception:
        log.debug("%s reference query not compiled", lang, exc_info=True)
        return None


def references(tree: Tree, lang: str) -> list[str]:
    """Names this file uses in a way that points at a definition (calls, types, imports).

    Languages without reference patterns fall back to every identifier."""
    query = _ref_query(lang)
    if query is None:
        return [name for name, _ in identifiers(tree, lang)]
    nodes = _captures(query, tree.root_node, "ref")
    source = source_of(tree)
    return [_name_text(n, source) for n in nodes]


COMMENT_KINDS = ("comment", "line_comment", "block_comment")


def comment_at(tree: Tree, byte: int) -> Node | None:
    """The comment node holding `byte`, or None (a string, a docstring, code). Looked up from the
    position, not by querying every comment: a file with hundreds of comments costs the same."""
    node: Node | None = tree.root_node.descendant_for_byte_range(byte, byte + 1)
    for _ in range(4):  # a comment's own children (Rust's doc markers) sit a level or two below it
        if node is None or node.type in COMMENT_KINDS:
            return node
        node = node.parent
    return None
