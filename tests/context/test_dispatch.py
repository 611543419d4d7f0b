"""The callee walk follows the language's own dispatch (issue 34): operators and builtins to the
dunders of reached classes, inherited methods, getattr families, tables of functions, names given
as strings; and JavaScript test arrows, require/import bindings, re-exports, this.m() and
object-literal methods; depth decided by rank."""

from __future__ import annotations

from pathlib import Path

from qwen_lsp.context.callees import MIN_EXPAND, CalleeWalk
from qwen_lsp.context.callsites import Binding
from qwen_lsp.context.dispatch import dispatches, js_bindings, js_function_span, js_hooks, js_module_candidates, table_members
from qwen_lsp.context.treesitter import parse
from tests.context.helpers import walk_of, write, write_all


def reached(walk: CalleeWalk, starts) -> dict[str, float]:
    test = starts[0]
    return {f"{c.path}:{c.defn.name}": c.score for c in walk.walk(starts, walk.hints(*test))}


def test_operators_and_builtins_name_their_dunders() -> None:
    src = (
        "def f(cache, k, a, b, node):\n"
        "    if a == b and k in cache:\n"
        "        x = cache[k]\n"
        "    cache[k] = 1\n"
        "    del cache[k]\n"
        "    cache.update({1: 2})\n"
        "    with a:\n"
        "        pass\n"
        "    h = getattr(a, 'visit_' + node.kind)\n"
        "    return self.nodes[type(node)](node) + len(x) + str(b), load('csv')\n"
    )
    got = {(d.kind, d.names) for d in dispatches(parse(src, "python"), "python", 1, 10)}
    assert {("dunder", ("__eq__",)), ("dunder", ("__contains__",)), ("dunder", ("__getitem__",)),
            ("dunder", ("__setitem__",)), ("dunder", ("__delitem__",)), ("dunder", ("__enter__", "__exit__")),
            ("dunder", ("__len__",)), ("dunder", ("__str__", "__repr__")), ("dunder", ("__add__", "__radd__")),
            ("family", ("visit_",)), ("table", ("self.nodes",)), ("string", ("csv",))} <= got
    # update() of a mapping runs the subclass's __setitem__ (MutableMapping's mixin)
    assert ("dunder", ("__setitem__",)) in {(d.kind, d.names) for d in dispatches(parse(src, "python"), "python", 6, 6)}


def test_table_members_of_a_dict_assigned_in_init() -> None:
    src = "class E:\n    def __init__(self):\n        self.nodes = {A: self._num, B: op.add, C: helper}\n"
    members = table_members(parse(src, "python"), "python", "self.nodes", 1, 3)
    assert members[:3] == [("self", "_num", 3), ("op", "add", 3), (None, "helper", 3)]


DUNDER_PROJECT = {
    "lib/cache.py": (
        "class Cache:\n"
        "    def __init__(self, maxsize):\n"
        "        self.maxsize = maxsize\n"
        "        self.data = {}\n"
        "\n"
        "    def __setitem__(self, key, value):\n"
        "        self.data[key] = value\n"
        "\n"
        "    def __contains__(self, key):\n"
        "        return key in self.data\n"
        "\n"
        "    def __len__(self):\n"
        "        return len(self.data)\n"
        "\n"
        "\n"
        "class LRUCache(Cache):\n"
        "    def __getitem__(self, key):\n"
        "        value = self.data[key]\n"
        "        self.touch(key)\n"
        "        return value\n"
        "\n"
        "    def touch(self, key):\n"
        "        self.data[key] = self.data.pop(key)\n"
    ),
    "tests/test_cache.py": (
        "import unittest\n"
        "from lib.cache import LRUCache\n"
        "\n"
        "\n"
        "class Mixin:\n"
        "    def test_update(self):\n"
        "        cache = self.Cache(2)\n"
        "        cache.update({1: 1})\n"
        "        self.assertTrue(1 in cache)\n"
        "        self.assertEqual(cache[1], 1)\n"
        "\n"
        "\n"
        "class LRUTest(unittest.TestCase, Mixin):\n"
        "    Cache = LRUCache\n"
    ),
}


