"""Callees of a failure: the definitions that the failing test and each user frame call, followed
a few levels down and ranked, so that a bug one or more calls below the traceback reaches the prompt.

Starts are the whole functions around the frames (the test function included). Calls resolve to
definitions through the file's own definitions, its imports (Python), the enclosing class for
`self.m()`, and the tag index for the rest; a name defined in many places counts for little.
Functions passed as values (`partial(f, …)`), decorators and a class's constructor count as
calls. Words of the test's name (`test_case_insensitive_choice` -> `Choice`) add weak seeds.

Reading files is the only I/O (through `read`); parsing is shared within one walk."""

from __future__ import annotations

import heapq
import logging
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property

from tree_sitter import Tree

from qwen_lsp.context.callsites import (
    Binding, Site, call_sites, elide_docstrings, filter_names, module_file_candidates, python_bindings, words_of_test_name,
)
from qwen_lsp.context.dispatch import (
    JS_LANGS, Dispatch, dispatches, js_bindings, words_of, js_function_span, js_hooks, js_module_candidates, table_members,
)
from qwen_lsp.context.failwords import message_phrases, name_stems, stems_of_test_name
from qwen_lsp.context.ranking import GENERIC_NAMES
from qwen_lsp.context.repomap import FileTags, TagIndex
from qwen_lsp.context.source import enclosing
from qwen_lsp.context.go_packages import go_bindings, package_files
from qwen_lsp.context.rust_paths import PATH_WORDS, is_type_segment, module_files, rust_bindings
from qwen_lsp.context.treesitter import CONTAINER_KINDS, Definition, definitions, language_for, parse
from qwen_lsp.llm.tokens import count_tokens, truncate_to_tokens

log = logging.getLogger(__name__)

ReadFile = Callable[[str], str | None]

MAX_DEPTH = 8  # calls followed below a start, at most: the rank decides (MIN_EXPAND)
ALWAYS_DEPTH = 3  # calls of definitions this close to a start are followed whatever their rank (a wide fan-out)
_DISPATCHED = re.compile(r" \((?:dunder|family|table|string): [^()]*\)$")  # how a dispatch target's `via` ends
MIN_EXPAND = 0.1  # deeper, only a definition ranked at least this has its calls followed (five levels of single calls)
MAX_CACHED_FILES = 256  # parses a ParseCache keeps (a walk reads a few dozen files)
MAX_VISITS = 160  # definitions expanded per walk, best-ranked first: bounds the work on a huge call graph
MAX_AMBIGUOUS = 6  # a method name defined in more places than this is not followed through the index
MAX_CLASS_CHECKS = 60  # ... except into reached classes, checked among at most this many definitions
DECAY = 0.6  # per level
KIND_FACTOR = {"call": 1.0, "value": 0.8, "decorator": 0.5, "base": 0.4,
               # dispatch.py's: what an operator, a getattr prefix, a table or a string may run
               "dunder": 0.7, "family": 0.8, "table": 0.8, "string": 0.35}
MAX_DUNDER_OWNERS = 12  # an operator is looked up in the enclosing class and the first classes reached (best first)
MAX_PENDING = 200  # unresolved `x.m()` calls kept for classes reached later
MAX_DISPATCH_TARGETS = 12  # more candidates than this for one dispatched call: only the best-worded ones
HINT_SCORE = 0.35  # a definition named by the test, before sharing among the matches
NAME_BOOST = 1.6  # a callee whose name shares a word with the failing test's name (test_simple_select: sync_do_select)
CLASS_BOOST = 1.25  # a method of a class whose name does (test_progressbar_update: ProgressBar.pct)
MAX_BOOSTED = 0.95  # a boosted callee still ranks below the starts
MAX_MESSAGE = 2_000  # characters of the failure's message read for words
_SELF_ATTRIBUTE = re.compile(r"\bself\.([A-Za-z_]\w*)\b(?!\s*\()")  # `self.pct` read, not called
_PROPERTY = re.compile(r"\s*@(?:\w+\.)*(?:property|cached_property)\b")
TEST_HELPER = 0.5  # a definition in a test file (a helper, a fixture class) ranks this much lower than library code
LATE_OPERATOR = 0.5  # an operator of a start on a class reached after it: a guess at what the object is
SELF_RECEIVERS = ("self", "cls", "this")  # the object or class a method runs on
CONSTRUCTORS = ("__init__", "__post_init__", "__new__", "__call__", "constructor")  # constructor: JS/TS `new C()`
_COMMON_PARTS = {"visit", "eval", "get", "set", "check", "handle", "parse", "render", "item", "iter", "init", "str",
                 "repr", "call", "new", "exit", "enter", "self", "node"}
_STOP_WORDS = {
    "test", "tests", "should", "when", "with", "and", "the", "for", "not", "is", "an", "of", "in", "on", "to", "from",
    "by", "it", "returns", "raises", "error", "errors", "works", "basic", "simple", "default", "valid", "invalid",
    "none", "empty", "true", "false", "ok", "case", "cases", "bad", "good", "correct", "wrong", "no", "yes",
}


@dataclass
class Callee:
    path: str
    defn: Definition
    start: int  # first line shown: decorators included
    score: float
    depth: int  # 0: a start (a frame's function)
    via: str  # what reaches it: "tests/test_x.py test_foo", "named by the test"


class _Parsed:
    """One file of the walk: its text and definitions now, its tree and import bindings when first needed."""

    def __init__(self, path: str, text: str, lang: str | None, defs: list[Definition] | None) -> None:
        self.path, self.text, self.lang = path, text, lang
        self._defs = defs
        self._members: dict[tuple[int, int, int], dict[str, list[Definition]]] = {}
        self._dispatches: dict[tuple[int, int, bool], list[Dispatch]] = {}
        self._sites: dict[tuple[int, int], list[Site]] = {}
        self._top: dict[str, list[Definition]] | None = None

    def call_sites(self, start: int, end: int) -> list[Site]:
        """callsites.call_sites of lines start..end, kept with the parse (a warm walk expands the same bodies)."""
        key = (start, end)
        found = self._sites.get(key)
        if found is None:
            found = self._sites[key] = (call_sites(self.tree, self.lang, start, end)
                                        if self.tree is not None and self.lang is not None else [])
        return found

    def top(self, name: str) -> list[Definition]:
        """The file's top-level definitions named `name` (a table built once per parse)."""
        if self._top is None:
            table: dict[str, list[Definition]] = {}
            for d in self.defs:
                if d.depth == 0:
                    table.setdefault(d.name, []).append(d)
            self._top = table
        return self._top.get(name, [])

    def dispatches(self, start: int, end: int, strings: bool) -> list[Dispatch]:
        """dispatch.dispatches of lines start..end, kept with the parse (a warm walk asks again)."""
        key = (start, end, strings)
        found = self._dispatches.get(key)
        if found is None and self.tree is not None and self.lang is not None:
            found = self._dispatches[key] = dispatches(self.tree, self.lang, start, end, strings=strings)
        return found or []

    @cached_property
    def tree(self) -> Tree | None:
        return parse(self.text, self.lang) if self.lang else None

    @property
    def defs(self) -> list[Definition]:
        if self._defs is None:
            self._defs = definitions(self.text, self.lang, self.tree) if self.lang and self.tree is not None else []
        return self._defs

    @cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    @cached_property
    def bindings(self) -> dict[str, Binding]:
        if self.tree is None:
            return {}
        if self.lang == "python":
            return python_bindings(self.tree)
        if self.lang == "rust":
            return rust_bindings(self.tree)
        if self.lang == "go":
            return go_bindings(self.tree)
        return js_bindings(self.tree) if self.lang in JS_LANGS else {}

    def text_of(self, first: int, last: int) -> str:
        return "\n".join(self.lines[first - 1 : last])

    def classes_of(self, d: Definition) -> Definition | None:
        """The class immediately around `d`, if any."""
        return _class_around(self.defs, d)

    def members(self, cls: Definition, name: str) -> list[Definition]:
        return self.member_map(cls).get(name, [])

    def member_map(self, cls: Definition) -> dict[str, list[Definition]]:
        """The class's own members by name (computed once per class: dispatch asks for many names)."""
        key = (cls.line, cls.end_line, cls.depth)
        table = self._members.get(key)
        if table is None:
            table = {}
            for d in self.defs:
                if cls.line < d.line <= cls.end_line and d.depth == cls.depth + 1:
                    table.setdefault(d.name, []).append(d)
            self._members[key] = table
        return table


