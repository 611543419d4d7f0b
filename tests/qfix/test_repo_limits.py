"""A repository may lower limits, never lift them (issue 35, item 7): `copy_file_max_bytes = 0`
means "no limit", and `nan` compares as neither larger nor smaller; both are ignored with the
usual warning, and the fix goes on within the user's limits."""

from __future__ import annotations

import json
import subprocess

from tests.qfix.helpers import QFIX, fix_replies


def test_zero_meaning_unlimited_and_nan_are_ignored(repo, qfix_env, vllm):
    (repo / "pyproject.toml").write_text(
        "[tool.qwen-lsp]\nverify_timeout = nan\nmax_rounds = 6\n"
        "[tool.qwen-lsp.limits]\ncopy_file_max_bytes = 0\nfix_deadline_seconds = nan\nfile_max_bytes = 1000000\n"
    )
    vllm.script(*fix_replies())
    run = subprocess.run([QFIX, "--json", "--", "python", "script.py"], cwd=repo, env=qfix_env,
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    ours = run.stderr.split("NameError: name 'nme' is not defined")[-1]
    assert "ignoring limits.copy_file_max_bytes = 0 (above 64000000)" in ours, ours
    assert "ignoring verify_timeout = nan, limits.fix_deadline_seconds = nan" in ours and "finite" in ours
    assert "took longer than nan" not in ours
    report = json.loads(run.stdout)
    assert report["outcome"] in ("proposed", "changed_unverified") and report["diffs"], ours  # unverified: no bubblewrap
    assert "max_rounds" not in ours and "file_max_bytes = 1000000" not in ours  # lowered: applies, unremarked
