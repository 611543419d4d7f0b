"""The pure parts of bench/bench_recall.py: its mutation operators and its scoring rule, so the
bench cannot silently score everything as found (or produce mutants that do not differ)."""

from __future__ import annotations

import ast

from bench.recall.mutate import apply, candidates, parses
from bench.recall.score import code_lines, function_lines, shown

SOURCE = '''\
import re


class Parser:
    def split(self, text, limit=2):
        """Split on commas.

        Extra text.
        """
        parts = []
        count = 0
        for piece in text.split(","):
            # a comment the scorer skips
            if count < limit and piece:
                parts.append(piece.strip())
                count += 1
        return parts


def total(values):
    result = 0
    for v in values:
        result = result + v
    return result
'''


def test_every_operator_yields_a_parsing_mutant_that_differs_on_one_line() -> None:
    muts = candidates(SOURCE)
    assert {m.operator for m in muts} >= {"compare", "arith", "boolop", "off_by_one", "wrong_variable",
                                          "inverted_condition", "dropped_statement"}
    for m in muts:
        mutant = apply(SOURCE, m)
        assert parses(mutant), m
        assert mutant != SOURCE
        changed = [i + 1 for i, (a, b) in enumerate(zip(SOURCE.splitlines(), mutant.splitlines())) if a != b]
        assert changed == [m.line] and len(mutant.splitlines()) == len(SOURCE.splitlines())
        assert ast.dump(ast.parse(mutant)) != ast.dump(ast.parse(SOURCE))  # not only a spacing change
    split = [m for m in muts if m.function.qualname == "Parser.split"]
    assert split and all(m.function.def_line == 5 and m.function.end_line == 17 for m in split)
    assert any(m.mutated.strip() == "if count <= limit and piece:" for m in split)
    assert any(m.mutated.strip() == "result = result - v" for m in muts)


def _function(mutant: str) -> list[tuple[int, str]]:
    return code_lines(mutant, 5, 17)


MUTANT = SOURCE.replace("if count < limit and piece:", "if count <= limit and piece:")
LINE = 14


def test_code_lines_skip_docstring_comments_and_blank_lines() -> None:
    texts = [t for _, t in _function(MUTANT)]
    assert texts[0] == "def split(self, text, limit=2):"
    assert "Extra text." not in texts and not any(t.startswith("#") for t in texts)
    assert "if count <= limit and piece:" in texts


def test_a_function_shown_with_a_line_gutter_is_found() -> None:
    shown_lines = MUTANT.splitlines()[4:17]
    prompt = "# Files\n\n" + "\n".join(f"{n:>5}│{t}" for n, t in enumerate(shown_lines, start=5)) + "\n# Task\n"
    assert shown(prompt, _function(MUTANT), LINE)


def test_a_diff_hunk_with_its_context_is_found() -> None:
    prompt = """diff --git a/p.py b/p.py
@@ -11,7 +11,7 @@ class Parser:
         count = 0
         for piece in text.split(","):
             # a comment the scorer skips
-            if count < limit and piece:
+            if count <= limit and piece:
                 parts.append(piece.strip())
                 count += 1
         return parts
"""
    assert shown(prompt, _function(MUTANT), LINE)


def test_a_signature_alone_or_the_unmutated_code_is_not_found() -> None:
    repo_map = "p.py:\n    5│    def split(self, text, limit=2):\n   20│def total(values):\n"
    assert not shown(repo_map, _function(MUTANT), LINE)
    original = "\n".join(SOURCE.splitlines()[4:17])  # the code before the bug: the mutated line is missing
    assert not shown(original, _function(MUTANT), LINE)


def test_a_lone_matching_line_elsewhere_is_not_found() -> None:
    prompt = "def other():\n    if count <= limit and piece:\n        return parts\n"
    assert not shown(prompt, _function(MUTANT), LINE)
    # the def line and the mutated line, without the body in between, are not the function either
    prompt = "def split(self, text, limit=2):\n    ...\nif count <= limit and piece:\n"
    assert not shown(prompt, _function(MUTANT), LINE)


