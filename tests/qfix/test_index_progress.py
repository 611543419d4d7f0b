"""The first qfix in a repository not indexed yet: on a terminal the spinner shows the index
build's counts; with --json nothing extra is printed (the build happens all the same)."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys

import pytest

from tests.qfix.helpers import finish, fix_replies, spawn, write_record

MODULES = 900  # over tagpool.PARALLEL_MIN: the build runs in worker processes and reports each chunk
MODULE = "def f{n}(x):\n    return g{n}(x) + 1\n\n\ndef g{n}(x):\n    return x * {n}\n\n\nclass C{n}:\n    def m(self):\n        return f{n}(self)\n"


@pytest.fixture
def big_repo(repo):
    pkg = repo / "pkg"
    pkg.mkdir()
    for n in range(MODULES):
        (pkg / f"mod{n}.py").write_text(MODULE.format(n=n))
    return repo


def recorded_failure(repo, env) -> dict[str, str]:
    """The shell's record of `python script.py` failing, with its output: qfix neither re-runs nor
    preloads anything, so the whole index build happens under the spinner."""
    env = write_record(repo, {**env, "QFIX_WARM": "0"}, "python script.py", 1)
    ran = subprocess.run([sys.executable, "script.py"], cwd=repo, capture_output=True, text=True)
    record = next((repo.parent / "state" / "sessions").glob("*.json"))
    record.write_text(json.dumps({**json.loads(record.read_text()), "output": ran.stdout + ran.stderr}))
    return env


def snapshots(env) -> list:
    from pathlib import Path

    return list(Path(env["QWEN_LSP_CACHE_DIR"]).glob("repomap-snapshot-v*/*.snap"))


def test_the_first_qfix_in_a_big_repository_shows_the_index_build_on_a_terminal(big_repo, qfix_env, vllm):
    env = recorded_failure(big_repo, qfix_env)
    vllm.script(*fix_replies())
    child = spawn(["--dry-run"], env, big_repo)
    child.expect(r"indexing the workspace: [\d,]+/(\d[\d,]*) files \(first run here\)")
    assert int(child.match.group(1).replace(",", "")) == MODULES + 1  # the modules and script.py
    child.expect_exact("Cause: greet() uses the undefined name nme")
    assert finish(child) == 0
    assert snapshots(env)


def test_with_json_the_index_build_prints_nothing_extra(big_repo, qfix_env, vllm):
    env = recorded_failure(big_repo, qfix_env)
    vllm.script(*fix_replies())
    child = spawn(["--json"], env, big_repo)  # stderr is a terminal here too
    child.logfile_read = io.StringIO()  # everything qfix printed
    child.expect_exact('"outcome"')
    assert finish(child) == 0
    shown = child.logfile_read.getvalue()
    assert re.search(r"\"outcome\": \"\w+\"", shown), shown[-600:]
    assert snapshots(env)  # the build did happen in this run
    assert "indexing the workspace" not in shown and not re.search(r"indexed [\d,]+ files", shown)
