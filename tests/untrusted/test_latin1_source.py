"""A latin-1 source file in the traceback (issue 35, item 5): shown to the model (its bytes that are
not UTF-8 as replacement characters) instead of crashing qfix before any request with
`UnicodeEncodeError ... surrogates not allowed`."""

from __future__ import annotations

import json
import subprocess

from tests.qfix.helpers import PLAN, QFIX, git
from tests.vllm_double import Reply

LIB = "# -*- coding: latin-1 -*-\n# caf\xe9 cr\xe8me\ndef price():\n    return total\n".encode("latin-1")


def test_a_latin1_file_in_the_traceback_reaches_the_model(repo, qfix_env, vllm):
    (repo / "lib.py").write_bytes(LIB)
    (repo / "script.py").write_text("import lib\n\nprint(lib.price())\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "latin-1")
    vllm.script(Reply(reasoning="total is undefined", content=json.dumps(PLAN)),
                # the plan names edits: an early finish is answered once with the plan, the second ends it
                *[Reply(tool_calls=[("finish", {"summary": "nothing to change"})])] * 2)
    run = subprocess.run([QFIX, "--json", "--", "python", "script.py"], cwd=repo, env=qfix_env,
                         capture_output=True, text=True, timeout=120)
    ours = run.stderr.split("NameError: name 'total' is not defined")[-1]
    assert "internal error" not in ours and "UnicodeEncodeError" not in ours, ours
    report = json.loads(run.stdout)
    assert report["outcome"] != "error", report
    first = json.dumps(vllm.chat_requests()[0]["messages"], ensure_ascii=False)
    assert "def price():" in first and "caf\ufffd cr\ufffdme" in first  # the file, shown
    assert (repo / "lib.py").read_bytes() == LIB