def test_dunders_of_reached_classes_and_their_bases(tmp_path: Path) -> None:
    ws = write_all(tmp_path / "ws", DUNDER_PROJECT)
    got = reached(walk_of(ws, tmp_path), [("tests/test_cache.py", 9)])
    # `self.Cache(2)` resolves by name to the base class; its dunders run for `update`, `in` and `[]`
    for name in ("__setitem__", "__contains__", "__getitem__"):
        assert f"lib/cache.py:{name}" in got, (name, got)
    assert "lib/cache.py:touch" in got  # the subclass's helper, below its __getitem__


def test_an_inherited_method_through_self_is_the_base_class_one(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "pkg/base.py", "class Base:\n    def helper(self):\n        return 1\n")
    write(ws, "pkg/other.py", "class Other:\n    def helper(self):\n        return 2\n")
    write(ws, "pkg/child.py", "from pkg.base import Base\n\n\nclass Child(Base):\n    def run(self):\n        return self.helper()\n")
    walk = walk_of(ws, tmp_path)
    got = [f"{c.path}:{c.defn.name}" for c in walk.walk([("pkg/child.py", 6)])]
    assert "pkg/base.py:helper" in got and "pkg/other.py:helper" not in got


def test_getattr_family_ranked_by_the_tests_words_and_tables_of_functions(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "gen.py", (
        "class Visitor:\n"
        "    def visit(self, node):\n"
        "        return getattr(self, 'visit_' + type(node).__name__)(node)\n"
        "\n"
        "\n"
        "class Gen(Visitor):\n"
        "    def visit_Struct(self, n):\n"
        "        return 'struct'\n"
        "\n"
        "    def visit_Union(self, n):\n"
        "        return 'union'\n"
        "\n"
        "    def visit_Enum(self, n):\n"
        "        return 'enum'\n"
        "\n"
        "\n"
        "def _add(a, b):\n"
        "    return a + b\n"
        "\n"
        "\n"
        "def _sub(a, b):\n"
        "    return a - b\n"
        "\n"
        "\n"
        "OPS = {'+': _add, '-': _sub}\n"
        "\n"
        "\n"
        "def calc(op, a, b):\n"
        "    return OPS[op](a, b)\n"
    ))
    write(ws, "test_gen.py", (
        "from gen import Gen, calc\n\n\n"
        "def test_struct():\n    assert Gen().visit(parse('struct s;')) == 'struct'\n\n\n"
        "def test_calc():\n    assert calc('-', 3, 1) == 2\n"
    ))
    got = reached(walk_of(ws, tmp_path), [("test_gen.py", 5)])
    assert {"gen.py:visit_Struct", "gen.py:visit_Union", "gen.py:visit_Enum"} <= got.keys()
    assert got["gen.py:visit_Struct"] > got["gen.py:visit_Union"]  # the test says struct
    got = reached(walk_of(ws, tmp_path), [("test_gen.py", 9)])
    assert {"gen.py:_add", "gen.py:_sub"} <= got.keys()


def test_depth_is_decided_by_rank_not_a_fixed_three_levels(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "chain.py", "".join(f"def f{i}(x):\n    return f{i + 1}(x)\n\n\n" for i in range(6)) + "def f6(x):\n    return x\n")
    write(ws, "test_chain.py", "from chain import f0\n\n\ndef test_chain():\n    assert f0(1) == 2\n")
    walk = walk_of(ws, tmp_path)
    callees = walk.walk([("test_chain.py", 5)])
    depth = {c.defn.name: c.depth for c in callees}
    assert depth["f4"] == 5  # five calls below the test (the old walk stopped at three)
    assert all(c.score >= MIN_EXPAND * 0.6 * 0.8 for c in callees)


def test_a_string_names_a_plugin_module(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "fmt/__init__.py", "import importlib\n\n\ndef render(x, name):\n    return importlib.import_module('fmt.' + name).render(x)\n")
    write(ws, "fmt/tabular.py", "def render(x):\n    return str(x)\n")
    write(ws, "test_fmt.py", "from fmt import render\n\n\ndef test_tabular():\n    assert render(1, 'tabular') == '1'\n")
    got = reached(walk_of(ws, tmp_path), [("test_fmt.py", 5)])
    assert "fmt/tabular.py:render" in got


# --------------------------------------------------------------------------- JavaScript

