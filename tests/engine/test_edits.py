"""apply_edit: exact -> whitespace -> fuzzy matching, errors written for the model."""

from __future__ import annotations

import pytest

from qwen_lsp.engine.edits import EditError, apply_edit, unified_diff

PY = """\
class Greeter:
    def greet(self, name):
        if not name:
            return "hello"
        return f"hello {name}"

    def bye(self):
        return "bye"
"""

# --- successful edits: (old, new) -> exact resulting text --------------------------

CASES = [
    pytest.param(
        PY,
        '        return "bye"\n',
        '        return "goodbye"\n',
        PY.replace('"bye"', '"goodbye"'),
        "exact",
        (8, 8),
        id="exact",
    ),
    pytest.param(
        PY,
        # the method body given at column 0 instead of 8
        'if not name:\n    return "hello"\nreturn f"hello {name}"',
        'if not name:\n    raise ValueError("name")\nname = name.strip()\nreturn f"hello {name}"',
        PY.replace(
            '            return "hello"\n',
            '            raise ValueError("name")\n        name = name.strip()\n',
        ),
        "whitespace",
        (3, 5),
        id="indentation-drift",
    ),
    pytest.param(
        PY,
        # single line without its indentation; new adds a nested block
        'return "bye"',
        'if self.polite:\n    return "goodbye"\nreturn "bye"',
        PY.replace(
            '        return "bye"\n',
            '        if self.polite:\n            return "goodbye"\n        return "bye"\n',
        ),
        "whitespace",
        (8, 8),
        id="exact-substring-inside-indentation-is-reindented",
    ),
    pytest.param(
        PY,
        "    def bye(self):   \n        return \"bye\"  \n",
        "    def bye(self):\n        return \"ciao\"\n",
        PY.replace('"bye"', '"ciao"'),
        "whitespace",
        (7, 8),
        id="trailing-spaces-in-old",
    ),
    pytest.param(
        "func f() {\n\tif x {\n\t\treturn 1\n\t}\n}\n",
        "    if x {\n        return 1\n    }\n",
        "    if x {\n        log()\n        return 1\n    }\n",
        "func f() {\n\tif x {\n\t\tlog()\n\t\treturn 1\n\t}\n}\n",
        "whitespace",
        (2, 4),
        id="tabs-in-file-spaces-in-old",
    ),
    pytest.param(
        "def f():\n    x = 1\n    y = 2\n",
        "def f():\n\tx = 1\n\ty = 2\n",
        "def f():\n\tx = 1\n\ty = 3\n",
        "def f():\n    x = 1\n    y = 3\n",
        "whitespace",
        (1, 3),
        id="spaces-in-file-tabs-in-old",
    ),
    pytest.param(
        PY,
        '\n\n    def bye(self):\n        return "bye"\n\n\n',
        '\n\n    def bye(self):\n        return "adios"\n\n\n',
        PY.replace('"bye"', '"adios"'),
        "whitespace",
        (7, 8),
        id="blank-line-padding-in-old",
    ),
    pytest.param(
        "function f() {\n  if (x) {\n    y();\n  }\n}\n",
        "if (x) {\n    y();\n}",
        "if (x) {\n    y();\n    z();\n}",
        "function f() {\n  if (x) {\n    y();\n    z();\n  }\n}\n",
        "whitespace",
        (2, 4),
        id="model-4-spaces-file-2-spaces",
    ),
    pytest.param(
        "class A:\n    def f(self):\n        x = 1\n        return x\n",
        "    x = 1\n    return x\n",
        "    x = 1\n    return x\n\ndef helper(self):\n    return 2\n",
        "class A:\n    def f(self):\n        x = 1\n        return x\n"
        "\n    def helper(self):\n        return 2\n",
        "whitespace",
        (3, 4),
        id="new-dedents-below-old",
    ),
    pytest.param(
        PY,
        "return 'bye'".replace("'", '"'),
        "return 'bye!'".replace("'", '"'),
        PY.replace('"bye"', '"bye!"'),
        "exact",
        (8, 8),
        id="single-line-substring-stays-exact",
    ),
    pytest.param(
        "a = 1\nb = 2\nc = 3\n",
        "b = 2\n",
        "",
        "a = 1\nc = 3\n",
        "exact",
        (2, 2),
        id="delete-a-line",
    ),
    pytest.param(
        "héllo wörld\n  ünïcode = '✓'\n",
        "ünïcode = '✓'",
        "ünïcode = '✗'",
        "héllo wörld\n  ünïcode = '✗'\n",
        "exact",
        (2, 2),
        id="unicode",
    ),
]


@pytest.mark.parametrize(("text", "old", "new", "expected", "strategy", "lines"), CASES)
def test_apply_edit(
    text: str, old: str, new: str, expected: str, strategy: str, lines: tuple[int, int]
) -> None:
    outcome = apply_edit(text, old, new)
    assert outcome.text == expected
    assert outcome.strategy == strategy
    assert (outcome.start_line, outcome.end_line) == lines
    assert outcome.similarity == 1.0


# --- fuzzy ----------------------------------------------------------------------

