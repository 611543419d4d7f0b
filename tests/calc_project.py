"""The small buggy project most end-to-end tests fix: `add` subtracts, its test fails."""

from __future__ import annotations

import sys
from pathlib import Path

BUGGY = "def add(a, b):\n    total = a - b\n    return total\n\n\ndef sub(a, b):\n    return a - b\n"
FIXED = BUGGY.replace("total = a - b", "total = a + b")
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider test_calc.py"
PYTEST_OUTPUT = """F                                                                        [100%]
=================================== FAILURES ===================================
___________________________________ test_add ___________________________________

    def test_add():
>       assert add(2, 3) == 5
E       assert -1 == 5
E        +  where -1 = add(2, 3)

test_calc.py:5: AssertionError
=========================== short test summary info ============================
FAILED test_calc.py::test_add - assert -1 == 5
1 failed in 0.01s
"""


def make_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "calc.py").write_text(BUGGY)
    (root / "test_calc.py").write_text(TEST)
    return root