def test_a_function_shown_whole_with_a_long_docstring_is_found() -> None:
    doc = "\n".join(f"        line {i} of a long docstring" for i in range(30))
    source = f'def stagger(iterable):\n    """Yield.\n\n{doc}\n    """\n    children = None\n\n    return zip(\n        *children\n    )\n'
    code, other = function_lines(source, 1, source.count("\n"))
    assert [t for _, t in code] == ["def stagger(iterable):", "children = None", "return zip(", "*children", ")"]
    assert shown("```python\n" + source + "```\n", code, 35, other)
    assert not shown("```python\n" + source + "```\n", code, 35)  # its 33 docstring lines are a gap otherwise


def test_a_hunk_named_by_its_def_line_is_found_a_hunk_named_by_the_class_is_not() -> None:
    source = "def total(values):\n    result = 0\n    for v in values:\n        result = result - v\n    return result\n"
    code, other = function_lines(source, 1, 5)
    hunk = "@@ -3,3 +3,3 @@ {}\n     for v in values:\n-        result = result + v\n+        result = result - v\n     return result\n"
    assert shown(hunk.format("def total(values):"), code, 4, other)
    assert not shown(hunk.format("class Totals:"), code, 4, other)
    removed_only = "@@ -3,3 +3,3 @@ def total(values):\n-        result = result - v\n+        result = result + v\n"
    assert not shown(removed_only, code, 4, other)  # the function as it was, not as it is


def test_javascript_mutants_differ_on_one_line_outside_strings_and_are_scored() -> None:
    from bench.recall.jsbuild import candidates, line_mutations

    line = "    if (this.minor < other.minor && flag === 'a < b') return -1;"
    muts = dict(line_mutations(line))
    assert "compare" in muts and "boolop" in muts and "off_by_one" in muts
    for op, mutated in line_mutations(line):
        assert mutated != line
        assert op == "dropped_statement" or "'a < b'" in mutated  # the string is never mutated
    source = "'use strict';\n\nfunction cmp(a, b) {\n  // which is first\n  if (a < b) return -1;\n  return a > b ? 1 : 0;\n}\n"
    found = candidates("src/cmp.js", source)
    assert found and {c["function"] for c in found} == {"cmp"} and all(4 <= c["line"] <= 6 for c in found)
    code, _other = function_lines(source, 3, 7)
    assert [t for _, t in code] == ["function cmp(a, b) {", "if (a < b) return -1;", "return a > b ? 1 : 0;", "}"]
    assert shown("```js\n" + source + "```\n", code, 5)


def test_shapes_name_how_a_function_is_reached_without_a_plain_call() -> None:
    from bench.recall.shapes import shapes

    module = '''\
HANDLERS = {"add": on_add, "drop": Ops.on_drop}
__all__ = ["Plain"]


def on_add(x):
    return x


class Ops:
    def on_drop(self, x):
        return x


class Visitor:
    def visit(self, node):
        return getattr(self, "visit_" + node.kind)(node)

    def visit_Name(self, node):
        return node

    def NAME(self, node):
        return node

    def __eq__(self, other):
        return True

    def __init__(self):
        self.mode = "strict"


class Gen:
    def gen(self, e):
        return getattr(self, f"{e.key}_sql")(e)

    def column_sql(self, e):
        return e


class Plain:
    def strict(self):
        return 1

    def helper(self):
        return 2


registry.register(Plain(), "plain")
'''
    got = shapes({"m.py": module})
    assert got[("m.py", "on_add")] == "table"
    assert got[("m.py", "Ops.on_drop")] == "table"
    assert got[("m.py", "Visitor.visit_Name")] == "visitor"
    assert got[("m.py", "Visitor.NAME")] == "visitor"  # pyflakes' upper-case handlers
    assert got[("m.py", "Gen.column_sql")] == "visitor"
    assert got[("m.py", "Visitor.__eq__")] == "dunder"
    assert ("m.py", "Visitor.__init__") not in got  # a constructor is called by its class's name
    assert ("m.py", "Visitor.visit") not in got and ("m.py", "Gen.gen") not in got
    # Plain is handed to register() as a new instance: its methods run from the registry
    assert got[("m.py", "Plain.helper")] == "table"
    # a name given as a string elsewhere (not __all__, not a docstring)
    assert shapes({"n.py": 'MODE = "strict"\n\n\nclass P:\n    def strict(self):\n        return 1\n'
                          '\n    def other(self):\n        return 2\n'}) == {("n.py", "P.strict"): "by-name"}
    assert shapes({"n.py": '__all__ = ["P"]\n\n\nclass P:\n    def strict(self):\n        return 1\n'}) == {}
