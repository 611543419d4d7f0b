"""A bug no commit points at (issue 34, `imported`): the failure's own words rank the callee walk
(the test's name boosts callees named so; a literal the failure quotes seeds a definition of that
name), and the walk reaches more of what runs: a table entry picked into a name and called, a
property read on self, a JavaScript class's constructor, `x.m()` of the class the body constructs,
the calls of the test's own helpers. Real tree-sitter parses of small projects."""

from __future__ import annotations

from pathlib import Path

from qwen_lsp.context.callees import MAX_OUTLINE_MEMBERS, CalleeWalk, render_callees
from qwen_lsp.context.dispatch import dispatches
from qwen_lsp.context.failwords import message_phrases, name_stems, stem, stems_of_test_name
from qwen_lsp.context.reached import failure_message
from qwen_lsp.context.frames import Frame
from qwen_lsp.context.repomap import build_index
from qwen_lsp.context.treesitter import parse
from tests.context.helpers import walk_of, write, write_all


def ranked(walk: CalleeWalk, start: tuple[str, int], message: str = "") -> list[str]:
    return [f"{c.path}:{c.defn.name}" for c in walk.walk([start], walk.hints(*start, message))]


def scores(walk: CalleeWalk, start: tuple[str, int], message: str = "") -> dict[str, float]:
    return {f"{c.path}:{c.defn.name}": c.score for c in walk.walk([start], walk.hints(*start, message))}


# --------------------------------------------------------------------------- words


def test_stems_meet_the_usual_forms_of_a_word() -> None:
    assert stem("dates") == stem("date") and stem("parsing") == stem("parse") and stem("slicing") == stem("slice")
    assert stem("options") == stem("option") and stem("class") == "class"


def test_name_stems_split_snake_and_camel_case_and_keep_the_whole_name() -> None:
    assert name_stems("sync_do_select") == {"sync", "select", "syncdoselect"}
    assert {"such", "option", "nosuchoption"} <= name_stems("NoSuchOption")
    assert "selectattr" in name_stems("do_selectattr")
    # the test's words and each two of them run together: select attr -> selectattr
    words = stems_of_test_name(["simple", "select", "attr"], frozenset({"simple"}))
    assert {"select", "attr", "selectattr"} <= words and "simple" not in words


def test_message_phrases_are_the_words_of_quoted_literals() -> None:
    message = "AssertionError: assert 'No such option: --foo' in \"Usage: cli [OPTIONS]\""
    assert message_phrases(message) == [["no", "such", "option", "foo"], ["usage", "cli", "options"]]
    assert message_phrases("LookupError: unknown encoding: idna2008") == []


def test_failure_message_is_the_first_errors() -> None:
    frames = [Frame(path="/w/a.py", line=1, message="", severity="info"),
              Frame(path="/w/t.py", line=3, message="AssertionError: assert 'x y' == 'y'", severity="error")]
    assert failure_message(frames) == "AssertionError: assert 'x y' == 'y'"
    assert failure_message([]) == ""


# --------------------------------------------------------------------------- ranking by the failure's words

WORDED = {
    "lib/filters.py": (
        "def do_select(xs):\n"
        "    a = prepare(xs)\n"
        "    b = convert(xs)\n"
        "    c = normalize(xs)\n"
        "    return sync_do_select(a, b, c)\n"
        "\n"
        "\n"
        "def prepare(xs):\n    return xs\n\n\n"
        "def convert(xs):\n    return xs\n\n\n"
        "def normalize(xs):\n    return xs\n\n\n"
        "def sync_do_select(a, b, c):\n    return [x for x in a if x]\n"
    ),
    "tests/test_filters.py": (
        "from lib.filters import do_select\n"
        "\n"
        "\n"
        "def test_simple_select():\n"
        "    assert do_select([1, 0]) == [1]\n"
    ),
}


def test_a_callee_named_like_the_test_ranks_above_its_siblings(tmp_path: Path) -> None:
    ws = write_all(tmp_path / "ws", WORDED)
    got = scores(walk_of(ws, tmp_path), ("tests/test_filters.py", 5))
    siblings = [got[f"lib/filters.py:{n}"] for n in ("prepare", "convert", "normalize")]
    assert got["lib/filters.py:sync_do_select"] > max(siblings)
    assert got["lib/filters.py:sync_do_select"] < got["tests/test_filters.py:test_simple_select"]  # below the start


MESSAGE_PROJECT = {
    "cli/errors.py": (
        "class UsageError(Exception):\n"
        "    def __init__(self, message):\n"
        "        self.message = message\n"
        "\n"
        "\n"
        "class NoSuchOption(UsageError):\n"
        "    def __init__(self, name):\n"
        "        super().__init__(f'No such option: {name}')\n"
    ),
    "cli/core.py": "def run(args):\n    return parse(args)\n\n\ndef parse(args):\n    return args\n",
    "tests/test_cli.py": (
        "from cli.core import run\n"
        "\n"
        "\n"
        "def test_unknown():\n"
        "    assert 'No such option: --foo' in run(['--foo'])\n"
    ),
}