BLOCK = """\
def load(path):
    with open(path) as fh:
        data = json.load(fh)
    if not isinstance(data, dict):
        raise TypeError("expected an object")
    return data
"""


def test_fuzzy_one_character_typo_in_six_lines() -> None:
    text = "import json\n\n\n" + BLOCK + "\n\ndef other():\n    pass\n"
    old = BLOCK.replace("isinstance", "isinstanse")  # the model misremembered one character
    new = BLOCK.replace("an object", "a JSON object")
    outcome = apply_edit(text, old, new)
    assert outcome.strategy == "fuzzy"
    assert (outcome.start_line, outcome.end_line) == (4, 9)
    assert 0.95 < outcome.similarity < 1.0
    assert outcome.text == "import json\n\n\n" + new + "\n\ndef other():\n    pass\n"


def test_fuzzy_reindents_like_whitespace() -> None:
    text = "class Store:\n" + "".join("    " + line + "\n" for line in BLOCK.splitlines())
    old = BLOCK.replace("isinstance", "isinstanse")  # at column 0 and with a typo
    new = BLOCK.replace("return data", "return dict(data)")
    outcome = apply_edit(text, old, new)
    assert outcome.strategy == "fuzzy"
    assert outcome.text == text.replace("        return data", "        return dict(data)")


def test_fuzzy_two_near_identical_blocks_is_refused() -> None:
    twin = BLOCK.replace("def load", "def load_again")
    text = BLOCK + "\n" + twin
    old = BLOCK.replace("def load(path)", "def load_(path)").replace("isinstance", "isinstanse")
    with pytest.raises(EditError) as err:
        apply_edit(text, old, "x = 1\n", path="io.py")
    msg = str(err.value)
    assert "not found exactly in io.py" in msg
    assert "lines 1-6" in msg and "lines 8-13" in msg
    assert "more surrounding lines" in msg


def test_fuzzy_below_threshold_is_not_applied() -> None:
    old = BLOCK.replace("isinstance", "isinstanse")
    with pytest.raises(EditError, match="not found"):
        apply_edit(BLOCK, old, "x\n", fuzzy_threshold=0.999)


def test_fuzzy_not_used_for_a_single_line() -> None:
    # `x <= 1` vs `x < 1` is 90%+ similar but a different line; show it, don't edit it
    with pytest.raises(EditError, match=r"line 2 \(\d+% similar\)"):
        apply_edit("a = 0\nif x <= limit_value:\n    go()\n", "if x < limit_value:", "if x < 2:")


# --- errors -----------------------------------------------------------------------


def test_ambiguous_exact_lists_every_line() -> None:
    text = "x = 1\ny = 2\nx = 1\n"
    with pytest.raises(EditError) as err:
        apply_edit(text, "x = 1", "x = 3", path="m.py")
    assert str(err.value) == (
        "old_string matches 2 places in m.py (exactly), at lines 1, 3. "
        "Include more surrounding lines in old_string so it matches exactly one place."
    )


def test_ambiguous_ignoring_indentation() -> None:
    text = "def a():\n    return 0\n\ndef b():\n        return 0\n"
    with pytest.raises(EditError, match=r"matches 2 places in file \(ignoring indentation.* lines 2, 5\."):
        apply_edit(text, "  return 0  \n", "return 1\n")


def test_not_found_shows_nearest_lines_with_numbers() -> None:
    text = "import os\n\n" + BLOCK
    old = "with open(path, 'rb') as fh:\n    data = pickle.load(fh)\n"
    with pytest.raises(EditError) as err:
        apply_edit(text, old, "x\n", path="store.py")
    msg = str(err.value)
    head, snippet, tail = msg.split("\n", 1)[0], msg.split("\n")[2:4], msg.split("\n")[-1]
    assert head == "old_string was not found in store.py, not even ignoring whitespace and indentation."
    assert "The most similar region is lines 4-5 (" in msg
    assert snippet == ["4 |     with open(path) as fh:", "5 |         data = json.load(fh)"]
    assert tail.startswith("Copy the current text exactly")
    assert len(msg.splitlines()) <= 25


def test_not_found_snippet_is_capped() -> None:
    text = "".join(f"value_{i} = compute({i})\n" for i in range(100))
    old = "".join(f"other_{i} = something_else({i})\n" for i in range(40))
    with pytest.raises(EditError) as err:
        apply_edit(text, old, "x\n")
    assert len(str(err.value).splitlines()) <= 25
    assert "more lines)" in str(err.value)


def test_already_applied() -> None:
    after = apply_edit(PY, 'return "bye"', 'return "goodbye"').text
    with pytest.raises(EditError) as err:
        apply_edit(after, 'return "bye"', 'return "goodbye"', path="g.py")
    assert str(err.value) == (
        "new_string is already present in g.py at line 8, so this edit appears to be applied "
        "already. Re-read the file before editing it again."
    )


def test_already_applied_multiline_not_reapplied_fuzzily() -> None:
    new = BLOCK.replace("    return data\n", "    data.setdefault('version', 1)\n    return data\n")
    with pytest.raises(EditError, match="applied already"):
        apply_edit(new, BLOCK, new)


