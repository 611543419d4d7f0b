"""The review tests' calc repository (two commits, then a bug staged), the model's scripted
findings, and the SARIF schema check."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from tests.review.gitrepo import GitRepo
from tests.vllm_double import Reply

CALC_V1 = '''"""Small statistics helpers."""

import math


def mean(values):
    """The arithmetic mean of `values`.

    Empty input has no mean; callers get 0.0 so reports stay printable.
    """
    if not values:
        return 0.0
    total = 0
    count = 0
    for v in values:
        total += v
        count += 1
    return total / count
'''

# Second commit: the history the review should see for the loop.
CALC_V2 = CALC_V1.replace(
    "        total += v\n",
    "        if v is None or math.isnan(v):\n            continue\n        total += v\n",
)

# The staged bug: the loop drops the first sample.
CALC_BUG = CALC_V2.replace("    for v in values:\n", "    for v in values[1:]:\n")
BUG_LINE = CALC_BUG.splitlines().index("    for v in values[1:]:") + 1
HISTORY_SUBJECT = "Skip missing samples in mean"


def findings_reply(*findings: dict) -> Reply:
    return Reply(content=json.dumps({"findings": list(findings)}))


def bug_finding(line: int = BUG_LINE + 1, path: str = "calc.py", severity: str = "error") -> dict:
    """What the model answers about the staged bug; by default one line off, as models are."""
    return {
        "path": path,
        "line": line,
        "severity": severity,
        "category": "bug",
        "message": "The loop skips the first value, so the mean is wrong.",
        "suggestion": "Iterate over `values`, not `values[1:]`.",
    }


def make_calc_repo(root: Path, env: dict[str, str] | None = None) -> GitRepo:
    """A repository with two commits of calc.py and the bug staged."""
    repo = GitRepo(root, env)
    repo.commit("Add mean", {"calc.py": CALC_V1})
    repo.commit(HISTORY_SUBJECT, {"calc.py": CALC_V2})
    repo.stage("calc.py", CALC_BUG)
    return repo


SARIF_SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))


def validate_sarif(log: dict) -> None:
    validator = jsonschema.Draft4Validator(SARIF_SCHEMA, format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(log), key=str)
    assert not errors, "\n".join(e.message for e in errors)
