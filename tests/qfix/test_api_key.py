"""A server that wants a key (issue 39, item 3): a 401 is "up but rejected", never "start a server".
qfix exits 4 as its --help promises, and doctor's fix names QWEN_LSP_API_KEY."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from qwen_lsp.ops.doctor import run_doctor
from qwen_lsp.settings import Settings
from tests.qfix.helpers import QFIX, fix_replies
from tests.vllm_double import VLLMDouble

KEY = "sk-team-4711"


def _qfix(repo, env) -> subprocess.CompletedProcess:
    return subprocess.run([QFIX, "--json", "--yes", "--", "python", "script.py"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_qfix_without_the_servers_key_exits_4_and_names_the_setting(repo, qfix_env, vllm):
    vllm.api_key = KEY
    proc = _qfix(repo, qfix_env)
    assert proc.returncode == 4, proc.stderr
    report = json.loads(proc.stdout)
    assert report["outcome"] == "error" and "HTTP 401" in report["error"]
    assert "QWEN_LSP_API_KEY" in report["error"] and "Start one with" not in report["error"]
    assert "QWEN_LSP_API_KEY" in proc.stderr and "Start one with" not in proc.stderr
    help_text = " ".join(subprocess.run([QFIX, "--help"], capture_output=True, text=True).stdout.split())
    assert "4 the model server is up but rejected a request" in help_text  # what --help promises


def test_qfix_with_a_wrong_key_says_the_key_it_was_given_was_refused(repo, qfix_env, vllm):
    vllm.api_key = KEY
    proc = _qfix(repo, {**qfix_env, "QWEN_LSP_API_KEY": "sk-wrong"})
    assert proc.returncode == 4
    assert "the key it was given" in json.loads(proc.stdout)["error"]


def test_qfix_with_the_key_fixes(repo, qfix_env, vllm):
    vllm.api_key = KEY
    vllm.script(*fix_replies())
    proc = _qfix(repo, {**qfix_env, "QWEN_LSP_API_KEY": KEY})
    assert json.loads(proc.stdout)["engine_outcome"] in ("fixed", "changed_unverified"), proc.stderr


async def test_doctor_on_a_keyed_server_names_the_key_not_how_to_start_one(tmp_path):
    with VLLMDouble(api_key=KEY) as double:
        checks = await run_doctor(Settings(base_url=double.base_url, cache_dir=tmp_path))
    reachable = next(c for c in checks if c.name == "server reachable")
    assert not reachable.ok and "HTTP 401" in reachable.detail
    assert "QWEN_LSP_API_KEY" in reachable.fix and "vllm serve Qwen" not in reachable.fix
    assert "Start one" not in reachable.detail + reachable.fix


def test_the_doctor_command_prints_the_key_fix(tmp_path):
    with VLLMDouble(api_key=KEY) as double:
        proc = subprocess.run([str(Path(QFIX).parent / "qwen-lsp"), "doctor"],
                              env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "QWEN_LSP_BASE_URL": double.base_url,
                                   "QWEN_LSP_CACHE_DIR": str(tmp_path / "c")},
                              capture_output=True, text=True, timeout=120)
    assert "QWEN_LSP_API_KEY" in proc.stdout + proc.stderr and "Start one with" not in proc.stdout + proc.stderr
    assert proc.returncode != 0
