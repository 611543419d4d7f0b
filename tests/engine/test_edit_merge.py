"""apply_edit on inexact copies: one test (or more) per corruption class of the edit corpus
(bench/edit_corpus.py). A wrong application is worse than a refusal, so every class has
both what must be applied exactly and what must be refused."""

from __future__ import annotations

import pytest

from qwen_lsp.engine.edits import EditError, apply_edit

LOADER = """\
import json


def load(path):
    with open(path) as fh:
        data = json.load(fh)
    if not isinstance(data, dict):
        raise TypeError("expected an object")
    data.setdefault("version", 1)
    return data


def save(path, data):
    with open(path, "w") as fh:
        json.dump(data, fh)
"""

GO = """\
package store

func (s *Store) Put(key string, value []byte) error {
\tif err := s.check(key); err != nil {
\t\treturn err
\t}
\tif err := s.db.Put(key, value); err != nil {
\t\treturn err
\t}
\ts.count++
\treturn nil
}
"""


# --- trailing whitespace -------------------------------------------------------------------


def test_trailing_spaces_copied_into_new_strings_unchanged_lines_are_not_written() -> None:
    old = '    with open(path) as fh:  \n        data = json.load(fh)\t\n    if not isinstance(data, dict):\n'
    new = '    with open(path) as fh:  \n        data = json.load(fh)\t\n    if not isinstance(data, (dict, list)):\n'
    outcome = apply_edit(LOADER, old, new)
    assert outcome.text == LOADER.replace("(data, dict)", "(data, (dict, list))")


# --- a typo in old_string, repeated in new_string -----------------------------------------------


def test_a_typo_repeated_in_an_unchanged_line_is_not_written_into_the_file() -> None:
    old = '    with open(path) as fh:\n        data = json.laod(fh)\n    if not isinstance(data, dict):\n        raise TypeError("expected an object")\n'
    new = '    with open(path) as fh:\n        data = json.laod(fh)\n    if not isinstance(data, dict):\n        raise TypeError("expected a JSON object")\n'
    outcome = apply_edit(LOADER, old, new)
    assert outcome.strategy == "fuzzy"
    assert outcome.text == LOADER.replace("expected an object", "expected a JSON object")
    assert "laod" not in outcome.text


def test_typos_in_the_first_lines_do_not_shift_the_window() -> None:
    # Two typos at the top; the repeated `return err` / `}` below must not pull the
    # match onto the first copy of them.
    old = "\tif err := s.db.Ptu(key, value); err != nil {\n\t\treturn err\n\t}\n\ts.cuont++\n\treturn nil\n"
    new = "\tif err := s.db.Ptu(key, value); err != nil {\n\t\treturn err\n\t}\n\ts.cuont++\n\ts.dirty = true\n\treturn nil\n"
    outcome = apply_edit(GO, old, new)
    assert outcome.text == GO.replace("\ts.count++\n", "\ts.count++\n\ts.dirty = true\n")


def test_a_changed_line_that_is_not_in_the_file_is_refused() -> None:
    old = "    with open(path) as fh:\n        data = json.load(fh)\n        data = normalize(data)\n    if not isinstance(data, dict):\n"
    new = "    with open(path) as fh:\n        data = json.load(fh)\n        data = normalize(data, strict=True)\n    if not isinstance(data, dict):\n"
    with pytest.raises(EditError, match="normalize"):
        apply_edit(LOADER, old, new)


# --- a line left out of both strings ----------------------------------------------------------


def test_a_line_left_out_of_both_strings_is_kept() -> None:
    old = "    with open(path) as fh:\n    if not isinstance(data, dict):\n        raise TypeError(\"expected an object\")\n    data.setdefault(\"version\", 1)\n"
    new = "    with open(path) as fh:\n    if not isinstance(data, dict):\n        raise TypeError(\"expected an object\")\n    data.setdefault(\"version\", 2)\n"
    outcome = apply_edit(LOADER, old, new)
    assert outcome.text == LOADER.replace('"version", 1', '"version", 2')
    assert "data = json.load(fh)" in outcome.text


def test_lines_added_next_to_a_line_left_out_are_refused() -> None:
    # Do the new lines go before or after `data = json.load(fh)`? Either could be meant.
    old = "def load(path):\n    with open(path) as fh:\n    if not isinstance(data, dict):\n        raise TypeError(\"expected an object\")\n"
    new = "def load(path):\n    with open(path) as fh:\n        log(path)\n    if not isinstance(data, dict):\n        raise TypeError(\"expected an object\")\n"
    with pytest.raises(EditError, match="unclear on which side"):
        apply_edit(LOADER, old, new)