def _classes_around(defs: list[Definition]) -> dict[int, str]:
    """Each definition's line -> the name of the class immediately around it (one pass, nesting by a stack)."""
    out: dict[int, str] = {}
    stack: list[Definition] = []
    for d in sorted(defs, key=lambda x: (x.line, -x.end_line)):
        while stack and stack[-1].end_line < d.line:
            stack.pop()
        parent = next((c for c in reversed(stack) if c.depth == d.depth - 1), None)
        if parent is not None and parent.kind in CONTAINER_KINDS and parent.line < d.line:
            out[d.line] = parent.name
        stack.append(d)
    return out


def _class_around(defs: list[Definition], d: Definition) -> Definition | None:
    """The class immediately around `d` among a file's `defs`, if any."""
    outer = [c for c in defs if c.kind in CONTAINER_KINDS and c.line < d.line <= c.end_line and c.depth == d.depth - 1]
    return outer[-1] if outer else None


class ParseCache:
    """Parsed files and the module table across walks, for a long-lived process (the language server,
    one per workspace): a file's parse serves while its text and its tags are the ones it was parsed
    from, the module table while the index has the same files. Parses are read-only to the walks."""

    def __init__(self, max_files: int = MAX_CACHED_FILES) -> None:
        self._files: dict[str, tuple[str, FileTags | None, _Parsed]] = {}
        self._tables: dict[FilesTable, tuple[tuple[str, ...], dict[str, list[str]]]] = {}  # by what builds them
        self._around: dict[str, tuple[FileTags, dict[int, str]]] = {}
        self._max = max_files
        self._lock = threading.Lock()  # a prefetch and a fix may walk at once, on two threads

    def parsed(self, path: str, text: str, tags: FileTags | None) -> _Parsed:
        with self._lock:
            hit = self._files.get(path)
            if hit is not None and hit[1] is tags and hit[0] == text:
                return hit[2]
            parsed = _Parsed(path, text, language_for(path), list(tags.defs) if tags is not None else None)
            self._files.pop(path, None)
            while len(self._files) >= self._max:
                self._files.pop(next(iter(self._files)))
            self._files[path] = (text, tags, parsed)
            return parsed

    def classes_around(self, path: str, tags: FileTags) -> dict[int, str]:
        """`_classes_around(tags.defs)`, kept while the file's tags are the same object."""
        hit = self._around.get(path)
        if hit is None or hit[0] is not tags:
            with self._lock:
                if len(self._around) >= self._max * 8:
                    self._around.clear()
                hit = self._around[path] = (tags, _classes_around(tags.defs))
        return hit[1]

    def table(self, index: TagIndex, build: FilesTable) -> dict[str, list[str]]:
        """`build(index's file names)` (the stem, folder or module table), kept while the index has
        the same files (replaced whole when they change: a walk reading the old one keeps its own)."""
        files = tuple(index.files)
        kept = self._tables.get(build)
        if kept is None or kept[0] != files:
            kept = self._tables[build] = (files, build(files))
        return kept[1]


FilesTable = Callable[[Iterable[str]], dict[str, list[str]]]  # a table over the index's file names


def _stem_table(files: Iterable[str]) -> dict[str, list[str]]:
    """A file's name without its extension -> the workspace's files of that name (plug-ins by name)."""
    table: dict[str, list[str]] = defaultdict(list)
    for f in files:
        table[f.rsplit("/", 1)[-1].split(".", 1)[0]].append(f)
    return table


def _folder_table(files: Iterable[str]) -> dict[str, list[str]]:
    """A folder's last name -> the workspace's files directly in a folder of that name (Go's packages)."""
    table: dict[str, list[str]] = defaultdict(list)
    for f in files:
        if "/" in f:
            table[f.rsplit("/", 2)[-2]].append(f)
    return table


def _module_table(files: Iterable[str]) -> dict[str, list[str]]:
    """Dotted module name -> the workspace's Python files that may be it."""
    table: dict[str, list[str]] = defaultdict(list)
    for f in files:
        if f.endswith(".py"):
            parts = f[:-3].split("/")
            if parts[-1] == "__init__":
                parts = parts[:-1]
            for k in range(len(parts)):  # src/pkg/mod.py is pkg.mod and mod as well
                table[".".join(parts[k:])].append(f)
    return table