JS_PROJECT = {
    "src/money.js": (
        "'use strict';\n"
        "const { round } = require('./util');\n"
        "\n"
        "class Money {\n"
        "  constructor(minor) {\n"
        "    this.minor = minor;\n"
        "  }\n"
        "\n"
        "  static of(major) {\n"
        "    return new Money(round(major * 100));\n"
        "  }\n"
        "\n"
        "  add(other) {\n"
        "    return new Money(this.checked(this.minor + other.minor));\n"
        "  }\n"
        "\n"
        "  checked(n) {\n"
        "    return n;\n"
        "  }\n"
        "}\n"
        "\n"
        "module.exports = { Money };\n"
    ),
    "src/util/numbers.js": "function round(x) {\n  return Math.round(x);\n}\n\nmodule.exports = { round };\n",
    "src/util/index.js": "module.exports = {\n  ...require('./numbers'),\n};\n",
    "src/rules.js": (
        "const evaluators = {\n"
        "  literal(node) {\n"
        "    return node.value;\n"
        "  },\n"
        "  not(node, scope) {\n"
        "    return !evaluate(node.operand, scope);\n"
        "  },\n"
        "};\n"
        "\n"
        "function evaluate(node, scope) {\n"
        "  const fn = evaluators[node.kind];\n"
        "  return fn(node, scope);\n"
        "}\n"
        "\n"
        "module.exports = { evaluate };\n"
    ),
    "src/index.js": "const { Money } = require('./money');\n\nmodule.exports = { Money, rules: require('./rules') };\n",
    "test/money.test.js": (
        "const { describe, it, beforeEach } = require('node:test');\n"
        "const assert = require('node:assert/strict');\n"
        "const { Money, rules } = require('../src');\n"
        "\n"
        "describe('Money', () => {\n"
        "  let a;\n"
        "  beforeEach(() => {\n"
        "    a = Money.of(1);\n"
        "  });\n"
        "\n"
        "  it('adds', () => {\n"
        "    assert.equal(a.add(Money.of(2)).minor, 300);\n"
        "    assert.equal(rules.evaluate({ kind: 'literal', value: 1 }, {}), 1);\n"
        "  });\n"
        "});\n"
    ),
}


def test_js_bindings_requires_imports_and_reexports() -> None:
    src = ("const { a, b: c } = require('./x');\nconst m = require('../m');\nimport d, { e as f } from './y';\n"
           "import * as ns from './z';\nmodule.exports = { ...require('./w'), rules: require('./rules') };\n"
           "export * from './v';\n")
    got = js_bindings(parse(src, "javascript"))
    assert got["a"] == Binding("./x", "a") and got["c"] == Binding("./x", "b") and got["m"] == Binding("../m", None)
    assert got["d"] == Binding("./y", "default") and got["f"] == Binding("./y", "e") and got["ns"] == Binding("./z", None)
    assert got["rules"] == Binding("./rules", None)
    assert {got["*0"].module, got["*1"].module} == {"./w", "./v"}
    assert js_module_candidates("test/a.test.js", "../src")[:2] == ["src.js", "src.ts"]
    assert js_module_candidates("src/a.js", "./b.js")[0] == "src/b.js"
    assert "src/index.js" in js_module_candidates("test/a.test.js", "../src")


def test_js_test_arrow_and_its_hooks_are_the_start() -> None:
    tree = parse(JS_PROJECT["test/money.test.js"], "javascript")
    assert js_function_span(tree, 12) == (11, 14, "it('adds')")
    assert js_hooks(tree, 12) == [(7, 9)]


def test_js_walk_reaches_through_reexports_this_and_object_methods(tmp_path: Path) -> None:
    ws = write_all(tmp_path / "ws", JS_PROJECT)
    got = reached(walk_of(ws, tmp_path), [("test/money.test.js", 12)])
    for name in ("src/money.js:of", "src/money.js:add", "src/money.js:checked",  # static call, method, this.m()
                 "src/util/numbers.js:round",  # through util/index.js's ...require('./numbers')
                 "src/rules.js:evaluate",  # rules: require('./rules') re-exported by the index
                 "src/rules.js:literal", "src/rules.js:not"):  # members of the evaluators table
        assert name in got, (name, sorted(got))


