"""Deeply nested tool arguments (issue 35, item 4): 200,000 nested arrays are malformed arguments,
told to the model like any other; they used to end qfix with a RecursionError (exit 2), losing the
good edit of the same answer."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.qfix.helpers import BUGGY, PLAN, QFIX
from tests.vllm_double import Reply

DEEP = "[" * 200_000 + "]" * 200_000


@pytest.mark.parametrize("how", ["arguments", "a value", "xml in content"])
def test_deep_arguments_are_malformed_and_the_good_edit_stays(repo, qfix_env, vllm, how):
    edit = ("edit_file", {"path": "script.py", "old_string": '"Hello, " + nme', "new_string": '"Hello, " + name'})
    if how == "arguments":
        answer = Reply(tool_calls=[edit, ("read_file", DEEP)])
    elif how == "a value":
        answer = Reply(tool_calls=[edit, ("read_file", '{"path": ' + DEEP + "}")])
    else:  # a server without a tool parser: the call stays in content as Qwen3-Coder's XML
        answer = Reply(tool_calls=[edit], content="<tool_call>\n<function=read_file>\n<parameter=path>\n"
                       + DEEP + "\n</parameter>\n</function>\n</tool_call>")
    vllm.script(Reply(reasoning="typo", content=json.dumps(PLAN)), answer,
                Reply(tool_calls=[("finish", {"summary": "greet() now uses its parameter"})]), Reply(content="done"))
    run = subprocess.run([QFIX, "--json", "--", "python", "script.py"], cwd=repo, env=qfix_env,
                         capture_output=True, text=True, timeout=120)
    ours = run.stderr.split("NameError: name 'nme' is not defined")[-1]
    assert "RecursionError" not in ours and "internal error" not in ours, ours
    report = json.loads(run.stdout)
    assert report["outcome"] in ("proposed", "changed_unverified"), ours  # unverified: no bubblewrap
    assert [d["path"] for d in report["diffs"]] == ["script.py"] and "+    return \"Hello, \" + name" in report["diffs"][0]["diff"]
    assert (repo / "script.py").read_text() == BUGGY  # a dry run
