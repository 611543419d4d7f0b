"""qfix's warm-up: while the user's command runs, the workspace's tags and reference graph are
loaded for the fix (context/preload.py), besides the engine's imports and the tokenizer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from tests.qfix.helpers import PLAN, QFIX
from tests.vllm_double import Reply

# The failing command waits (up to 20 s) for the reference graph to appear in qfix's cache: only a
# preload while it runs can store it, since the fix itself assembles its prompt after the failure.
WAITS_FOR_THE_GRAPH = """\
import glob, os, time
from lib import shout
pattern = os.path.join(os.environ["QWEN_LSP_CACHE_DIR"], "repomap-snapshot-*", "*.graph")
deadline = time.monotonic() + 20
while not glob.glob(pattern) and time.monotonic() < deadline:
    time.sleep(0.05)
print("graph stored while the command ran" if glob.glob(pattern) else "no graph while the command ran")
raise RuntimeError(shout("failed on purpose"))
"""


def test_the_workspace_is_loaded_while_the_command_runs(repo, qfix_env, vllm):
    (repo / "waits.py").write_text(WAITS_FOR_THE_GRAPH)
    (repo / "lib.py").write_text("def shout(text):\n    return text.upper()\n")
    when = time.time_ns() - 60 * 1_000_000_000  # files saved a minute ago, as a repository's usually are
    for path in (repo, repo / "waits.py", repo / "lib.py", repo / "script.py"):
        os.utime(path, ns=(when, when))
    vllm.script(Reply(content=json.dumps(PLAN)), *[Reply(tool_calls=[("finish", {"summary": "nothing to change"})])] * 2)
    done = subprocess.run([QFIX, "--json", "--", sys.executable, "waits.py"], cwd=repo, env=qfix_env,
                          capture_output=True, text=True, timeout=120)
    assert "graph stored while the command ran" in done.stderr + done.stdout
    first = json.dumps(vllm.chat_requests()[0]["messages"])
    assert "def shout(text)" in first  # the fix's prompt still maps what the failing file uses