class CalleeWalk:
    """One walk over the call graph below a set of starts, with its parsed files (from `cache`, when
    the caller keeps one across walks)."""

    def __init__(self, index: TagIndex, read: ReadFile, cache: ParseCache | None = None) -> None:
        self.index = index
        self.read = read
        self.cache = cache
        self._files: dict[str, _Parsed | None] = {}
        self.classes: set[str] = set()  # classes reached: their methods win an ambiguous x.m()
        self.class_defs: list[tuple[str, Definition]] = []  # the same classes: their dunders, their families
        self._reached_keys: set[tuple[str, int]] = set()
        self._bases: dict[tuple[str, int], list[tuple[str, Definition]]] = {}
        self._inherited: dict[tuple[str, int, str], list[tuple[str, Definition]]] = {}
        self._derives: dict[tuple[str, int, tuple[str, int]], bool] = {}
        self._tables: dict[FilesTable, dict[str, list[str]]] = {}  # the stem, folder and module tables, once per walk
        self._class_names: dict[str, tuple[FileTags, dict[int, str]]] = {}  # path -> (tags, def line -> its class)
        self._module_paths: dict[tuple[str, str], list[str]] = {}
        self.words: frozenset[str] = frozenset()  # words of the failure (its test, its message): rank a family
        self.name_words: frozenset[str] = frozenset()  # stems of the failing test's name: boost callees named so
        self._boosts: dict[tuple[str, int], float] = {}
        self._properties: dict[tuple[str, int], dict[str, list[Definition]]] = {}

    # -- files -------------------------------------------------------------------------------

    def parsed(self, path: str) -> _Parsed | None:
        if path not in self._files:
            self._files[path] = self._parse(path)
        return self._files[path]

    def _parse(self, path: str) -> _Parsed | None:
        text = self.read(path)
        if text is None:
            return None
        # The index's tags are the definitions of the text it read (the live index applies buffers first).
        tags = self.index.files.get(path)
        if self.cache is not None:
            return self.cache.parsed(path, text, tags)
        return _Parsed(path, text, language_for(path), list(tags.defs) if tags is not None else None)

    def module_paths(self, importer: str, module: str) -> list[str]:
        """Files of the workspace that `module` (imported from `importer`) may be (memoised per walk)."""
        key = (importer, module)
        found = self._module_paths.get(key)
        if found is None:
            found = self._module_paths[key] = self._find_module_paths(importer, module)
        return found

    def _find_module_paths(self, importer: str, module: str) -> list[str]:
        if language_for(importer) in JS_LANGS:
            return [c for c in js_module_candidates(importer, module) if c in self.index.files][:1]
        if module.startswith("."):
            return [c for c in module_file_candidates(importer, module) if c in self.index.files]
        return self._table(_module_table).get(module, [])

    # -- resolution ----------------------------------------------------------------------------

    def _top(self, path: str, name: str) -> list[tuple[str, Definition]]:
        p = self.parsed(path)
        return [(path, d) for d in p.top(name)] if p is not None else []

    def _imported(self, importer: str, b: Binding, hops: int = 0) -> list[tuple[str, Definition]]:
        if b.name is None or hops > 4:  # re-exports of re-exports, or a cycle of them
            return []
        for path in self.module_paths(importer, b.module):
            found = self._top(path, b.name)
            if found:
                return found
            sub = self.module_paths(importer, b.qualified)
            if sub:
                return []  # a module, not a definition
            # a package re-exporting the name: follow its own import of it
            p = self.parsed(path)
            if p is not None and b.name in p.bindings and p.bindings[b.name] != b:
                return self._imported(path, p.bindings[b.name], hops + 1)
        return self._global(b.name) if b.name not in GENERIC_NAMES else []

    def _global(self, name: str, *, methods: bool = False) -> list[tuple[str, Definition]]:
        if (name.startswith("__") and name.endswith("__")) or len(name) < 3 or (name in GENERIC_NAMES and not methods):
            return []
        # A function nested in another one cannot be called from elsewhere; a method can.
        found = [(p, d) for p, d in self.index.lookup(name) if d.kind != "impl" and (d.depth == 0 or d.kind == "method")]
        if methods:
            found = [(p, d) for p, d in found if d.depth > 0] or found
        if name not in GENERIC_NAMES and len({p for p, _ in found}) <= MAX_AMBIGUOUS:
            return found
        # Too many to guess among (or `x.filter()`, as common as a builtin), unless some are methods
        # of a class this walk reached: `spec = SpecifierSet(); spec.filter()`.
        if not self.classes or len(found) > MAX_CLASS_CHECKS:
            return []
        return [t for t in found if self._of_reached_class(*t)]

    def _js_lookup(self, path: str, name: str, hops: int = 0) -> tuple[list[tuple[str, Definition]], str | None]:
        """What a JavaScript/TypeScript module exports as `name`: its definitions, or (a re-exported
        module: `rules: require('./rules')`) that module's path. Follows re-exports a few hops."""
        if hops > 4:
            return [], None
        if found := self._top(path, name):
            return found, None
        p = self.parsed(path)
        if p is None:
            return [], None
        b = p.bindings.get(name)
        if b is not None:
            target = self.module_paths(path, b.module)
            if not target:
                return [], None
            if b.name is None:
                return [], target[0]
            return self._js_lookup(target[0], b.name, hops + 1)
        for key, star in p.bindings.items():  # export * from, ...require() in module.exports
            if key.startswith("*") and (target := self.module_paths(path, star.module)):
                found, module = self._js_lookup(target[0], name, hops + 1)
                if found or module:
                    return found, module
        return [], None

    def _resolve_js(self, p: _Parsed, site: Site) -> list[tuple[str, Definition]] | None:
        """A JavaScript/TypeScript name or `binding.m()` through the file's require/import bindings;
        None when the bindings do not say (the caller guesses as for any language)."""
        recv = site.receiver
        head = site.name if recv is None else recv
        b = p.bindings.get(head)
        if b is None or (recv is not None and "." in recv):
            return None
        target = self.module_paths(p.path, b.module)
        if not target:
            return None
        if b.name is None or b.name == "default":
            module: str | None = target[0]
            found: list[tuple[str, Definition]] = []
        else:
            found, module = self._js_lookup(target[0], b.name)
        if recv is None:
            return found or None
        if module is not None:
            return self._js_lookup(module, site.name)[0] or None
        members = [(path, m) for path, d in found if d.kind in CONTAINER_KINDS and (pp := self.parsed(path)) is not None
                   for m in pp.members(d, site.name)]  # Money.of(): a static method
        return members or None

    def _resolve_rust(self, p: _Parsed, cls: Definition | None, site: Site) -> list[tuple[str, Definition]] | None:
        """A Rust path call through the file's `use` bindings: `tax::apply()` to tax.rs's `apply`,
        `Money::new()` and `Self::new()` to the functions of the type's impl blocks, `super::f()` to the
        file's own; None when the path does not say (the caller guesses as for any language)."""
        recv, name = site.receiver, site.name
        if recv is None:
            b = p.bindings.get(name)
            if b is None or not b.module:
                return None
            recv, name = b.module, b.name or name  # `use crate::tax::apply;` then `apply(x)`
        elif recv == "?":
            return None
        else:
            head, _, rest = recv.partition("::")
            if (b := p.bindings.get(head)) is not None and b.module:
                recv = "::".join(x for x in (b.module, b.name, rest) if x)  # `use crate::tax;` then `tax::f()`
        if recv == "Self":
            recv = cls.name if cls is not None else recv
        last = recv.rsplit("::", 1)[-1]
        if last in PATH_WORDS:
            return [(p.path, d) for d in p.top(name)] or None
        if is_type_segment(last):
            return [(path, m) for path, d in self.index.lookup(last) if d.kind in CONTAINER_KINDS
                    and (pp := self.parsed(path)) is not None for m in pp.members(d, name)] or None
        stems = self._table(_stem_table)  # tax.rs, or tax/mod.rs among the mod.rs files
        candidates = [*stems.get(last, ()), *stems.get("mod", ())]
        return [t for f in module_files(p.path, recv, candidates) for t in self._top(f, name)] or None

    def _resolve_go(self, p: _Parsed, site: Site) -> list[tuple[str, Definition]] | None:
        """`tax.Apply()` through the file's imports: `Apply` in the package's folder, whatever the name's
        length (Go's `money.Of`); None when the receiver is no import or its package is not here (`fmt`)."""
        b = p.bindings.get(site.receiver) if site.receiver is not None else None
        if b is None:
            return None
        folder = package_files(b.module, self._table(_folder_table).get(b.module.rstrip("/").rsplit("/", 1)[-1], ()))
        return [t for f in folder for t in self._top(f, site.name)] if folder else None

    def resolve(self, p: _Parsed, cls: Definition | None, site: Site, caller: Definition | None = None) -> list[tuple[str, Definition]]:
        """Definitions `site` (in file p, inside class cls, in function caller) may mean, best guesses only."""
        name, recv = site.name, site.receiver
        if recv in (*SELF_RECEIVERS, "super()"):
            if cls is not None and recv != "super()" and (own := p.members(cls, name)):
                # a template method: `self._deserialize()` in Field runs TimeDelta's when the walk reached it
                return [(p.path, d) for d in own] + self.overrides(p.path, cls, name)
            if cls is not None and (inherited := self.inherited(p.path, cls, name)):
                return inherited + (self.overrides(p.path, cls, name) if recv != "super()" else [])
            return self._global(name, methods=True)  # inherited: which base is a guess
        if p.lang in JS_LANGS and (found := self._resolve_js(p, site)) is not None:
            return found
        if p.lang == "rust" and (found := self._resolve_rust(p, cls, site)) is not None:
            return found
        if p.lang == "go" and (found := self._resolve_go(p, site)) is not None:
            return found
        if recv is None:
            if local := [(p.path, d) for d in p.top(name)]:
                return local
            if caller is not None and (inner := [(p.path, d) for d in p.defs if d.name == name
                                                 and caller.line < d.line <= caller.end_line]):
                return inner  # a function defined in the calling one
            if name in p.bindings:
                return self._imported(p.path, p.bindings[name])
            return [] if site.kind == "value" else self._global(name)
        head = recv.split(".")[0]
        if (b := p.bindings.get(head)) is not None:
            module = b.qualified
            for path in self.module_paths(p.path, module):
                if found := self._top(path, name):
                    return found
                pkg = self.parsed(path)  # `import click; click.command` re-exported by the package
                if pkg is not None and name in pkg.bindings:
                    return self._imported(path, pkg.bindings[name])
            if b.name is not None and not self.module_paths(p.path, module):
                # Imported class: Klass.method()
                for path, d in self._imported(p.path, b):
                    if d.kind in CONTAINER_KINDS and (pp := self.parsed(path)) is not None:
                        return [(path, m) for m in pp.members(d, name)]
        if site.kind == "value" and recv not in ("self", "cls"):
            return []
        return self._global(name, methods=True)

    # -- classes ---------------------------------------------------------------------------------

    def bases(self, path: str, cls: Definition) -> list[tuple[str, Definition]]:
        """The classes `cls` (in file `path`) names as its bases, as far as they resolve."""
        key = (path, cls.line)
        if key in self._bases:
            return self._bases[key]
        self._bases[key] = []  # a cycle of bases ends here
        p = self.parsed(path)
        out: list[tuple[str, Definition]] = []
        if p is not None and p.tree is not None and p.lang is not None:
            end = cls.line + max(0, cls.signature.count("\n"))
            for site in p.call_sites(cls.line, end):
                if site.kind == "base" or (p.lang in JS_LANGS and site.line == cls.line):
                    out += [t for t in self.resolve(p, None, Site(site.name, site.receiver, "call", site.line))
                            if t[1].kind in CONTAINER_KINDS and (t[0], t[1].line) != key]
            if p.lang in JS_LANGS and (m := re.search(r"\bextends\s+([A-Za-z_$][\w$]*)", cls.signature)):
                out += [t for t in self.resolve(p, None, Site(m.group(1), None, "call", cls.line))
                        if t[1].kind in CONTAINER_KINDS and (t[0], t[1].line) != key]
        self._bases[key] = out
        return out

    def inherited(self, path: str, cls: Definition, name: str, hops: int = 0) -> list[tuple[str, Definition]]:
        """`name` as the first base class (depth first, as Python's MRO mostly does) defines it."""
        if hops > 5:
            return []
        key = (path, cls.line, name)
        if key in self._inherited:
            return self._inherited[key]
        self._inherited[key] = []  # a cycle of bases ends here
        found: list[tuple[str, Definition]] = []
        for bpath, base in self.bases(path, cls):
            bp = self.parsed(bpath)
            if bp is not None and (own := bp.members(base, name)):
                found = [(bpath, d) for d in own]
                break
            if found := self.inherited(bpath, base, name, hops + 1):
                break
        self._inherited[key] = found
        return found

    def derives(self, path: str, cls: Definition, base: tuple[str, int], hops: int = 0) -> bool:
        """Whether class `cls` (in `path`) has the class at `base` (path, line) among its bases, a few hops up."""
        if hops > 5:
            return False
        key = (path, cls.line, base)
        if key not in self._derives:
            self._derives[key] = False  # a cycle of bases ends here
            self._derives[key] = any((bp, b.line) == base or self.derives(bp, b, base, hops + 1)
                                     for bp, b in self.bases(path, cls))
        return self._derives[key]

    def overrides(self, path: str, cls: Definition, name: str) -> list[tuple[str, Definition]]:
        """`name` as the classes the walk reached that derive from `cls` define it (late binding:
        what `self.name()` in cls runs for such an object)."""
        out: list[tuple[str, Definition]] = []
        for rpath, rc in self.class_defs[:MAX_CLASS_CHECKS]:
            if (rpath, rc.line) == (path, cls.line) or (rp := self.parsed(rpath)) is None:
                continue
            own = rp.member_map(rc).get(name)
            if own and self.derives(rpath, rc, (path, cls.line)):
                out += [(rpath, d) for d in own]
        return out

    def properties(self, p: _Parsed, cls: Definition) -> dict[str, list[Definition]]:
        """The class's own members decorated @property or @cached_property, by name (memoised per walk)."""
        key = (p.path, cls.line)
        found = self._properties.get(key)
        if found is None:
            found = self._properties[key] = {
                name: ms for name, ms in p.member_map(cls).items()
                if any(m.kind not in CONTAINER_KINDS and any(_PROPERTY.match(p.lines[i - 1])
                                                              for i in range(_decorated_start(p.lines, m.line), m.line))
                       for m in ms)}
        return found

    def reach_class(self, path: str, d: Definition) -> None:
        """A class the walk reached: its methods win an ambiguous `x.m()`, its dunders are what
        operators on its objects run, and so are its bases'."""
        if (path, d.line) in self._reached_keys:
            return
        self._reached_keys.add((path, d.line))
        self.classes.add(d.name)
        self.class_defs.append((path, d))

    def dispatch_targets(self, p: _Parsed, cls: Definition | None, disp: Dispatch, caller: Definition) -> list[tuple[str, Definition]]:
        """Definitions a dispatched call (dispatch.py) may run, best guesses first."""
        if disp.kind == "dunder":
            owners = list(self.class_defs)
            if cls is not None:
                owners.insert(0, (p.path, cls))
            found: list[tuple[str, Definition]] = []
            for name in disp.names:
                for path, c in owners[:MAX_DUNDER_OWNERS]:
                    cp = self.parsed(path)
                    if cp is not None:  # its own dunder, else the one it inherits (LRUCache -> Cache)
                        found += [(path, m) for m in cp.members(c, name)] or self.inherited(path, c, name)
            return list(dict.fromkeys(found))
        if disp.kind == "family":
            prefix, suffix = disp.names[0], disp.names[1] if len(disp.names) > 1 else ""

            def member(name: str) -> bool:
                if prefix or suffix:
                    return name.startswith(prefix) and name.endswith(suffix) and name not in (prefix, suffix)
                return not name.startswith("__") and name != caller.name  # any method: getattr(self, name)

            # a bare name picks among the enclosing class's own methods only (its family is all of them)
            owners = ([(p.path, cls)] if cls is not None else []) + (list(self.class_defs) if prefix or suffix else [])
            found = []
            for path, c in owners[:MAX_CLASS_CHECKS]:
                cp = self.parsed(path)
                if cp is not None:
                    found += [(path, m) for name, ms in cp.member_map(c).items() if member(name) for m in ms
                              if m.kind not in CONTAINER_KINDS]
            if cls is None and (prefix or suffix):  # a module-level dispatcher: functions of the file in the family
                found += [(p.path, m) for m in p.defs if m.depth == 0 and member(m.name)]
            return list(dict.fromkeys(found))
        if disp.kind == "table":
            return self._table_targets(p, cls, disp.names[0], caller)
        if disp.kind == "string":
            return self._named_by_string(p, disp.names[0])
        return []

    def _table_targets(self, p: _Parsed, cls: Definition | None, name: str, caller: Definition) -> list[tuple[str, Definition]]:
        """Members of the literal assigned to `name`: in the class (`self.nodes = {...}` in __init__),
        in the calling function, or at the module's top level."""
        if p.tree is None or p.lang is None:
            return []
        spans = [(cls.line, cls.end_line)] if cls is not None and name.startswith(("self.", "this.", "cls.")) else []
        spans += [(caller.line, caller.end_line), (1, len(p.lines))]
        for a, b in spans:
            members = table_members(p.tree, p.lang, name, a, b)
            if not members:
                continue
            out: list[tuple[str, Definition]] = []
            for recv, member, line in members:
                if not member:  # the literal's span: definitions inside it (object-literal methods)
                    first, last = divmod(line, 100_000)
                    out += [(p.path, d) for d in p.defs if first <= d.line <= last and d.kind not in CONTAINER_KINDS
                            and d.line != caller.line]
                    continue
                out += self.resolve(p, cls, Site(member, recv, "value", line), caller)
            return list(dict.fromkeys(out))
        return []

    def _named_by_string(self, p: _Parsed, text: str) -> list[tuple[str, Definition]]:
        """Definitions a string names: a function or class of that name, or the top-level definitions of
        a module of that stem (a plug-in loaded by name)."""
        name = text.replace("-", "_")
        if name in GENERIC_NAMES or name.lower() in _STOP_WORDS:
            return []
        found = [(path, d) for path, d in self._global(name) if path != p.path or d.depth == 0]
        if found:
            return found[:MAX_AMBIGUOUS]
        stems = [f for f in self._table(_stem_table).get(name, []) if f != p.path]
        if 0 < len(stems) <= 2:
            return [(f, d) for f in stems if (fp := self.parsed(f)) is not None for d in fp.defs
                    if d.depth == 0 and d.kind not in CONTAINER_KINDS][:MAX_AMBIGUOUS]
        return []

    def _table(self, build: FilesTable) -> dict[str, list[str]]:
        """A table over the index's file names, from the parse cache when there is one (memoised per walk)."""
        found = self._tables.get(build)
        if found is None:
            found = self._tables[build] = (self.cache.table(self.index, build) if self.cache is not None
                                           else build(self.index.files))
        return found

    # -- the walk ------------------------------------------------------------------------------

    def walk(self, starts: Iterable[tuple[str, int]], hints: Iterable[tuple[str, Definition, float]] = ()) -> list[Callee]:
        """Callees ranked by score (best first); the starts come first with depth 0."""
        heap: list[tuple[float, int, str, Definition, int, str]] = []
        seq = 0

        def push(score: float, path: str, d: Definition, depth: int, via: str) -> None:
            nonlocal seq
            seq += 1
            if depth > 0 and self.name_words and (b := self.boost(path, d)) > 1.0:
                score = max(score, min(MAX_BOOSTED, score * b))
            heapq.heappush(heap, (-score, seq, path, d, depth, via))

        for path, line in starts:
            p = self.parsed(path)
            if p is None:
                continue
            d = self.start_of(p, line)
            push(1.0, path, d, 0, f"{path}:{line}")
            if p.lang in JS_LANGS and p.tree is not None:  # the describe blocks' beforeEach hooks run first
                for a, b in js_hooks(p.tree, line):
                    push(0.9, path, Definition(name="beforeEach", kind="function", line=a, end_line=b,
                                               signature="beforeEach", depth=0), 0, f"{path}:{line}")
            cls = p.classes_of(d) if d.kind != "module" else None
            if cls is not None and p.lang == "python" and _is_test_path(path):
                # a test class's attributes (`Cache = LRUCache`) say what `self.Cache(...)` makes
                self._class_attributes(p, cls)
                # and its setUp runs first: `self.s = SimpleEval()` says what `self.s.eval()` is
                for hook in ("setUp", "setup_method"):
                    for hp, hd in p.members(cls, hook) and [(path, m) for m in p.members(cls, hook)] or self.inherited(path, cls, hook):
                        push(0.9, hp, hd, 0, f"{path}:{line}")
        for path, d, score in hints:
            push(score, path, d, 1, "named by the test")
            if d.kind in CONTAINER_KINDS:
                self.reach_class(path, d)  # Choice named by the test: x.convert() means Choice.convert

        out: dict[tuple[str, int], Callee] = {}
        expanded = 0
        # `x.add()` left unresolved (a name too common to guess) until a class that defines it is
        # reached later in the walk: (score it would get, site, file, class, caller, depth, who)
        pending: dict[str, list[tuple[float, Site, _Parsed, Definition | None, Definition, int, str]]] = {}
        n_pending = 0
        # operators of a start (`i /= 2` in the test) on objects of a class reached later (`i = item(34)`
        # made an Integer): (score, dunders, who, how many classes were reached when it was seen)
        operators: list[tuple[float, tuple[str, ...], str, int]] = []
        classes_seen = len(self.class_defs)
        while heap:
            if len(self.class_defs) != classes_seen and (pending or operators):
                new_classes = self.class_defs[classes_seen:]
                first = classes_seen
                classes_seen = len(self.class_defs)
                for i, (cpath, c) in enumerate(new_classes, first):
                    if i >= MAX_DUNDER_OWNERS or (cp := self.parsed(cpath)) is None:
                        break
                    for score, dunders, owho, seen in operators:
                        if i >= seen:
                            own = next((ms for n in dunders if (ms := cp.members(c, n))), [])
                            for m in own:
                                push(score * LATE_OPERATOR, cpath, m, 1, f"{owho} (dunder: {' '.join(dunders)})")
                for cpath, c in new_classes:
                    cp = self.parsed(cpath)
                    names = cp.member_map(c).keys() & pending.keys() if cp is not None else ()
                    for name in names:
                        for score, site, pp, pcls, caller, pdepth, pwho in pending.pop(name):
                            found = [(cpath, m) for m in cp.members(c, name)]  # type: ignore[union-attr]
                            for tp, td in found:
                                push(score / len(found), tp, td, pdepth, pwho)
            neg, _, path, d, depth, via = heapq.heappop(heap)
            key = (path, d.line)
            if key in out:
                continue
            p = self.parsed(path)
            if p is None:
                continue
            out[key] = Callee(path=path, defn=d, start=_decorated_start(p.lines, d.line), score=-neg, depth=depth, via=via)
            if d.kind in CONTAINER_KINDS:
                self.reach_class(path, d)
                for ctor in CONSTRUCTORS:
                    for m in p.members(d, ctor):
                        push(-neg * 0.9, path, m, depth, via)
                continue
            near = depth < ALWAYS_DEPTH and not _DISPATCHED.search(via)  # a dispatch guess goes by rank alone
            if depth >= MAX_DEPTH or (not near and -neg < MIN_EXPAND) or expanded >= MAX_VISITS \
                    or p.tree is None or p.lang is None:
                continue
            expanded += 1
            if depth > 0 and _is_test_path(path):  # a test's helper runs as part of the test: its calls rank as
                neg = max(-1.0, neg / TEST_HELPER)  # if the test made them (it was ranked down only to be shown later)
            cls = p.classes_of(d)
            who = f"{path} {d.name}"
            resolved = [(site, [t for t in self.resolve(p, cls, site, d) if (t[0], t[1].line) != key])
                        for site in p.call_sites(_decorated_start(p.lines, d.line), d.end_line)]
            # Classes this body constructs: `x = Choice(); x.convert()` means Choice.convert.
            made = {td.name for _, ts in resolved for _, td in ts if td.kind in CONTAINER_KINDS}
            new = {(tp, td) for _, ts in resolved for tp, td in ts if td.kind in CONTAINER_KINDS and td.name not in self.classes}
            if new:
                for tp, td in sorted(new, key=lambda t: (t[0], t[1].line)):
                    self.reach_class(tp, td)
                # again for every `x.m()`: one resolved before (to a class a hint reached) may mean the new one's
                resolved = [(site, [t for t in self.resolve(p, cls, site, d) if (t[0], t[1].line) != key] or ts
                             if site.receiver not in (None, *SELF_RECEIVERS) else ts)
                            for site, ts in resolved]
            for site, targets in resolved:
                targets = self._without_overloads(targets)
                if not targets:
                    if site.receiver is not None and site.kind == "call" and n_pending < MAX_PENDING:
                        pending.setdefault(site.name, []).append((-neg * DECAY, site, p, cls, d, depth + 1, who))
                        n_pending += 1
                    continue
                # `x.m()` of a class this very body constructs, else of any class reached
                own = [t for t in targets if self._class_name(*t) in made] \
                    if made and site.receiver not in (None, *SELF_RECEIVERS) and len(targets) > 1 else []
                preferred = own or [t for t in targets if self._of_reached_class(*t)]
                targets = preferred or targets
                share = 1.0 / len(targets)
                # a builtin-like name (`compile`, `filter`) is a guess, unless the file imports or defines it
                # (`compile()`, `rules.compile()` of an imported module or class)
                named = (site.name if site.receiver is None else site.receiver.split(".")[0]) in p.bindings \
                    or (site.receiver is None and bool(p.top(site.name)))
                for tp, td in targets:
                    generic = 0.3 if td.name in GENERIC_NAMES and not named else 1.0
                    in_tests = TEST_HELPER if _is_test_path(tp) else 1.0
                    push(-neg * DECAY * share * KIND_FACTOR[site.kind] * generic * in_tests, tp, td, depth + 1, who)
            # `self.pct` runs the class's `pct` when it is a property
            if cls is not None and p.lang == "python" and (props := self.properties(p, cls)):
                for name in sorted(set(_SELF_ATTRIBUTE.findall(p.text_of(d.line, d.end_line))) & props.keys()):
                    for m in props[name]:
                        if m.line != d.line:
                            push(-neg * DECAY * KIND_FACTOR["call"] / len(props[name]), path, m, depth + 1, who)
            # What the language runs without a name at the call: operators, getattr families, tables, strings.
            # a plug-in is named where the failure starts (the test), not in every message below it
            for disp in p.dispatches(_decorated_start(p.lines, d.line), d.end_line, depth == 0):
                if disp.kind == "dunder" and depth == 0:
                    operators.append((-neg * DECAY * KIND_FACTOR["dunder"], disp.names, who, len(self.class_defs)))
                targets = [t for t in self.dispatch_targets(p, cls, disp, d) if (t[0], t[1].line) != key]
                if not targets:
                    continue
                # a family's own affix (`_sql` of every `*_sql`) says nothing about which member runs
                weights = self._worded(targets, frozenset(w for n in disp.names for w in words_of(n))
                                       if disp.kind == "family" else frozenset())
                if len(targets) > MAX_DISPATCH_TARGETS:  # the best-worded first, then in source order
                    best = sorted(range(len(targets)), key=lambda i: -weights[i])[:MAX_DISPATCH_TARGETS]
                    targets, weights = [targets[i] for i in sorted(best)], [weights[i] for i in sorted(best)]
                total = sum(weights)
                for (tp, td), w in zip(targets, weights, strict=True):
                    share = (w / total) * len(targets) ** 0.5 / len(targets) if disp.kind != "table" else w / total
                    in_tests = TEST_HELPER if _is_test_path(tp) else 1.0
                    push(-neg * DECAY * min(1.0, share) * KIND_FACTOR[disp.kind] * in_tests, tp, td, depth + 1,
                         f"{who} ({disp.kind}: {' '.join(disp.names)})")
        return sorted(out.values(), key=lambda c: (-c.score, c.depth, c.path, c.defn.line))

    def start_of(self, p: _Parsed, line: int) -> Definition:
        """The function a failure starts in: the innermost definition around `line`; in JavaScript and
        TypeScript also an anonymous arrow (`it('…', () => {…})`); else the line itself."""
        d = enclosing([x for x in p.defs if x.kind not in CONTAINER_KINDS], line)
        if p.lang in JS_LANGS and p.tree is not None and (span := js_function_span(p.tree, line)) is not None:
            a, b, title = span
            if d is None or d.line < a:
                return Definition(name=title, kind="function", line=a, end_line=b, signature=title, depth=0)
        if d is None:  # module level: the failing line itself is the start
            return Definition(name="<module>", kind="module", line=line, end_line=line, signature=f"line {line}", depth=0)
        return d

    def _class_attributes(self, p: _Parsed, cls: Definition) -> None:
        """Classes a test class binds as attributes (`Cache = LRUCache`), its own and those of the test
        classes beside it that mix it in (unittest mixins: the test runs as LRUCacheTest): reached."""
        owners = [(p, cls)]
        folder = p.path.rsplit("/", 1)[0] if "/" in p.path else ""
        pattern = re.compile(rf"\b{re.escape(cls.name)}\b")
        for f, tags in self.index.files.items():
            if (f.rsplit("/", 1)[0] if "/" in f else "") != folder or not _is_test_path(f):
                continue
            for c in tags.defs:
                if c.kind == "class" and c.name != cls.name and "(" in c.signature and pattern.search(c.signature.split("(", 1)[1]):
                    if (fp := self.parsed(f)) is not None:
                        owners.append((fp, c))
        for fp, c in owners[:12]:
            body = [i for i in range(c.line, min(c.end_line, len(fp.lines)))
                    if re.match(r"\s+[A-Za-z_]\w*\s*=\s*[A-Z]\w*\s*$", fp.lines[i])]
            for i in body[:8]:
                name = fp.lines[i].split("=", 1)[1].strip()
                for tp, td in self.resolve(fp, None, Site(name, None, "call", i + 1)):
                    if td.kind in CONTAINER_KINDS:
                        self.reach_class(tp, td)

    def _worded(self, targets: list[tuple[str, Definition]], affix: frozenset[str] = frozenset()) -> list[float]:
        """Weights of dispatch targets: a name the failure's words spell (`visit_Struct` when the test
        says struct) counts more than the rest of its family."""
        if not self.words:
            return [1.0] * len(targets)
        out = []
        for _, d in targets:
            # CamelCase and snake_case parts; an all-caps name (pyflakes' IMPORTFROM) is one word
            parts = {w.lower() for w in re.findall(r"[A-Za-z][a-z0-9]*|[A-Z]+(?![a-z])",
                                                   d.name.lower() if d.name.isupper() else d.name) if len(w) >= 3}
            whole = d.name.strip("_").lower().replace("_", "")
            out.append(1.0 if whole in self.words or any(part.lower() in self.words for part in parts
                                                          if part.lower() not in _COMMON_PARTS | affix) else 0.25)
        return out

    def _without_overloads(self, targets: list[tuple[str, Definition]]) -> list[tuple[str, Definition]]:
        """One definition per (file, class, name): `@overload` stubs come before the implementation, and
        a redefinition replaces the earlier one at run time; either way the last one runs."""
        if len({(path, d.name) for path, d in targets}) == len(targets):
            return targets  # no name twice in a file: nothing to drop (and no class to look up)
        last: dict[tuple[str, str | None, str], tuple[str, Definition]] = {}
        for path, d in targets:
            key = (path, self._class_name(path, d), d.name)
            if key not in last or d.line > last[key][1].line:
                last[key] = (path, d)
        return targets if len(last) == len(targets) else sorted(last.values(), key=lambda t: (t[0], t[1].line))

    def _of_reached_class(self, path: str, d: Definition) -> bool:
        """`_class_name(path, d) in self.classes`, without reading the file when its tags already say
        no: most candidates of an ambiguous name are methods of classes the walk never reached."""
        if d.depth == 0:
            return False
        tags = self.index.files.get(path)
        if tags is not None:  # the walk's definitions of a file are its tags' (see _parse)
            if self._class_of(path, tags).get(d.line) not in self.classes:
                return False
        return self._class_name(path, d) in self.classes

    def _class_of(self, path: str, tags: FileTags) -> dict[int, str]:
        """Definition line -> its class's name, for a file's tags (kept across walks in the ParseCache)."""
        if self.cache is not None:
            return self.cache.classes_around(path, tags)
        around = self._class_names.get(path)
        if around is None or around[0] is not tags:
            around = self._class_names[path] = (tags, _classes_around(tags.defs))
        return around[1]

    def _class_name(self, path: str, d: Definition) -> str | None:
        if d.depth == 0:
            return None
        tags = self.index.files.get(path)
        if tags is not None:  # the walk's definitions of a file are its tags' (see _parse): no scan of them
            return self._class_of(path, tags).get(d.line)
        p = self.parsed(path)
        c = p.classes_of(d) if p is not None else None
        return c.name if c is not None else None

    # -- names the test carries ------------------------------------------------------------------

    def boost(self, path: str, d: Definition) -> float:
        """How much the failing test's name speaks for `d`: NAME_BOOST when `d`'s name shares a word
        with it, CLASS_BOOST when `d`'s class's name does, else 1 (memoised per walk)."""
        key = (path, d.line)
        found = self._boosts.get(key)
        if found is None:
            found = 1.0
            if name_stems(d.name) & self.name_words:
                found = NAME_BOOST
            elif d.depth > 0 and (c := self._class_name(path, d)) is not None and name_stems(c) & self.name_words:
                found = CLASS_BOOST
            self._boosts[key] = found
        return found

    def hints(self, test_path: str, test_line: int, message: str = "") -> list[tuple[str, Definition, float]]:
        """Definitions named by the failing test (its name's words, its templates' filters) or by a
        literal its failure `message` quotes: weak seeds. Sets the words that rank the walk's callees."""
        p = self.parsed(test_path)
        if p is None or p.tree is None:
            return []
        d = self.start_of(p, test_line)
        if d.kind == "module":
            return []
        message = message[:MAX_MESSAGE]
        self.words = frozenset(w for w in words_of(p.text_of(d.line, d.end_line)) | words_of(message) if w not in _STOP_WORDS)
        name = d.name.split("(", 1)[-1] if p.lang in JS_LANGS else d.name  # it('takes the best discount')
        all_words = words_of_test_name(name) if p.lang not in JS_LANGS else re.findall(r"[a-z0-9]+", name.lower())
        if p.lang == "python" and (cls := p.classes_of(d)) is not None:  # TestCombine.runTest: the class names the unit
            all_words += words_of_test_name(cls.name)
        words = [w for w in all_words if len(w) >= 3 and w not in _STOP_WORDS]
        self.name_words = stems_of_test_name(all_words, frozenset(_STOP_WORDS | _COMMON_PARTS | {"run"}))
        filters = filter_names(p.tree, p.lang, d.line, d.end_line)
        return name_matches(self.index, words, filters, message_phrases(message))


