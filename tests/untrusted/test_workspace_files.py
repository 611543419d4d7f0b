"""Hostile workspaces: a file that is not UTF-8 is shown to the model but never rewritten in
another encoding, and a symlink out of the workspace puts nothing of its target in a prompt,
a search or an edit."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from qwen_lsp.engine.loop import Engine
from qwen_lsp.settings import Settings
from qwen_lsp.types import Task
from tests.qfix.helpers import PLAN, QFIX, git
from tests.vllm_double import Reply

LATIN1 = "# -*- coding: latin-1 -*-\n# café crème\nprint(undefined_name)\n".encode("latin-1")
SECRET = "def leaked():\n    API_TOKEN = 'SECRET-123'\n    return API_TOKEN\n"


def test_a_latin1_file_reaches_the_model_decoded_and_is_never_rewritten(tmp_path: Path, qfix_env, vllm):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_bytes(LATIN1)
    git(repo, "init", "-q")
    vllm.script(
        Reply(reasoning="r", content=json.dumps(PLAN)),
        Reply(tool_calls=[("read_file", {"path": "app.py"})]),
        Reply(tool_calls=[("edit_file", {"path": "app.py", "old_string": "print(undefined_name)",
                                         "new_string": "print('caf\u00e9')"})]),
        Reply(tool_calls=[("finish", {"summary": "cannot edit it"})]),
        Reply(tool_calls=[("finish", {"summary": "cannot edit it"})]),  # the first was answered with the plan
    )
    run = subprocess.run([QFIX, "--yes", "--json", "--", "python", "app.py"], cwd=repo, env=qfix_env,
                         capture_output=True, text=True, timeout=120)
    report = json.loads(run.stdout)  # no UnicodeEncodeError before the first request
    assert run.returncode == 1 and report["outcome"] == "gave_up" and not report["applied"]
    requests = vllm.chat_requests()
    assert "# caf\ufffd cr\ufffdme" in requests[0]["messages"][1]["content"]  # the prompt, decoded with U+FFFD
    answers = [m["content"] for m in requests[-1]["messages"] if m["role"] == "tool"]
    assert "not UTF-8" in answers[0]  # read_file says it up front
    assert answers[1].startswith("Error: app.py is not UTF-8 text") and "cannot be edited" in answers[1]
    assert (repo / "app.py").read_bytes() == LATIN1


def make_linked_workspace(tmp_path: Path) -> Path:
    (tmp_path / "secret.py").write_text(SECRET)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("from link import leaked\n\nprint(leaked() + missing)\n")
    (ws / "link.py").symlink_to(tmp_path / "secret.py")
    return ws


async def test_a_symlink_out_of_the_workspace_stays_out_of_prompt_search_and_edits(tmp_path: Path, vllm):
    ws = make_linked_workspace(tmp_path)
    output = ('Traceback (most recent call last):\n  File "app.py", line 3, in <module>\n    print(leaked() + missing)\n'
              '  File "link.py", line 2, in leaked\nNameError: name \'missing\' is not defined\n')
    vllm.script(
        Reply(reasoning="r", content=json.dumps(PLAN)),
        Reply(tool_calls=[("search_code", {"pattern": "leaked|TOKEN"}), ("read_file", {"path": "link.py"}),
                          ("edit_file", {"path": "link.py", "old_string": "SECRET", "new_string": "x"})]),
        Reply(tool_calls=[("finish", {"summary": "done"})]),
        Reply(tool_calls=[("finish", {"summary": "done"})]),  # the first was answered with the plan
    )
    engine = Engine(Settings(base_url=vllm.base_url, cache_dir=tmp_path / "cache", max_retries=0))
    result = await engine.fix(Task.for_command("python app.py", 1, output, ""), ws)

    requests = json.dumps(vllm.chat_requests())
    assert "SECRET-123" not in requests and "API_TOKEN" not in requests  # prompt, repo map, tool answers
    search, read, edit = [m["content"] for m in vllm.chat_requests()[-1]["messages"] if m["role"] == "tool"][:3]
    assert search.splitlines() == ["app.py:1: from link import leaked", "app.py:3: print(leaked() + missing)"]
    assert "outside the workspace" in read and "outside the workspace" in edit
    assert result.changes == [] and (tmp_path / "secret.py").read_text() == SECRET
