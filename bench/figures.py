"""Shared by the bench scripts: a figure is printed for people and, when
BENCH_FIGURES names a file (bench/run sets it), also appended there as JSON."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def figure(name: str, value: float, unit: str) -> None:
    bench = Path(sys.argv[0]).stem
    target = os.environ.get("BENCH_FIGURES")
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.write(json.dumps({"bench": bench, "name": name, "value": value, "unit": unit}) + "\n")
