"""All corpus cases, one module per family."""

from __future__ import annotations

import os
from pathlib import Path

TOOLS = Path(os.environ.get("QLS_TOOLS", "/tmp/qls-tools"))

from cases_native import CASES as NATIVE  # noqa: E402
from cases_other import CASES as OTHER  # noqa: E402
from cases_generic import CASES as GENERIC  # noqa: E402
from cases_heldout import CASES as HELDOUT  # noqa: E402
from cases_js import CASES as JS  # noqa: E402
from cases_python import CASES as PYTHON  # noqa: E402

CASES: dict[str, dict] = {**PYTHON, **JS, **NATIVE, **OTHER, **GENERIC, **HELDOUT}
