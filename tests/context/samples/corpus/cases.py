"""All corpus cases, one module per family."""

from __future__ import annotations

import os
from pathlib import Path

TOOLS = Path(os.environ.get("QLS_TOOLS", "/tmp/qls-tools"))

from cases_native import CASES as NATIVE
from cases_other import CASES as OTHER
from cases_generic import CASES as GENERIC
from cases_heldout import CASES as HELDOUT
from cases_heldout2 import CASES as HELDOUT2
from cases_heldout3 import CASES as HELDOUT3
from cases_heldout4 import CASES as HELDOUT4
from cases_heldout5 import CASES as HELDOUT5
from cases_js import CASES as JS
from cases_python import CASES as PYTHON

CASES: dict[str, dict] = {**PYTHON, **JS, **NATIVE, **OTHER, **GENERIC, **HELDOUT, **HELDOUT2, **HELDOUT3, **HELDOUT4, **HELDOUT5}