# --- `...` elision ----------------------------------------------------------------------------


def test_python_comment_elision_in_both_strings_keeps_the_elided_lines() -> None:
    old = "def load(path):\n    # ...\n    data.setdefault(\"version\", 1)\n    return data\n"
    new = "def load(path, version=1):\n    # ...\n    data.setdefault(\"version\", version)\n    return data\n"
    outcome = apply_edit(LOADER, old, new)
    assert outcome.strategy == "elision"
    assert outcome.text == LOADER.replace("def load(path):", "def load(path, version=1):").replace(
        '"version", 1', '"version", version'
    )


def test_javascript_elision_with_words_and_new_lines_before_it() -> None:
    text = "function total(items) {\n  let sum = 0;\n  for (const item of items) {\n    sum += item.price;\n  }\n  return sum;\n}\n"
    old = "function total(items) {\n  // ... existing code ...\n  return sum;\n}\n"
    new = "function total(items) {\n  if (!items) return 0;\n  // ... existing code ...\n  return Math.round(sum);\n}\n"
    outcome = apply_edit(text, old, new)
    assert outcome.text == (
        "function total(items) {\n  if (!items) return 0;\n  let sum = 0;\n  for (const item of items) {\n"
        "    sum += item.price;\n  }\n  return Math.round(sum);\n}\n"
    )


def test_elision_in_new_string_only_stands_for_the_lines_it_replaces() -> None:
    old = "def save(path, data):\n    with open(path, \"w\") as fh:\n        json.dump(data, fh)\n"
    new = "def save(path, data, indent=None):\n    # ... existing code ...\n"
    outcome = apply_edit(LOADER, old, new)
    assert outcome.text == LOADER.replace("def save(path, data):", "def save(path, data, indent=None):")


def test_a_bare_ellipsis_is_code_when_old_string_has_no_elision() -> None:
    text = "class Base:\n    def run(self):\n        raise NotImplementedError\n"
    old = "class Base:\n    def run(self):\n"
    new = "class Base:\n    def name(self) -> str:\n        ...\n\n    def run(self):\n"
    outcome = apply_edit(text, old, new)
    assert outcome.text == "class Base:\n    def name(self) -> str:\n        ...\n\n    def run(self):\n        raise NotImplementedError\n"


def test_changing_what_an_elision_stands_for_is_refused() -> None:
    old = "def load(path):\n    # ...\n    return data\n"
    new = "def load(path):\n    return data\n"  # delete the elided lines? write `# ...`? unclear
    with pytest.raises(EditError, match="elision"):
        apply_edit(LOADER, old, new)


def test_elision_parts_that_fit_two_places_are_refused() -> None:
    text = LOADER + "\n\ndef load_again(path):\n    with open(path) as fh:\n        data = json.load(fh)\n    return data\n"
    old = "    with open(path) as fh:\n    # ...\n    return data\n"
    with pytest.raises(EditError, match="matches 2 places"):
        apply_edit(text, old, "    with open(path, encoding='utf-8') as fh:\n    # ...\n    return data\n")


# --- re-indentation with blocks of different length ---------------------------------------------


def test_shifted_copy_with_a_typo_a_left_out_line_and_a_longer_new_string() -> None:
    # old_string at column 0 (the file has 8 spaces), `data = json.load(fh)` left out,
    # a typo; the region in the file is one line longer than old_string.
    text = "class Store:\n" + "".join(("    " + line if line else "") + "\n" for line in LOADER.splitlines())
    old = "def load(path):\n    with open(path) as fh:\n    if not isinstance(data, dcit):\n        raise TypeError(\"expected an object\")\n"
    new = (
        "def load(path):\n    with open(path) as fh:\n    if data is None:\n        return {}\n"
        "    if not isinstance(data, dict):\n        raise TypeError(\"expected an object\")\n"
    )
    outcome = apply_edit(text, old, new)
    assert outcome.text == text.replace(
        "        if not isinstance", "        if data is None:\n            return {}\n        if not isinstance"
    )


