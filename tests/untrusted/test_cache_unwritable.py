"""A full or read-only cache folder (issue 35, item 6): the cache is an optimisation, so qfix fixes
without it and says so in one line, instead of stopping every fix with "database or disk is full"
or "FileNotFoundError .../state". The folder is made read-only or full for real: a bind mount or a
tiny tmpfs, in a mount namespace of qfix's own (root only)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess

import pytest

from tests.qfix.helpers import QFIX, fix_replies

pytestmark = pytest.mark.skipif(
    os.getuid() != 0 or subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0,
    reason="needs root and a mount namespace (unshare -m) to make a folder read-only or full",
)

SETUPS = {
    "read-only": "mount --bind -o ro {cache} {cache}",
    "full": "mount -t tmpfs -o size=256k tmpfs {cache} && (head -c 1M /dev/zero > {cache}/filler || true)",
}


@pytest.mark.parametrize("how", SETUPS)
def test_qfix_fixes_without_the_cache_and_says_so_once(repo, qfix_env, vllm, tmp_path, how):
    cache = tmp_path / "cache"
    cache.mkdir()
    vllm.script(*fix_replies())
    env = {**qfix_env, "QWEN_LSP_CACHE_DIR": str(cache)}
    setup = SETUPS[how].format(cache=shlex.quote(str(cache)))
    qfix = shlex.join([QFIX, "--json", "--", "python", "script.py"])
    run = subprocess.run(["unshare", "-m", "sh", "-c", f"{setup} && {qfix}"], cwd=repo, env=env,
                         capture_output=True, text=True, timeout=120)
    ours = run.stderr.split("NameError: name 'nme' is not defined")[-1]
    assert "internal error" not in ours and "Traceback" not in ours, ours
    report = json.loads(run.stdout)
    assert report["outcome"] in ("proposed", "changed_unverified") and report["diffs"], ours  # unverified: no bubblewrap
    assert ours.count("running without it") == 1, ours
