"""A git-ignored dataset of hundreds of megabytes (issue 35, item 3): the model's read_file shows
it in parts, streamed, and qfix's memory stays that of an ordinary fix (it read the file whole:
1.7 GB for a 1.5 GiB file, and larger ones took the process down)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.qfix.helpers import QFIX, fix_replies, git
from tests.vllm_double import Reply

SIZE = 768 * 2**20  # sparse: costs no disk, but reading it whole costs this much memory
HEAD = "".join(f"row{n},value{n}\n" for n in range(1, 1001))

# Runs qfix and prints its peak resident memory (its own and its children's), in MiB.
PEAK = """
import resource, subprocess, sys
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stderr.write(proc.stderr)
sys.stdout.write(proc.stdout)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, file=sys.stderr)
"""


def test_read_file_of_a_huge_ignored_file_is_streamed_in_parts(repo, qfix_env, vllm):
    (repo / ".gitignore").write_text("data/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore data")
    (repo / "data").mkdir()
    big = repo / "data" / "big.csv"
    big.write_text(HEAD)
    with big.open("r+b") as fh:
        fh.truncate(SIZE)  # a text head, then zeros: a file read whole would be 768 MiB in memory
    replies = fix_replies()
    replies.insert(1, Reply(tool_calls=[("read_file", {"path": "data/big.csv", "start_line": 990})]))
    replies.insert(2, Reply(tool_calls=[("edit_file", {"path": "data/big.csv", "old_string": "row1,", "new_string": "r,"})]))
    vllm.script(*replies)
    run = subprocess.run([sys.executable, "-c", PEAK, QFIX, "--json", "--", "python", "script.py"], cwd=repo,
                         env=qfix_env, capture_output=True, text=True, timeout=180)
    peak_mib = int(run.stderr.strip().splitlines()[-1])
    report = json.loads(run.stdout)
    assert report["outcome"] in ("proposed", "changed_unverified"), run.stderr  # unverified: no bubblewrap here
    answers = [m["content"] for body in vllm.chat_requests() for m in body["messages"] if m.get("role") == "tool"]
    read = next(a for a in answers if a.startswith("data/big.csv"))
    assert f"the file has {SIZE} bytes, too large to read whole or to edit" in read
    assert "990|row990,value990" in read and "1000|row1000,value1000" in read
    assert f"Error: data/big.csv has {SIZE} bytes; files over 2000000 bytes are never edited." in answers
    assert peak_mib < 500, f"qfix peaked at {peak_mib} MiB"