def test_a_flattened_copy_whose_indentation_cannot_be_mapped_is_refused() -> None:
    # old_string puts the `with` body and the `if` at one level; the file does not.
    old = "with open(path) as fh:\ndata = json.laod(fh)\nif not isinstance(data, dict):\n"
    new = "with open(path) as fh:\ndata = json.laod(fh)\nlog(data)\nif not isinstance(data, dict):\n"
    with pytest.raises(EditError, match="indent"):
        apply_edit(LOADER, old, new)


# --- old_string twice, or not at all -------------------------------------------------------------


def test_a_copy_with_a_left_out_line_that_fits_two_places_is_refused() -> None:
    text = (
        "class A:\n    def key(self):\n        return self.a\n\n    def resolve(self, env):\n        return self.a\n\n\n"
        "class B:\n    def key(self):\n        return (self.b, self.default)\n\n    def resolve(self, env):\n"
        "        return env.get(self.b, self.default)\n"
    )
    old = "    def key(self):\n\n    def resolve(self, env):\n"
    new = "    def key(self):\n\n    def resolve(self, env, strict=False):\n"
    with pytest.raises(EditError):
        apply_edit(text, old, new)


def test_a_typo_copy_of_a_repeated_block_is_refused() -> None:
    old = "\tif err := s.chekc(key); err != nil {\n\t\treturn err\n\t}\n"
    text = GO.replace("s.db.Put(key, value)", "s.check(key)")
    with pytest.raises(EditError, match="several regions|fits"):
        apply_edit(text, old, "\tif err := s.check(key); err != nil {\n\t\treturn fmt.Errorf(\"check: %w\", err)\n\t}\n")


def test_an_absent_block_is_refused_with_the_nearest_lines_shown() -> None:
    old = "def parse(text):\n    tokens = text.split()\n    return [int(t) for t in tokens]\n"
    with pytest.raises(EditError) as err:
        apply_edit(LOADER, old, old.replace("int(t)", "float(t)"), path="loader.py")
    assert "not found in loader.py" in str(err.value)
    assert "The most similar region is" in str(err.value)


def test_a_re_sent_insertion_is_reported_as_applied_not_duplicated() -> None:
    old = "    with open(path) as fh:\n        data = json.load(fh)\n    if not isinstance(data, dict):\n"
    new = "    with open(path) as fh:\n        data = json.load(fh)\n    data = data or {}\n    if not isinstance(data, dict):\n"
    once = apply_edit(LOADER, old, new).text
    with pytest.raises(EditError, match="applied already"):
        apply_edit(once, old, new)  # the same call again: old_string is now only nearly there


# --- a typo in the very line the model changes ------------------------------------------------------


def test_a_change_to_a_line_copied_with_a_typo_is_applied_to_the_files_line() -> None:
    # old_string misspells `json.load`; new_string changes the end of that line.
    old = "    with open(path) as fh:\n        data = json.laod(fh)\n    if not isinstance(data, dict):\n"
    new = "    with open(path) as fh:\n        data = json.laod(fh) or {}\n    if not isinstance(data, dict):\n"
    outcome = apply_edit(LOADER, old, new)
    assert outcome.text == LOADER.replace("json.load(fh)\n", "json.load(fh) or {}\n")


def test_a_change_right_where_the_copy_is_wrong_is_refused() -> None:
    old = "    with open(path) as fh:\n        data = json.laod(fh)\n    if not isinstance(data, dict):\n"
    new = "    with open(path) as fh:\n        data = json.loads(fh.read())\n    if not isinstance(data, dict):\n"
    with pytest.raises(EditError, match="right where new_string changes it"):
        apply_edit(LOADER, old, new)


def test_an_elision_in_new_string_only_next_to_blank_lines_is_refused_not_guessed() -> None:
    # difflib pairs the blank line after `// ...` with one of the old blank lines, which would
    # turn the lines after it into a deletion; the merge must not delete them.
    text = "function a() {\n  run();\n}\n\nasync function b() {\n  await start();\n}\n\nfunction c() {\n  stop();\n}\n"
    old = "  run();\n}\n\nasync function b() {\n  await start();\n}\n\nfunction c() {\n  stop();\n"
    new = "  run();\n  // ...\n\n  stop();\n  done();\n"
    with pytest.raises(EditError, match="next to a `...`"):
        apply_edit(text, old, new)