def test_a_literal_the_failure_quotes_seeds_the_definition_it_spells(tmp_path: Path) -> None:
    ws = write_all(tmp_path / "ws", MESSAGE_PROJECT)
    message = "AssertionError: assert 'No such option: --foo' in 'Error: None'"
    got = ranked(walk_of(ws, tmp_path), ("tests/test_cli.py", 5), message)
    assert "cli/errors.py:NoSuchOption" in got and "cli/errors.py:__init__" in got
    assert "cli/errors.py:NoSuchOption" not in ranked(walk_of(ws, tmp_path), ("tests/test_cli.py", 5))


# --------------------------------------------------------------------------- what runs without a name at the call


def test_a_table_entry_picked_into_a_name_and_called_is_a_table_dispatch(tmp_path: Path) -> None:
    src = ("class E:\n"
           "    def _eval(self, node):\n"
           "        handler = self.nodes[type(node)]\n"
           "        return handler(node)\n"
           "\n"
           "    def other(self, node):\n"
           "        value = self.cache[node]\n"
           "        return value\n")
    tree = parse(src, "python")
    assert [(d.kind, d.names) for d in dispatches(tree, "python", 2, 4) if d.kind == "table"] == [("table", ("self.nodes",))]
    assert not [d for d in dispatches(tree, "python", 6, 8) if d.kind == "table"]  # picked, never called
    ws = tmp_path / "ws"
    write(ws, "ev.py", (
        "class Evaluator:\n"
        "    def __init__(self):\n"
        "        self.nodes = {int: self._eval_num, str: self._eval_compare}\n"
        "\n"
        "    def eval(self, node):\n"
        "        handler = self.nodes[type(node)]\n"
        "        return handler(node)\n"
        "\n"
        "    def _eval_num(self, node):\n        return node\n\n"
        "    def _eval_compare(self, node):\n        return node == node\n"
    ))
    write(ws, "tests/test_ev.py", "from ev import Evaluator\n\n\ndef test_if_else():\n    assert Evaluator().eval('1') == 1\n")
    got = ranked(walk_of(ws, tmp_path), ("tests/test_ev.py", 5))
    assert "ev.py:_eval_compare" in got and "ev.py:_eval_num" in got


def test_a_property_read_on_self_runs_the_property(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "bar.py", (
        "import functools\n"
        "\n"
        "\n"
        "class Bar:\n"
        "    def __init__(self, n):\n"
        "        self.n = n\n"
        "\n"
        "    @property\n"
        "    def pct(self):\n"
        "        return self.n / 100\n"
        "\n"
        "    @functools.cached_property\n"
        "    def eta(self):\n"
        "        return 1\n"
        "\n"
        "    def limit(self):\n"
        "        return 3\n"
        "\n"
        "    def render(self):\n"
        "        return f'{self.pct} {self.eta} {self.limit}'\n"
    ))
    write(ws, "tests/test_bar.py", "from bar import Bar\n\n\ndef test_render():\n    assert Bar(5).render() == ''\n")
    got = ranked(walk_of(ws, tmp_path), ("tests/test_bar.py", 5))
    assert "bar.py:pct" in got and "bar.py:eta" in got
    assert "bar.py:limit" not in got  # a plain method read, not called, runs nothing


def test_new_of_a_js_class_runs_its_constructor(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "src/cart.js", (
        "class Cart {\n"
        "  constructor(currency) {\n"
        "    this.currency = currency;\n"
        "    this.lines = [];\n"
        "  }\n"
        "}\n"
        "module.exports = { Cart };\n"
    ))
    write(ws, "test/cart.test.js", (
        "const { Cart } = require('../src/cart');\n"
        "test('empty', () => {\n"
        "  const cart = new Cart('EUR');\n"
        "  expect(cart.lines).toEqual([]);\n"
        "});\n"
    ))
    got = ranked(walk_of(ws, tmp_path), ("test/cart.test.js", 4))
    assert "src/cart.js:constructor" in got


def test_a_method_call_means_the_class_the_body_constructs(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "spec.py", (
        "class Specifier:\n"
        "    def filter(self, xs):\n"
        "        return xs\n"
        "\n"
        "\n"
        "class SpecifierSet:\n"
        "    def filter(self, xs):\n"
        "        return [x for x in xs if x]\n"
    ))
    # the test's name spells Specifier (a hint reaches it first); the body makes a SpecifierSet
    write(ws, "tests/test_spec.py", (
        "from spec import SpecifierSet\n"
        "\n"
        "\n"
        "def test_specifier_filter():\n"
        "    spec = SpecifierSet()\n"
        "    assert spec.filter([1]) == [1]\n"
    ))
    walk = walk_of(ws, tmp_path)
    callees = walk.walk([("tests/test_spec.py", 6)], walk.hints("tests/test_spec.py", 6))
    filters = {c.defn.line: c.score for c in callees if c.defn.name == "filter"}
    assert filters.get(7, 0) > filters.get(2, 0)  # SpecifierSet.filter, not the hinted Specifier's


