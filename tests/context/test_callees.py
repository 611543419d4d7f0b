"""The callee walk: calls resolved through imports, methods, constructors, partial() and
decorators, ranked, and rendered whole with docstrings elided; the test's name as a weak signal."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwen_lsp.context.callees import CalleeWalk, name_matches, render_callees
from qwen_lsp.context.callsites import call_sites, python_bindings, words_of_test_name, Binding
from qwen_lsp.context.repomap import build_index
from qwen_lsp.context.source import read_source
from qwen_lsp.context.treesitter import parse
from qwen_lsp.llm.tokens import count_tokens
from tests.context.helpers import write
from tests.context.reach_project import break_it, make_package


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = make_package(tmp_path / "ws")
    break_it(root)
    return root


def walk_of(ws: Path, tmp_path: Path) -> CalleeWalk:
    return CalleeWalk(build_index(ws, cache_dir=tmp_path / "cache"), lambda rel: read_source(ws, rel))


def names(callees) -> list[str]:
    return [f"{c.path}:{c.defn.name}" for c in callees]


def test_sites_of_a_body_name_calls_values_decorators_and_receivers() -> None:
    src = "@register\n@pkg.hook(1)\ndef f(self, xs):\n    g(1)\n    self.h(partial(k, 2), key=m)\n    np.sort(xs)\n    return map(self.conv, xs)\n"
    tree = parse(src, "python")
    sites = {(s.name, s.receiver, s.kind) for s in call_sites(tree, "python", 1, 7)}
    assert {("g", None, "call"), ("h", "self", "call"), ("partial", None, "call"), ("k", None, "value"),
            ("m", None, "value"), ("sort", "np", "call"), ("conv", "self", "value"), ("register", None, "decorator"),
            ("hook", "pkg", "call")} <= sites


def test_python_bindings_of_imports() -> None:
    tree = parse("import os.path\nimport numpy as np\nfrom . import util\nfrom ..a.b import c as d, e\n", "python")
    assert python_bindings(tree) == {
        "os": Binding("os", None), "np": Binding("numpy", None), "util": Binding(".", "util"),
        "d": Binding("..a.b", "c"), "e": Binding("..a.b", "e"),
    }
    assert Binding(".", "util").qualified == ".util" and Binding("a.b", "c").qualified == "a.b.c"


def test_walk_from_the_test_reaches_the_bug_two_calls_down(ws: Path, tmp_path: Path) -> None:
    walk = walk_of(ws, tmp_path)
    callees = walk.walk([("tests/test_choice.py", 6), ("pkg/core.py", 21)])
    found = names(callees)
    # The starts (the test function and the frame's method), then what they call.
    assert set(found[:2]) == {"tests/test_choice.py:test_case_insensitive_choice", "pkg/core.py:convert"}
    for expected in (
        "pkg/core.py:Choice",  # the constructor call, through the package's re-export
        "pkg/core.py:__init__",  # ... and the class's __init__
        "pkg/core.py:_fold",  # self._fold()
        "pkg/core.py:cached",  # the decorator of convert
        "pkg/util.py:fold_all",  # imported by name
        "pkg/util.py:normalize",  # util.normalize() through the module import, and partial(normalize, ...)
    ):
        assert expected in found, (expected, found)
    # Path.convert shares the name but no call reaches its class: the reached Choice's method is meant.
    assert "pkg/core.py:convert" in found and sum(1 for n in found if n.endswith(":convert")) == 1
    score = {f"{c.path}:{c.defn.name}": c.score for c in callees}
    assert score["pkg/core.py:_fold"] > score["pkg/util.py:normalize"]  # one level further down counts less


def test_a_function_passed_to_partial_is_a_callee(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root, "a.py", "from functools import partial\nfrom b import helper\n\n\ndef run(xs):\n    return list(map(partial(helper, 2), xs))\n")
    write(root, "b.py", "def helper(n, x):\n    return n * x\n")
    walk = walk_of(root, tmp_path)
    assert "b.py:helper" in names(walk.walk([("a.py", 6)]))


def test_ambiguous_method_names_are_not_followed_through_the_index(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    for i in range(8):  # `run` defined in eight classes: obj.run() could be any of them
        write(root, f"m{i}.py", f"class C{i}:\n    def run(self):\n        return {i}\n")
    write(root, "main.py", "def go(obj):\n    return obj.run()\n")
    walk = walk_of(root, tmp_path)
    assert names(walk.walk([("main.py", 2)])) == ["main.py:go"]


def test_words_of_test_name_and_template_filters_point_at_definitions(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root, "types.py", "class Choice:\n    pass\n\n\nclass IntRange:\n    pass\n")
    write(root, "filters.py", "def do_min(xs):\n    return max(xs)\n\n\ndef do_max(xs):\n    return max(xs)\n")
    write(root, "test_x.py", "def test_case_insensitive_choice():\n    assert render('{{ xs|min }}') == '1'\n")
    assert words_of_test_name("test_case_insensitive_choice") == ["case", "insensitive", "choice"]
    walk = walk_of(root, tmp_path)
    hinted = {f"{p}:{d.name}" for p, d, _ in walk.hints("test_x.py", 2)}
    assert hinted == {"types.py:Choice", "filters.py:do_min"}
    # Weak: a hint never outranks a direct call.
    assert all(score < 0.6 for *_, score in walk.hints("test_x.py", 2))
    assert name_matches(walk.index, ["int", "range"], []) and not name_matches(walk.index, ["nothing"], [])


def test_bodies_are_whole_with_docstrings_elided_and_shown_spans_skipped(ws: Path, tmp_path: Path) -> None:
    long_body = "\n".join(f"    x{i} = value + {i}" for i in range(120))
    write(ws, "pkg/big.py", f'def big(value):\n    """One line.\n\n    More.\n    """\n{long_body}\n    return x119\n')
    write(ws, "pkg/user.py", "from pkg.big import big\n\n\ndef use(v):\n    return big(v)\n")
    walk = walk_of(ws, tmp_path)
    callees = walk.walk([("pkg/user.py", 5)])
    text = render_callees(walk, callees, 8000, shown=[])
    assert "    return x119" in text and '"""One line. … """' in text and "More." not in text  # whole, 120+ lines
    # The start (already in the prompt as a frame) is not repeated.
    assert "def use(v)" in text
    assert "def use(v)" not in render_callees(walk, callees, 8000, shown=[("pkg/user.py", 1, 5)])
    # Bigger than half the budget: cut at the budget, and the cut says where the rest is.
    small = render_callees(walk, callees, 600, shown=[("pkg/user.py", 1, 5)])
    assert count_tokens(small) <= 600 and "(cut; called from pkg/user.py use)" in small and "read_file pkg/big.py lines 1-126 for the rest" in small


def test_overload_stubs_and_nested_helpers_elsewhere_are_not_callees(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root, "deco.py", (
        "from typing import overload\n\n\n@overload\ndef command(name: str) -> int: ...\n\n\n"
        "@overload\ndef command(name: None) -> int: ...\n\n\ndef command(name=None):\n    return 1\n"))
    write(root, "other.py", "def outer():\n    def helper_fn():\n        return 2\n    return helper_fn()\n")
    write(root, "main.py", "from deco import command\n\n\ndef go(x):\n    x.helper_fn()\n    return command('a')\n")
    found = names(walk_of(root, tmp_path).walk([("main.py", 6)]))
    assert found == ["main.py:go", "deco.py:command"]
    (impl,) = [c for c in walk_of(root, tmp_path).walk([("main.py", 6)]) if c.defn.name == "command"]
    assert impl.defn.line == 12


def test_a_frame_snippet_elides_docstrings_unless_the_failure_is_in_one() -> None:
    from qwen_lsp.context.source import focus

    text = 'def f(x):\n    """Summary.\n\n    >>> f(1)\n    2\n    """\n    pass\n    return g(x)\n'
    assert focus(text, "python", 8).text == 'def f(x):\n    """Summary. … """\n    pass\n    return g(x)'
    assert ">>> f(1)" in focus(text, "python", 4).text  # a failing doctest keeps its docstring


def test_a_builtin_like_method_name_is_followed_into_the_class_the_test_builds(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root, "spec.py", "class SpecifierSet:\n    def filter(self, xs):\n        return [x for x in xs if x]\n")
    write(root, "other.py", "class Query:\n    def filter(self, xs):\n        return xs\n")
    write(root, "test_spec.py", "from spec import SpecifierSet\n\n\ndef test_filter():\n    s = SpecifierSet()\n    assert s.filter([0, 1]) == [1]\n")
    found = names(walk_of(root, tmp_path).walk([("test_spec.py", 6)]))
    assert "spec.py:filter" in found and "other.py:filter" not in found


def test_a_cycle_of_re_exports_ends(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root, "a/__init__.py", "from b import thing\n")
    write(root, "b/__init__.py", "from a import thing\n")
    write(root, "main.py", "from a import thing\n\n\ndef go():\n    return thing()\n")
    assert names(walk_of(root, tmp_path).walk([("main.py", 5)])) == ["main.py:go"]


def test_a_parse_cache_serves_unchanged_files_across_walks_and_sees_an_edited_buffer(ws: Path, tmp_path: Path) -> None:
    from qwen_lsp.context.callees import ParseCache
    from qwen_lsp.context.index import WorkspaceIndex

    live = WorkspaceIndex(ws, cache_dir=tmp_path / "cache")
    buffers: dict[str, str] = {}
    cache = ParseCache()

    def walk() -> CalleeWalk:
        return CalleeWalk(live.tag_index(), lambda rel: read_source(ws, rel, buffers.get), cache)

    starts = [("tests/test_choice.py", 6), ("pkg/core.py", 21)]
    first_walk = walk()
    first = first_walk.walk(starts)
    second_walk = walk()
    assert names(second_walk.walk(starts)) == names(first)
    assert second_walk.parsed("pkg/core.py") is first_walk.parsed("pkg/core.py")  # not parsed again

    # The buffer of the frame's file now calls a new helper: the walk must follow the new text.
    core = (ws / "pkg/core.py").read_text()
    assert "        raise ValueError(value)\n" in core
    buffers["pkg/core.py"] = core.replace("        raise ValueError(value)\n", "        helper_added()\n        raise ValueError(value)\n") + (
        "\n\ndef helper_added():\n    return 1\n")
    live.set_text("pkg/core.py", buffers["pkg/core.py"])
    edited = walk()
    assert edited.parsed("pkg/core.py") is not first_walk.parsed("pkg/core.py")
    found = names(edited.walk(starts))
    assert "pkg/core.py:helper_added" in found
    assert found == names(CalleeWalk(live.tag_index(), lambda rel: read_source(ws, rel, buffers.get)).walk(starts))