def test_reapplied_insertion_is_detected() -> None:
    old = "def f():\n"
    new = 'def f():\n    """Docstring."""\n'
    once = apply_edit("x = 1\n\n\ndef f():\n    return 1\n", old, new).text
    assert once == 'x = 1\n\n\ndef f():\n    """Docstring."""\n    return 1\n'
    with pytest.raises(EditError, match="already present in file at line 4"):
        apply_edit(once, old, new)


def test_short_new_elsewhere_is_not_called_applied() -> None:
    # "pass" exists at line 3, but that says nothing about this edit
    text = "def a():\n    x = compute_the_total(items)\n    pass\n"
    with pytest.raises(EditError, match="not found") as err:
        apply_edit(text, "y = compute_the_total(things)", "pass")
    assert "already" not in str(err.value)


def test_not_found_in_file_shorter_than_old() -> None:
    with pytest.raises(EditError) as err:
        apply_edit("only = 1\n", "a = 1\nb = 2\nc = 3\n", "a = 2\n")
    assert "The most similar region is line 1 (" in str(err.value)
    assert "1 | only = 1" in str(err.value)


def test_not_found_hints_at_copied_line_numbers() -> None:
    with pytest.raises(EditError, match="Leave the line numbers out"):
        apply_edit(BLOCK, "2 |     with open(path) as fh:\n3 |         data = json.load(fh)\n", "x\n")


def test_whitespace_only_old_not_found() -> None:
    with pytest.raises(EditError, match="only whitespace"):
        apply_edit("a\nb\n", "\n\n\n", "c\n")


def test_change_normalized_away() -> None:
    # matched ignoring trailing spaces, and new differs from old only by those spaces
    with pytest.raises(EditError, match="leaves file unchanged"):
        apply_edit("a = 1\nb = 2\n", "a = 1  \nb = 2\n", "a = 1\nb = 2\n")


def test_empty_old() -> None:
    with pytest.raises(EditError, match="old_string is empty.*create_file"):
        apply_edit(PY, "", "x = 1\n")


def test_old_equals_new() -> None:
    with pytest.raises(EditError, match="identical"):
        apply_edit(PY, "def bye", "def bye")


def test_empty_file() -> None:
    with pytest.raises(EditError, match="empty"):
        apply_edit("", "x = 1\ny = 2\n", "x = 2\ny = 2\n")


# --- line endings -------------------------------------------------------------------


def test_crlf_preserved_with_lf_old_and_new() -> None:
    text = "a = 1\r\nb = 2\r\nc = 3\r\n"
    outcome = apply_edit(text, "b = 2\nc = 3\n", "b = 20\nb2 = 21\nc = 3\n")
    assert outcome.strategy == "exact"
    assert outcome.text == "a = 1\r\nb = 20\r\nb2 = 21\r\nc = 3\r\n"


def test_crlf_preserved_when_reindenting() -> None:
    text = "def f():\r\n    x = 1\r\n    return x\r\n"
    outcome = apply_edit(text, "x = 1\nreturn x", "x = 1\nif x:\n    x += 1\nreturn x")
    assert outcome.strategy == "whitespace"
    assert outcome.text == "def f():\r\n    x = 1\r\n    if x:\r\n        x += 1\r\n    return x\r\n"


@pytest.mark.parametrize(
    ("old", "new"),
    [("y = 2", "y = 3"), ("y = 2\n", "y = 3\n"), ("    y = 2\n", "    y = 3\n")],
    ids=["exact", "old-adds-newline", "line-based"],
)
def test_no_trailing_newline_preserved(old: str, new: str) -> None:
    text = "def f():\n    x = 1\n    y = 2"
    assert apply_edit(text, old, new).text == "def f():\n    x = 1\n    y = 3"


def test_trailing_newline_not_dropped() -> None:
    assert apply_edit("a\nb\n", "b\n", "c").text == "a\nc\n"


def test_delete_last_line_of_file_without_newline() -> None:
    assert apply_edit("a\nb\nc", "    c", "").text == "a\nb"


# --- unified_diff -------------------------------------------------------------------


def test_unified_diff_format() -> None:
    before = "".join(f"line {i}\n" for i in range(1, 11))
    after = before.replace("line 5\n", "line five\n")
    assert unified_diff("pkg/mod.py", before, after) == (
        "--- a/pkg/mod.py\n"
        "+++ b/pkg/mod.py\n"
        "@@ -2,7 +2,7 @@\n"
        " line 2\n"
        " line 3\n"
        " line 4\n"
        "-line 5\n"
        "+line five\n"
        " line 6\n"
        " line 7\n"
        " line 8\n"
    )


def test_unified_diff_unchanged_is_empty() -> None:
    assert unified_diff("a.py", "x\n", "x\n") == ""


def test_unified_diff_no_newline_at_end() -> None:
    assert unified_diff("a.py", "a\nb", "a\nc") == (
        "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n"
        "\\ No newline at end of file\n"
    )