def test_a_helper_of_the_test_file_passes_its_rank_on(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "lib/complete.py", "def complete(cli, args):\n    return resolve(cli, args)\n\n\ndef resolve(cli, args):\n    return args\n")
    write(ws, "tests/test_complete.py", (
        "from lib.complete import complete\n"
        "\n"
        "\n"
        "def _get_words(cli, args):\n"
        "    return complete(cli, args)\n"
        "\n"
        "\n"
        "def test_command():\n"
        "    assert _get_words(None, []) == [1]\n"
    ))
    got = scores(walk_of(ws, tmp_path), ("tests/test_complete.py", 9))
    # the helper itself ranks low (test code), what it calls as if the test called it
    assert got["tests/test_complete.py:_get_words"] < got["lib/complete.py:complete"]


# --------------------------------------------------------------------------- rendering within the budget


def test_a_class_outline_lists_the_reached_members_first_and_says_how_many_are_left(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    members = "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(30))
    write(ws, "big.py", f"class Big:\n{members}    def used(self):\n        return 1\n")
    write(ws, "tests/test_big.py", "from big import Big\n\n\ndef test_big():\n    assert Big().used() == 1\n")
    walk = walk_of(ws, tmp_path)
    callees = walk.walk([("tests/test_big.py", 5)], walk.hints("tests/test_big.py", 5))
    text = render_callees(walk, callees, 4000, [])
    outline = text[text.index("class outline"):]
    assert "def used(self)" in outline and f"({31 - MAX_OUTLINE_MEMBERS} more members)" in outline
    assert "def m29(self)" not in outline and "def m0(self)" in outline


def test_an_operator_of_the_test_runs_on_a_class_reached_later(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "lib/items.py", (
        "def item(value):\n"
        "    return Integer(value)\n"
        "\n"
        "\n"
        "class Integer:\n"
        "    def __init__(self, value):\n"
        "        self.value = value\n"
        "\n"
        "    def __truediv__(self, other):\n"
        "        return Integer(self.value / other)\n"
    ))
    # `i /= 2` is seen before `item()` is followed to the Integer it makes
    write(ws, "tests/test_items.py", "from lib.items import item\n\n\ndef test_halves():\n    i = item(34)\n    i /= 2\n    assert i\n")
    got = ranked(walk_of(ws, tmp_path), ("tests/test_items.py", 7))
    assert "lib/items.py:__truediv__" in got


def test_a_builtin_like_name_the_test_imports_is_no_guess(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "src/rules.js", "function compile(text) {\n  return text.trim();\n}\nmodule.exports = { compile };\n")
    write(ws, "test/rules.test.js", (
        "const rules = require('../src/rules');\n"
        "test('a rule must be whole', () => {\n"
        "  rules.compile('qty > 3 )');\n"
        "});\n"
    ))
    got = scores(walk_of(ws, tmp_path), ("test/rules.test.js", 3))
    assert got["src/rules.js:compile"] >= 0.5  # ranked as any call, not discounted as a builtin's name


def test_a_unittest_class_names_the_unit_its_run_test_exercises(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "tests/test_simple.py", (
        "import unittest\n"
        "\n"
        "\n"
        "class TestCombine(unittest.TestCase):\n"
        "    def runTest(self):\n"
        "        self.assertTrue(1)\n"
    ))
    walk = walk_of(ws, tmp_path)
    walk.hints("tests/test_simple.py", 6)
    assert stem("combine") in walk.name_words and "run" not in walk.name_words


def test_a_long_callee_touched_all_over_takes_no_more_than_its_share(tmp_path: Path) -> None:
    from qwen_lsp.llm.tokens import count_tokens

    ws = tmp_path / "ws"
    body = "".join(f"    total_{i} = helper(x, {i}) + helper(x, {i + 1})\n" for i in range(120))
    write(ws, "long.py", f"def long_one(x):\n{body}    return total_0\n\n\ndef helper(x, i):\n    return x + i\n")
    write(ws, "test_long.py", "from long import long_one\n\n\ndef test_sum():\n    assert long_one(1) == 2\n")
    walk = walk_of(ws, tmp_path)
    callees = walk.walk([("test_long.py", 5)], walk.hints("test_long.py", 5))
    text = render_callees(walk, callees, 4000, [])
    block = next(b for b in text.split("\n\n") if "long.py lines 1-" in b)
    assert "(cut;" in block and count_tokens(block) <= 4000 // 4
    assert "def helper(x, i):" in text  # the budget left goes to the shorter bodies below it


def test_a_filter_the_tests_name_spells_outranks_the_other_filters(tmp_path: Path) -> None:
    from qwen_lsp.context.callees import name_matches

    ws = tmp_path / "ws"
    write(ws, "filters.py", "".join(f"def do_{n}(xs):\n    return xs\n\n\n" for n in ("map", "join", "selectattr")))
    found = {d.name: s for _, d, s in name_matches(build_index(ws, cache_dir=tmp_path / "cache"),
                                                   ["simple", "select", "attr"], ["map", "selectattr", "join"])}
    assert found["do_selectattr"] > found["do_map"] == found["do_join"]
