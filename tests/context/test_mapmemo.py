"""The live index's map across versions (mapmemo.py): the fit's shortcut from an earlier answer
gives the binary search's answer whatever the guess."""

from __future__ import annotations

from pathlib import Path

from qwen_lsp.context import repomap
from qwen_lsp.context.ranking import rank_definitions
from tests.context.helpers import write


def test_the_fit_from_any_earlier_answer_is_the_binary_searchs(tmp_path: Path) -> None:
    for n in range(12):
        write(tmp_path, f"pkg/mod{n}.py", "".join(f"def function_{n}_{k}(argument, other=None):\n    return mod{(n + 1) % 12}.function_{(n + 1) % 12}_{k}()\n\n\n" for k in range(8)))
    index = repomap.build_index(tmp_path)
    budget = 150
    expected = repomap.repo_map(tmp_path, budget, focus_files=["pkg/mod0.py"], index=index)
    ranked = [(f, d) for f, d, _ in rank_definitions(index, focus_files=["pkg/mod0.py"], limit=max(200, budget))]
    hi = repomap.fit_bound(ranked, budget)
    assert 3 < expected.count("│") < hi  # the budget cuts the map
    searched = repomap.fit_map(index, ranked, hi, budget)
    assert searched[0] == expected
    for guess in range(hi + 2):
        assert repomap.fit_map(index, ranked, hi, budget, guess) == searched, guess