def test_a_long_callee_is_shown_as_the_part_the_failure_touches(tmp_path: Path) -> None:
    from qwen_lsp.context.callees import render_callees

    ws = tmp_path / "ws"
    filler = "".join(f"    step_{i} = {i}\n" for i in range(80))
    write(ws, "long.py", f"def long_one(x):\n{filler}    total = compute_margin(x)\n{filler}    return total\n\n\n"
                         "def compute_margin(x):\n    return x * 2\n")
    write(ws, "test_long.py", "from long import long_one\n\n\ndef test_margin():\n    margin = 3\n    assert long_one(1) == margin\n")
    walk = walk_of(ws, tmp_path)
    callees = walk.walk([("test_long.py", 6)], walk.hints("test_long.py", 6))
    text = render_callees(walk, callees, 4000, [])
    assert "    total = compute_margin(x)" in text and "left out" in text
    assert "step_40 = 40" not in text  # far from anything the failure names
    assert "def compute_margin(x):" in text  # and the rest of the budget goes to more, shorter bodies


def test_getattr_by_suffix_or_bare_name_on_self_is_a_family() -> None:
    src = (
        "class G:\n"
        "    def sql(self, e):\n"
        "        a = getattr(self, f'{e.key}_sql')\n"
        "        b = getattr(self, e.key + '_handler')\n"
        "        c = getattr(self, '%s_node' % e.key)\n"
        "        d = getattr(self, node_type, None)\n"
        "        f = getattr(other, name)\n"
    )
    got = {(d.kind, d.names) for d in dispatches(parse(src, "python"), "python", 1, 7) if d.kind == "family"}
    assert got == {("family", ("", "_sql")), ("family", ("", "_handler")), ("family", ("", "_node")),
                   ("family", ("", ""))}  # getattr(other, name): nothing to go on


def test_template_method_runs_the_override_of_a_reached_subclass(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "fields.py", (
        "class Field:\n"
        "    def deserialize(self, value):\n"
        "        return self._deserialize(value)\n"
        "\n"
        "    def _deserialize(self, value):\n"
        "        return value\n"
        "\n"
        "\n"
        "class TimeDelta(Field):\n"
        "    def _deserialize(self, value):\n"
        "        return int(value) * 86400\n"
        "\n"
        "\n"
        "class Unrelated:\n"
        "    def _deserialize(self, value):\n"
        "        return None\n"
    ))
    write(ws, "test_fields.py", (
        "from fields import TimeDelta, Unrelated\n\n\n"
        "def test_days():\n    assert TimeDelta().deserialize('1') == 86400\n    Unrelated()\n"
    ))
    got = reached(walk_of(ws, tmp_path), [("test_fields.py", 5)])
    assert "fields.py:deserialize" in got
    walk = walk_of(ws, tmp_path)
    callees = walk.walk([("test_fields.py", 5)])
    lines = {(c.path, c.defn.line) for c in callees}
    assert ("fields.py", 10) in lines  # TimeDelta._deserialize, through Field.deserialize's self._deserialize()
    assert ("fields.py", 15) not in lines  # Unrelated is reached, but does not derive from Field


def test_suffix_family_and_bare_getattr_reach_the_methods_the_failure_names(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "gen.py", (
        "class Generator:\n"
        "    def sql(self, e):\n"
        "        return getattr(self, f'{e.key}_sql')(e)\n"
        "\n"
        "    def column_sql(self, e):\n"
        "        return e.name\n"
        "\n"
        "    def table_sql(self, e):\n"
        "        return e.name\n"
        "\n"
        "\n"
        "class Checker:\n"
        "    def handle(self, node):\n"
        "        handler = getattr(self, type(node).__name__.upper())\n"
        "        return handler(node)\n"
        "\n"
        "    def IMPORTFROM(self, node):\n"
        "        return node\n"
        "\n"
        "    def CLASSDEF(self, node):\n"
        "        return node\n"
    ))
    write(ws, "test_gen.py", (
        "from gen import Checker, Generator\n\n\n"
        "def test_column():\n    assert Generator().sql(column('a')) == 'a'\n\n\n"
        "def test_import():\n    assert Checker().handle(parse('from importfrom import x'))\n"
    ))
    got = reached(walk_of(ws, tmp_path), [("test_gen.py", 5)])
    assert {"gen.py:column_sql", "gen.py:table_sql"} <= got.keys()
    assert got["gen.py:column_sql"] > got["gen.py:table_sql"]  # the test says column
    got = reached(walk_of(ws, tmp_path), [("test_gen.py", 9)])
    assert {"gen.py:IMPORTFROM", "gen.py:CLASSDEF"} <= got.keys()
    assert got["gen.py:IMPORTFROM"] > got["gen.py:CLASSDEF"]  # an all-caps name is one word: importfrom
