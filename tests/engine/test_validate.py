"""The parse check of changed files, over the shared table of languages."""

from __future__ import annotations

import pytest

from qwen_lsp.engine.validate import check_parse
from qwen_lsp.types import FileChange


@pytest.mark.parametrize("path, before, after", [
    ("web/app.mts", "let x = 1;\n", "let x = ;\n"),  # suffixes the context layer knew and the check did not
    ("src/a.hh", "int x;\n", "int x\n"),
    ("build.gradle.kts", "val x = 1\n", "val x = \n"),
    ("package.json", '{"a": 1}\n', '{"a": }\n'),  # and the other way round
    ("ci.yaml", "a: [1, 2]\n", "a: [1, 2\n"),
])
def test_the_parse_check_knows_every_language_of_the_shared_table(path, before, after):
    (outcome,) = check_parse([FileChange(path=path, original=before, updated=after, diff="")])
    assert not outcome.ok and "syntax error" in outcome.detail
    assert check_parse([FileChange(path=path, original=before, updated=before, diff="")])[0].ok
