"""QWEN_LSP_CACHE_DIR (or cacheDir) pointing at a regular file: one clear line from qfix and
qwen-review, no traceback; the language server warns and keeps serving with the default."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from qwen_lsp.review import cli as review_cli
from tests.lsp.helpers import explain_first_lines, open_doc
from tests.qfix.helpers import BUGGY, QFIX
from tests.vllm_double import Reply

CLEAR = "is a file, not a folder: point cache_dir (QWEN_LSP_CACHE_DIR) at a folder"


@pytest.fixture
def cache_file(tmp_path: Path) -> Path:
    path = tmp_path / "not-a-folder"
    path.write_text("user data\n")
    return path


def test_qfix_says_so_in_one_line_and_still_writes_its_json_report(repo, qfix_env, vllm, cache_file):
    env = {**qfix_env, "QWEN_LSP_CACHE_DIR": str(cache_file)}
    run = subprocess.run([QFIX, "--json", "--", "python", "script.py"], cwd=repo, env=env,
                         capture_output=True, text=True, timeout=120)
    # The bad value is dropped where it was set (settings load leniently) and said in one line;
    # the fix goes on with the default cache and the report is still written.
    warning = f"qfix: ignoring invalid setting cache_dir (from environment: Value error, {cache_file} {CLEAR})\n"
    ours = run.stderr.split("NameError: name 'nme' is not defined. Did you mean: 'name'?\n")[-1]  # after the script's own
    assert warning in ours and "Traceback" not in ours
    report = json.loads(run.stdout)
    assert report["outcome"] and report["command"] == "python script.py"
    assert cache_file.read_text() == "user data\n" and (repo / "script.py").read_text() == BUGGY


def test_qwen_review_says_so_in_one_line(calc_repo, review_env, cache_file, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("QWEN_LSP_CACHE_DIR", str(cache_file))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # the default cache: this test's, not the user's
    review_cli.main(["-C", str(calc_repo.root)])  # goes on with the default cache
    err = capsys.readouterr().err
    assert f"ignoring invalid setting cache_dir (from environment: Value error, {cache_file} {CLEAR})" in err
    assert "Traceback" not in err and cache_file.read_text() == "user data\n"
    assert (tmp_path / "xdg" / "qwen-lsp" / "calls.jsonl").is_file()  # it went on, with the default cache


class TestLanguageServer:
    @pytest.fixture
    def server_options(self, vllm, tmp_path: Path) -> dict[str, Any]:
        (tmp_path / "file").write_text("user data\n")
        return {"baseUrl": vllm.base_url, "cacheDir": str(tmp_path / "file"), "maxRetries": 0}

    async def test_the_server_warns_and_keeps_serving(self, lsp, vllm, project, tmp_path):
        uri = open_doc(lsp, project, "calc.py")
        vllm.script(Reply(content="It subtracts."))
        assert await explain_first_lines(lsp, uri) == {"markdown": "It subtracts."}
        warning = lsp.messages[0]
        assert warning.type == types.MessageType.Warning and "cache_dir" in warning.message
        assert "is a file, not a folder" in warning.message
        assert (tmp_path / "file").read_text() == "user data\n"