def with_changed(walk: CalleeWalk, callees: list[Callee], changed: list[tuple[str, int, float, str]]) -> list[Callee]:
    """`callees` with the definitions around changed lines (path, line today, score, what changed them)
    ranked among them: the function the user just edited is the first suspect."""
    by_key = {(c.path, c.defn.line): c for c in callees}
    for path, line, score, via in changed:
        p = walk.parsed(path)
        d = enclosing([x for x in p.defs if x.kind not in CONTAINER_KINDS], line) if p is not None else None
        if p is None or d is None:
            continue
        c = by_key.get((path, d.line))
        if c is None:
            by_key[(path, d.line)] = Callee(path=path, defn=d, start=_decorated_start(p.lines, d.line), score=score, depth=1, via=via)
        else:  # a function just changed says so, however it ranked already (the failure's words may rank it higher)
            c.score, c.via = max(c.score, score), via if c.depth else c.via
    return sorted(by_key.values(), key=lambda c: (-c.score, c.depth, c.path, c.defn.line))


def name_matches(index: TagIndex, words: list[str], filters: list[str], phrases: Iterable[list[str]] = (),
                 *, limit: int = 6) -> list[tuple[str, Definition, float]]:
    """Definitions whose names the words spell: a run of words joined (CaseInsensitive, case_insensitive)
    scores more than one word, and a filter `|min` matches `min` or `do_min`; a run of two or three
    words of a literal the failure quotes (`'No such option'`: NoSuchOption) too. Shared among the matches."""
    wanted: dict[str, float] = {}  # a lower-cased, underscore-free spelling -> weight
    for n in (3, 2, 1):
        for i in range(len(words) - n + 1):
            wanted.setdefault("".join(words[i : i + n]), HINT_SCORE * (1.0 if n > 1 else 0.6))
    for phrase in phrases:
        for n in (3, 2):
            for i in range(len(phrase) - n + 1):
                wanted.setdefault("".join(phrase[i : i + n]), HINT_SCORE * 0.8)
    found: list[tuple[str, Definition, float]] = []
    if wanted:
        for name in index.defined_in:
            key = name.replace("_", "").lower()
            if key in wanted and name not in GENERIC_NAMES:
                found.extend((p, d, wanted[key]) for p, d in index.lookup(name) if d.kind != "impl")
    spelled = stems_of_test_name(words) if filters else frozenset()
    for f in filters:
        # a filter the test's name spells as well (`|selectattr` in test_simple_select_attr) is the likelier one
        weight = HINT_SCORE * (2 if name_stems(f) & spelled else 1)
        for name in (f, f"do_{f}", f"{f}_filter", f"filter_{f}"):
            found.extend((p, d, weight) for p, d in index.lookup(name) if d.kind != "impl" and d.depth == 0)
    if not found:
        return []
    found.sort(key=lambda t: -t[2])
    found = found[: limit * 2]
    share = 1.0 / max(1, len(found) ** 0.5)
    return [(p, d, s * share) for p, d, s in found[:limit]]


