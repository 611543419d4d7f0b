"""`bench/fixes/run` as a user runs it: the table, the JSON, and --compare."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "bench" / "fixes" / "run"


def bench(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(RUN), *args], capture_output=True, text=True, env=env, timeout=300)


def test_the_double_run_prints_one_table_saves_json_and_compares(tmp_path):
    old = {"base_url": "http://gpu:8000/v1", "runs": [
        {"case": "py-none-lookup", "language": "python", "kind": "fix", "bug_class": "None handling", "strategy": "default",
         "first": {"status": "no change", "thinking_calls": 1, "non_thinking_calls": 5}}],
        "totals": {"default": {"cases": 1, "outcomes": {"no change": 1}, "thinking_calls": 1, "non_thinking_calls": 5}}}
    (tmp_path / "old.json").write_text(json.dumps(old))
    out = tmp_path / "new.json"
    done = bench("--double", "--cases", "py-none-lookup", "--json", str(out), "--compare", str(tmp_path / "old.json"))
    assert done.returncode == 0, done.stderr
    table = done.stdout
    assert "strategy: default" in table
    assert re.search(r"case\s+result\s+think\s+plain\s+reads\s+prompt\s+cached\s+compl\s+wall s\s+rounds\s+2nd pass", table)
    assert re.search(r"py-none-lookup\s+solved\s+1\s+3\s+0\s+\d+\s+\d+\s+\d+\s+[\d.]+\s+3\s+hit, 0 think, solved", table)
    assert re.search(r"total \(1 cases\)\s+solved 1\s", table)
    assert "not evidence of fix quality or cost" in table
    data = json.loads(out.read_text())
    assert data["double"] is True and data["totals"]["default"]["second_pass_cache_hits"] == 1
    assert data["runs"][0]["first"]["changed_files"] == ["users.py"]
    assert "default: solved +1, thinking_calls +0, non_thinking_calls -2, plan_reads +0" in table
    assert "default py-none-lookup: no change -> solved" in table


def test_an_unknown_case_is_an_error():
    done = bench("--double", "--cases", "no-such-case")
    assert done.returncode == 2 and "no case matches" in done.stderr