def test_an_elision_before_a_closing_brace_the_deleted_lines_end_with_too_is_refused() -> None:
    # Found by bench/bench_edits.py (elision-019): difflib pairs the last `}` of new_string with the
    # class's `}`, which would delete the class after it; with the other `}` the `...` keeps it all.
    text = (
        "export class Uri {\n  toString(): string {\n    return this.href;\n  }\n}\n\n"
        "export class ThemeColor {\n  constructor(readonly id: string) {}\n}\n\nexport enum Side {\n  Left = 1,\n}\n"
    )
    old = "  toString(): string {\n    return this.href;\n  }\n}\n\nexport class ThemeColor {\n  constructor(readonly id: string) {}\n}\n"
    new = "  toString_v2(): string {\n    return this.href;\n  // ... existing code ...\n}\n"
    with pytest.raises(EditError, match="next to a `...`"):
        apply_edit(text, old, new)


# --- one line of the copy indented wrongly (bench/edit_corpus.py: indent_noise) ------------------

INTROSPECTION = '''\
field_size_re = _lazy_re_compile(r"^\\s*(?:var)?char\\s*\\(\\s*(\\d+)\\s*\\)\\s*$")


def get_field_size(name):
    """Extract the size number from a "varchar(11)" type name."""
    m = field_size_re.search(name)
    return int(m[1]) if m else None
'''


@pytest.mark.parametrize("wrong", ["     m = field_size_re.search(name)", "   m = field_size_re.search(name)",
                                   "\t m = field_size_re.search(name)"])
def test_a_line_copied_a_column_off_and_set_right_in_new_string_keeps_the_files_indentation(wrong: str) -> None:
    # The last wrong edit of the outside corpus: a typo, the `m =` line a column off in old_string only;
    # read relative to that line, new_string's `m =` went to column 0 inside the function.
    old = f'def get_field_szie(name):\n    """Extract the size number from a "varchar(11)" type name."""\n{wrong}\n'
    new = ('def get_field_szie(name):\n    """Extract the size number from a "varchar(11)" type name (or None)."""\n'
           "    m = field_size_re.search(name)\n")
    outcome = apply_edit(INTROSPECTION, old, new)
    assert outcome.text == INTROSPECTION.replace("type name.", "type name (or None).")


@pytest.mark.parametrize("where", ["first", "last"])
def test_an_edge_line_copied_a_column_off_does_not_move_the_new_lines(where: str) -> None:
    lines = ['    """Extract the size number from a "varchar(11)" type name."""', "    m = field_size_re.search(name)",
             "    return int(m[1]) if m else None"]
    old_lines = list(lines)
    if where == "first":
        old_lines[0] = " " + lines[0]
    else:
        old_lines[2] = lines[2][1:]
    new = "    m = field_size_re.search(name)\n    if m is None:\n        return None\n    return int(m[1])\n"
    outcome = apply_edit(INTROSPECTION, "\n".join(old_lines) + "\n", old_lines[0] + "\n" + new)
    assert outcome.text == INTROSPECTION.replace(
        "    return int(m[1]) if m else None\n", "    if m is None:\n        return None\n    return int(m[1])\n")


def test_a_column_off_is_not_taken_for_a_copy_with_another_indent_step() -> None:
    # 0 -> 0 and 1 -> 2 fit "twice the copy's widths" too; that would put the corrected line at 4.
    text = 'describe("fix", () => {\n  beforeEach(() => fake.reset());\n  it("runs", run);\n});\n'
    old = 'describe("fix", () => {\n beforeEach(() => fake.reset());\n  it("runs", run);\n});\n'
    new = 'describe("fix", () => {\nsetUp();\n  beforeEach(() => fake.reset());\n  it("runs", run);\n});\n'
    outcome = apply_edit(text, old, new)
    assert outcome.text == text.replace('{\n', '{\nsetUp();\n', 1)


def test_a_line_a_column_off_in_both_strings_and_moved_off_the_files_levels_is_refused() -> None:
    # Read through the other lines, new_string's line would land at column 9: not a level of the file.
    old = '    """Extract the size number from a "varchar(11)" type name."""\n     m = field_size_re.search(name)\n' \
          "    return int(m[1]) if m else None\n"
    new = '    """Extract the size number from a "varchar(11)" type name."""\n    if name:\n' \
          "         m = field_size_re.search(name)\n    return int(m[1]) if m else None\n"
    with pytest.raises(EditError, match="indent"):
        apply_edit(INTROSPECTION, old, new)