def _decorated_start(lines: list[str], line: int) -> int:
    """The first decorator line above a definition's line (Python, Java annotations, Rust attributes)."""
    start = line
    while start > 1 and re.match(r"\s*(@|#\[)", lines[start - 2]):
        start -= 1
    return start


def _is_test_path(path: str) -> bool:
    parts = path.split("/")
    return any(p in ("test", "tests", "testing") for p in parts[:-1]) or parts[-1].startswith("test_") or parts[-1].endswith(
        ("_test.py", "_test.go", ".test.js", ".test.ts", ".spec.js", ".spec.ts", "conftest.py"))


def is_test_path(path: str) -> bool:
    """Whether `path` looks like a test file (the failing test's function gives hint words)."""
    return _is_test_path(path)


# --------------------------------------------------------------------------- rendering

BIG_CLASS_LINES = 40  # a longer class is shown as its header and member signatures
LONG_BODY_LINES = 60  # a longer callee (not a start, not a changed one) is shown as the part the failure touches
LONG_BODY_SHARE = 4  # ... when it would take more than this fraction of the budget whole
MAX_OUTLINE_MEMBERS = 16  # a class outline lists this many members: those the walk reached first
MAX_OUTLINES = 3  # class outlines per section, the best-ranked (signatures: the repository map has more of them)
TOUCH_CONTEXT = 4  # lines kept around each touched line


