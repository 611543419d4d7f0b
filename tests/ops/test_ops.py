"""Serving arithmetic, doctor (against the vLLM double set up right and wrong) and stats."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from qwen_lsp.llm import calllog
from qwen_lsp.cli import main as qwen_lsp_main
from qwen_lsp.ops.doctor import run_doctor
from qwen_lsp.ops.serve_local import SERVED_BY
from qwen_lsp.ops.serving import LINEAR_STATE_BYTES, NotEnoughMemory, kv_bytes_per_token, max_context, plan_serving, tensor_parallel
from qwen_lsp.settings import Settings
from qwen_lsp.ops.stats import parse_metrics, summarize
from tests.hostile import path_without_bwrap
from tests.net import closed_port_url, free_port
from tests.ops.helpers import honest_server
from tests.vllm_double import Reply, VLLMDouble

GIB = 1024**3

# -- serving arithmetic: worked examples -------------------------------------------------------


def test_kv_cache_per_token_of_the_16_full_attention_layers():
    assert kv_bytes_per_token() == 2 * 16 * 4 * 256 * 2 == 65_536  # 64 KiB at bf16
    assert LINEAR_STATE_BYTES == 48 * (48 * 128 * 128 * 4 + (2 * 16 * 128 + 48 * 128) * 3 * 2)


def test_one_48_gib_gpu_gets_fp8_weights_and_about_178k_tokens():
    # 48 * 0.9 - 3 = 40.2 GiB usable; minus 28.5 GiB FP8 weights; minus 4 sequences' DeltaNet state.
    kv_budget = (48 * 0.9 - 3 - 28.5) * GIB - 4 * LINEAR_STATE_BYTES
    expected = int(kv_budget // 65_536) // 1024 * 1024
    plan = plan_serving(48, 1)
    assert (plan.weights, plan.model, plan.max_model_len) == ("fp8", "Qwen/Qwen3.6-27B-FP8", expected)
    assert expected == 182_272
    assert "--tensor-parallel-size" not in plan.command


def test_one_80_gib_gpu_runs_bf16_at_the_full_262k_context():
    plan = plan_serving(80, 1)
    assert (plan.weights, plan.max_model_len) == ("bf16", 262_144)
    shell = plan.shell()
    for flag in ("--reasoning-parser qwen3", "--enable-auto-tool-choice", "--tool-call-parser qwen3_coder",
                 "--enable-prompt-tokens-details", "--max-model-len 262144"):
        assert flag in shell


def test_two_24_gib_gpus_need_tensor_parallel_fp8():
    plan = plan_serving(24, 2)
    assert (plan.weights, plan.tensor_parallel, plan.max_model_len) == ("fp8", 2, 133_120)
    assert plan.command[plan.command.index("--tensor-parallel-size") + 1] == "2"


def test_eight_gpus_are_two_tensor_parallel_replicas():
    plan = plan_serving(80, 8)
    assert (plan.tensor_parallel, plan.data_parallel) == (4, 2)
    assert tensor_parallel(3) == 2  # must divide the 4 KV heads


def test_one_24_gib_gpu_is_refused_with_the_alternatives():
    with pytest.raises(NotEnoughMemory, match="llama.cpp"):
        plan_serving(24, 1)


def test_mtp_costs_memory_and_adds_the_speculative_config():
    assert max_context(48, 1, "fp8", mtp=True)[0] < max_context(48, 1, "fp8")[0]
    plan = plan_serving(80, 1, mtp=True)
    config = json.loads(plan.command[plan.command.index("--speculative-config") + 1])
    assert config == {"method": "mtp", "num_speculative_tokens": 2}


# -- doctor -----------------------------------------------------------------------------------


def ignores_structured_outputs(body: dict) -> Reply:
    if body.get("structured_outputs"):
        return Reply(content="Sure! The answer is yes.")
    return honest_server(body)


async def doctor(double: VLLMDouble, tmp_path: Path) -> dict[str, tuple[bool, str]]:
    checks = await run_doctor(Settings(base_url=double.base_url, cache_dir=tmp_path))
    return {c.name: (c.ok, c.fix) for c in checks}


async def test_doctor_passes_a_correctly_configured_server(tmp_path):
    with VLLMDouble() as double:
        double.responder = honest_server
        results = await doctor(double, tmp_path)
    assert list(results) == [
        "sandbox for verification", "server reachable", "model and context", "thinking works", "non-thinking works", "tool calls parse",
        "structured outputs honored", "cached-token reporting", "prefix caching effective", "tokenizer agreement",
    ]
    assert all(ok for ok, _ in results.values()), results


@pytest.mark.parametrize(
    ("double_kwargs", "responder", "failing", "fix_mentions"),
    [
        ({"reasoning_parser": False}, honest_server, "thinking works", "--reasoning-parser qwen3"),
        ({"tool_parser": False}, honest_server, "tool calls parse", "--enable-auto-tool-choice"),
        ({"report_cached_tokens": False}, honest_server, "cached-token reporting", "--enable-prompt-tokens-details"),
        ({"report_cached_tokens": False}, honest_server, "prefix caching effective", "--enable-prefix-caching"),
        ({"prefix_caching": False}, honest_server, "prefix caching effective", "vllm#51198"),  # reported, never hits
        ({"tokenize_offset": 3}, honest_server, "tokenizer agreement", "not Qwen3.6"),
        ({"max_model_len": 8192}, honest_server, "model and context", "--max-model-len"),
        ({}, ignores_structured_outputs, "structured outputs honored", "structured_outputs"),
    ],
)
async def test_doctor_names_each_misconfiguration_with_its_fix(tmp_path, double_kwargs, responder, failing, fix_mentions):
    with VLLMDouble(**double_kwargs) as double:
        double.responder = responder
        results = await doctor(double, tmp_path)
    ok, fix = results[failing]
    assert not ok and fix_mentions in fix
    assert sum(not ok for ok, _ in results.values()) <= 2  # only what is really wrong


async def test_doctor_against_serve_local_never_prescribes_vllm_flags(tmp_path):
    """llama.cpp behind serve-local has no --reasoning-parser or --tool-call-parser: its fixes name what it has."""
    with VLLMDouble(max_model_len=8192) as double:
        double.owned_by = SERVED_BY
        double.responder = lambda body: Reply(content="ok")  # never thinks, never calls a tool, ignores schemas
        checks = await run_doctor(Settings(base_url=double.base_url, cache_dir=tmp_path))
    failing = {c.name: c.fix for c in checks if not c.ok}
    assert {"model and context", "thinking works", "tool calls parse", "structured outputs honored"} <= set(failing)
    for name, fix in failing.items():
        assert fix and not re.search(r"--max-model-len|--reasoning-parser|--tool-call-parser|--enable-|vLLM", fix), (name, fix)
    assert "--ctx-size" in failing["model and context"] and "chat template" in failing["tool calls parse"]


async def test_doctor_on_a_server_that_is_down(tmp_path):
    port = free_port()
    checks = await run_doctor(Settings(base_url=f"http://127.0.0.1:{port}/v1", cache_dir=tmp_path))
    assert [(c.name, c.ok) for c in checks] == [("sandbox for verification", True), ("server reachable", False)]
    assert "vllm serve" in checks[1].fix and "qwen-lsp model-command" in checks[1].fix and "serve-local" in checks[1].fix
    assert "serve-local --model" in checks[1].detail + checks[1].fix
    assert (checks[1].detail + checks[1].fix).count("serve-local") == 2  # the route and its --install, said once


async def test_doctor_says_when_fixes_cannot_be_verified_and_how_to_enable_the_sandbox(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", path_without_bwrap(tmp_path / "shims"))
    checks = await run_doctor(Settings(base_url=closed_port_url(), cache_dir=tmp_path))
    (jail,) = [c for c in checks if c.name == "sandbox for verification"]
    assert not jail.ok and "not installed" in jail.detail and "not verified: no sandbox" in jail.detail
    assert "apt install bubblewrap" in jail.fix


# -- stats ------------------------------------------------------------------------------------

RECORDED_LOG = Path(__file__).parent / "data" / "calls.jsonl"


def test_stats_summarize_a_recorded_log():
    stats = summarize(calllog.read(RECORDED_LOG))
    assert (stats.fixes, stats.calls, stats.thinking_calls, stats.non_thinking_calls) == (2, 7, 1, 6)
    assert stats.calls_per_fix == 3.5  # 4 calls in the first fix, 3 in the repeat
    assert stats.disk_cache_hit_rate == 0.5  # the repeat reused the cached plan
    assert stats.prefix_cache_hit_rate == round(17_200 / 24_000, 3)  # summed by hand from the file
    assert (stats.latency_p50, stats.latency_p95) == (1.0, 9.0)
    assert stats.failed_calls == 0


def test_the_log_skips_torn_lines(tmp_path):
    calllog.append(tmp_path, calllog.CallRecord(mode="thinking", seconds=1.0))
    with calllog.log_path(tmp_path).open("a") as f:
        f.write('{"kind": "call", "mo')  # a torn write
    assert len(calllog.read(calllog.log_path(tmp_path))) == 1


def test_vllm_metrics_give_the_server_side_prefix_hit_rate():
    text = (
        'vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0\n'
        'vllm:prefix_cache_hits_total{engine="0",model_name="m"} 750.0\n'
        "# TYPE vllm:time_to_first_token_seconds histogram\n"
        'vllm:time_to_first_token_seconds_sum{engine="0"} 3.0\n'
        'vllm:time_to_first_token_seconds_count{engine="0"} 4.0\n'
    )
    metrics = parse_metrics(text)
    assert (metrics.prefix_cache_hit_rate, metrics.ttft_mean) == (0.75, 0.75)


# -- the subcommands ---------------------------------------------------------------------------


def test_model_command_prints_the_vllm_command(capsys):
    assert qwen_lsp_main(["model-command", "--gpu-memory-gib", "48"]) == 0
    out = capsys.readouterr().out
    assert "vllm serve Qwen/Qwen3.6-27B-FP8 --max-model-len 182272" in out and "serve-local --model" in out


def test_model_command_too_small_exits_1_with_the_llama_cpp_route(capsys):
    assert qwen_lsp_main(["model-command", "--gpu-memory-gib", "16"]) == 1
    captured = capsys.readouterr()
    assert "cannot hold" in captured.err and "serve-local --model" in captured.out


def test_doctor_json_for_scripts(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("QWEN_LSP_CACHE_DIR", str(tmp_path))
    with VLLMDouble(tool_parser=False) as double:
        double.responder = honest_server
        code = qwen_lsp_main(["doctor", "--json", "--base-url", double.base_url])
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)}
    assert code == 1 and not checks["tool calls parse"]["ok"] and checks["thinking works"]["ok"]


def test_stats_command_reads_the_log(capsys):
    assert qwen_lsp_main(["stats", "--log", str(RECORDED_LOG), "--json"]) == 0
    local = json.loads(capsys.readouterr().out)["local"]
    assert (local["fixes"], local["calls"], local["calls_per_fix"]) == (2, 7, 3.5)


def test_model_command_without_a_gpu_points_at_serve_local(capsys):
    assert qwen_lsp_main(["model-command", "--gpu-memory-gib", "0"]) == 1  # no traceback
    captured = capsys.readouterr()
    assert "at least one GPU" in captured.err and "qwen-lsp serve-local --model" in captured.out


def test_doctor_prints_each_check_as_it_completes(tmp_path):
    """The first lines are out while a later probe is still waiting on the server."""
    import subprocess
    import sys
    import threading

    release = threading.Event()

    def slow_tools(body: dict) -> Reply:
        if body.get("tools"):
            release.wait(60)
        return honest_server(body)

    with VLLMDouble() as double:
        double.responder = slow_tools
        proc = subprocess.Popen([sys.executable, "-m", "qwen_lsp.cli", "doctor", "--base-url", double.base_url],
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "QWEN_LSP_CACHE_DIR": str(tmp_path / "cache")})
        try:
            sandbox = proc.stdout.readline()
            first = proc.stdout.readline()
            second = proc.stdout.readline()
            assert sandbox.startswith(("✓ sandbox for verification", "✗ sandbox for verification"))
            assert first.startswith("✓ server reachable") and second.startswith("✓ model and context")
            assert proc.poll() is None  # still waiting on the tools probe
        finally:
            release.set()
        rest = proc.communicate(timeout=60)[0]
    assert "✓ tool calls parse" in rest and proc.returncode == 0


def test_doctor_on_a_terminal_shows_a_spinner_naming_the_check(tmp_path):
    import sys

    import pexpect

    with VLLMDouble() as double:
        double.responder = honest_server
        child = pexpect.spawn(sys.executable, ["-m", "qwen_lsp.cli", "doctor", "--base-url", double.base_url],
                              cwd=str(tmp_path), env={**os.environ, "QWEN_LSP_CACHE_DIR": str(tmp_path / "c"),
                                                      "TERM": "xterm-256color"}, encoding="utf-8", timeout=60)
        child.expect("checking ")
        child.expect(pexpect.EOF)
        child.close()
    assert child.exitstatus == 0


def test_model_command_without_arguments_asks_nvidia_smi_or_explains(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi
    assert qwen_lsp_main(["model-command"]) == 0
    out = capsys.readouterr().out
    assert "--gpu-memory-gib 80" in out and "qwen-lsp serve-local --install" in out
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\nprintf '81920\\n81920\\n'\n")
    fake.chmod(0o755)
    assert qwen_lsp_main(["model-command"]) == 0
    out = capsys.readouterr().out
    assert "nvidia-smi: 2 GPU(s) of 80 GiB" in out and "vllm serve" in out
