"""The language server says it is ready before it builds its index, and a folder's first index
build of many files shows its counts in the status, then ready again."""

from __future__ import annotations

import re

import pytest

from tests.lsp.helpers import wait_until

MODULES = 260  # over indexing.PROGRESS_MIN


@pytest.fixture
def project(project):
    pkg = project / "pkg"
    pkg.mkdir()
    for n in range(MODULES):
        (pkg / f"mod{n}.py").write_text(f"def f{n}(x):\n    return x + {n}\n\n\nclass C{n}:\n    pass\n")
    return project


async def test_a_big_first_build_shows_its_counts_then_ready(lsp, project):
    def messages() -> list[str]:
        return [s["message"] for s in lsp.statuses]

    await wait_until(lambda: messages().count("ready") >= 2, timeout=120)
    shown = messages()
    assert shown[0] == "ready"  # before the index: its modules load after the handshake
    counts = [re.fullmatch(rf"indexing {project.name}: ([\d,]+)/([\d,]+) files", m) for m in shown[1:-1]]
    assert counts and all(counts), shown
    total = int(counts[0][2].replace(",", ""))
    assert total > MODULES and [int(c[1].replace(",", "")) for c in counts] == sorted(int(c[1].replace(",", "")) for c in counts)
    assert shown[-1] == "ready"