def render_callees(walk: CalleeWalk, callees: list[Callee], budget: int, shown: list[tuple[str, int, int]]) -> str:
    """The best-ranked bodies that fit `budget` tokens, whole: docstrings are elided first, and only
    a body bigger than half the budget is cut (at the budget, never at a line count). Spans already
    in the prompt (`shown`: path, first, last line) are not repeated."""
    if budget <= 0:
        return ""
    parts: list[str] = []
    used = 0
    reached_names = frozenset(c.defn.name.lower() for c in callees[:60] if c.defn.kind != "module")
    reached_keys = {(c.path, c.defn.line) for c in callees}
    outlines = 0
    for c in callees:
        if budget - used < 60:
            break
        d = c.defn
        if d.kind == "module" or any(p == c.path and a <= c.start and d.end_line <= b for p, a, b in shown):
            continue
        p = walk.parsed(c.path)
        if p is None:
            continue
        long = False
        if d.kind in CONTAINER_KINDS and d.end_line - d.line + 1 > BIG_CLASS_LINES:
            if outlines >= MAX_OUTLINES:
                continue
            members = [m for m in p.defs if d.line < m.line <= d.end_line and m.depth == d.depth + 1]
            if len(members) > MAX_OUTLINE_MEMBERS:
                kept = {id(m) for m in sorted(members, key=lambda m: (c.path, m.line) not in reached_keys)[:MAX_OUTLINE_MEMBERS]}
                more = len(members) - MAX_OUTLINE_MEMBERS
                members = [m for m in members if id(m) in kept]
            else:
                more = 0
            body = "\n".join([p.lines[d.line - 1], *(f"    {m.line}: {m.signature}" for m in members),
                              *([f"    … ({more} more members)"] if more else [])])
            what = "class outline, line: member"
            outlines += 1
        else:
            body = elide_docstrings(p.lines, p.tree, p.lang, c.start, d.end_line)
            what = "whole"
            long = c.depth > 0 and not c.via.startswith("changed") and d.end_line - c.start + 1 > LONG_BODY_LINES \
                and len(body) > budget // LONG_BODY_SHARE and count_tokens(body) > budget // LONG_BODY_SHARE  # (fewer characters: fewer tokens)
            if long:  # it would crowd out shorter bodies ranked below it
                lines = body.splitlines()
                part = _touched_part(lines, walk.words | reached_names - {d.name.lower()}) \
                    or _touched_part(lines, walk.words - {d.name.lower()})  # most lines name a reached one: the failure's words
                if part is not None:
                    body, what = part, "the part the failure's names touch, … marks lines left out"
        why = ("a traceback frame's function" if c.depth == 0 else c.via if c.via.startswith(("named by", "changed"))
               else f"called from {c.via}")
        block = f"#### {c.path} lines {c.start}-{d.end_line} ({what}; {why})\n```{_fence(c.path)}\n{body}\n```"
        tokens = count_tokens(block) + 2
        limit = budget // LONG_BODY_SHARE if long else budget // 2  # a long callee never takes more than its share
        if tokens > limit and used + limit <= budget:
            note = f"\n[... cut to fit the budget; read_file {c.path} lines {c.start}-{d.end_line} for the rest ...]\n```"
            block = block.replace(f"({what};", "(cut;", 1)
            block = truncate_to_tokens(block, limit - count_tokens(note) - 8).rstrip("\n") + note
            tokens = count_tokens(block) + 2
        if used + tokens > budget:
            continue
        parts.append(block)
        used += tokens
    return "\n\n".join(parts)


def _touched_part(body: list[str], words: frozenset[str]) -> str | None:
    """A long body (its lines, docstrings elided) cut to the lines that name one of `words`
    (the failure's words, the other reached definitions' names), each with TOUCH_CONTEXT lines around
    it, and its header; None when nothing past the header is touched or the part would be most of it."""
    if not words:
        return None
    keep = {0, 1}
    touched = False
    for i, line in enumerate(body):
        if i > 1 and any(w.lower() in words for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", line)):
            keep.update(range(max(0, i - TOUCH_CONTEXT), min(len(body), i + TOUCH_CONTEXT + 1)))
            touched = True
    if not touched or len(keep) > 0.6 * len(body):
        return None
    out: list[str] = []
    for i, line in enumerate(body):
        if i in keep:
            out.append(line)
        elif i - 1 in keep:
            end = min([k for k in keep if k > i] or [len(body)]) - 1
            indent = line[: len(line) - len(line.lstrip())] or "    "
            out.append(f"{indent}… ({end - i + 1} lines left out)")
    return "\n".join(out)


def _fence(path: str) -> str:
    lang = language_for(path)
    return {"typescript": "ts", "javascript": "js"}.get(lang or "", lang or "")
