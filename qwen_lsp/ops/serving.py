"""The recommended `vllm serve` command for the user's GPUs: a tested function
of memory arithmetic, plus the llama.cpp route for Macs and CPUs."""

from __future__ import annotations

import json
import shlex

from pydantic import BaseModel

GIB = 1024**3

# Qwen3.6-27B (config.json): 64 layers, every 4th full attention -> 16 full-attention
# layers with 4 KV heads of dim 256; 48 Gated DeltaNet layers whose recurrent state
# (48 value heads x 128 x 128, float32) is per sequence, not per token.
FULL_ATTENTION_LAYERS = 16
KV_HEADS = 4
HEAD_DIM = 256
LINEAR_LAYERS = 48
LINEAR_STATE_BYTES = LINEAR_LAYERS * (48 * 128 * 128 * 4 + (2 * 16 * 128 + 48 * 128) * 3 * 2)
MAX_CONTEXT = 262_144
MIN_USEFUL_CONTEXT = 32_768  # below this the agent's prompts (32K input budget) do not fit

WEIGHTS_GIB = {"bf16": 51.5, "fp8": 28.5}  # checkpoint sizes: Qwen/Qwen3.6-27B and -FP8
MODEL_ID = {"bf16": "Qwen/Qwen3.6-27B", "fp8": "Qwen/Qwen3.6-27B-FP8"}
ENGINE_OVERHEAD_GIB = 3.0  # CUDA context, activations, CUDA graphs, per GPU
MTP_EXTRA_GIB = 1.0  # the MTP head's weights and its draft KV, per GPU (approximate)
GPU_MEMORY_UTILIZATION = 0.90  # vLLM's default: 10% headroom stays free


class ServePlan(BaseModel):
    weights: str  # "bf16" | "fp8"
    model: str
    tensor_parallel: int
    data_parallel: int
    max_model_len: int
    max_num_seqs: int
    kv_cache_gib: float
    command: list[str]

    def shell(self) -> str:
        return " ".join(shlex.quote(part) for part in self.command)


class NotEnoughMemory(ValueError):
    pass


def kv_bytes_per_token(kv_dtype_bytes: int = 2) -> int:
    """K and V for every full-attention layer: 2 * 16 * 4 * 256 * 2 B = 64 KiB at bf16."""
    return 2 * FULL_ATTENTION_LAYERS * KV_HEADS * HEAD_DIM * kv_dtype_bytes


def max_context(gpu_memory_gib: float, gpus: int, weights: str, *, max_num_seqs: int = 4, mtp: bool = False) -> tuple[int, float]:
    """Longest max_model_len that fits, and the KV cache (GiB) it leaves, for one replica:

        per GPU:    usable = gpu_memory * 0.90 - overhead (3 GiB) - MTP extra (1 GiB, if on)
        replica:    kv_budget = tp * usable - weights - max_num_seqs * linear_state
        context:    max_model_len = min(262144, kv_budget / kv_bytes_per_token), rounded down to 1024

    vLLM refuses to start unless one sequence of max_model_len fits in the KV cache.
    """
    tp = tensor_parallel(gpus)
    per_gpu = gpu_memory_gib * GPU_MEMORY_UTILIZATION - ENGINE_OVERHEAD_GIB - (MTP_EXTRA_GIB if mtp else 0.0)
    usable = tp * per_gpu - WEIGHTS_GIB[weights]
    kv_budget = usable * GIB - max_num_seqs * LINEAR_STATE_BYTES
    if kv_budget <= 0:
        return 0, 0.0
    tokens = min(MAX_CONTEXT, int(kv_budget // kv_bytes_per_token()) // 1024 * 1024)
    return tokens, kv_budget / GIB


def tensor_parallel(gpus: int) -> int:
    """Tensor parallelism must divide the 4 KV heads: 1, 2 or 4 GPUs per replica."""
    return 4 if gpus >= 4 else 2 if gpus >= 2 else 1


def plan_serving(gpu_memory_gib: float, gpus: int = 1, *, mtp: bool = False, max_num_seqs: int = 4) -> ServePlan:
    """BF16 when it leaves at least 32K of context, else FP8; NotEnoughMemory when neither fits."""
    if gpus < 1 or gpu_memory_gib <= 0:
        raise ValueError("need at least one GPU with some memory")
    for weights in ("bf16", "fp8"):
        context, kv_gib = max_context(gpu_memory_gib, gpus, weights, max_num_seqs=max_num_seqs, mtp=mtp)
        if context >= MIN_USEFUL_CONTEXT:
            tp = tensor_parallel(gpus)
            dp = max(1, gpus // tp)
            return ServePlan(
                weights=weights,
                model=MODEL_ID[weights],
                tensor_parallel=tp,
                data_parallel=dp,
                max_model_len=context,
                max_num_seqs=max_num_seqs,
                kv_cache_gib=round(kv_gib, 1),
                command=_command(MODEL_ID[weights], context, tp, dp, max_num_seqs, mtp),
            )
    raise NotEnoughMemory(
        f"{gpus} x {gpu_memory_gib:g} GiB cannot hold Qwen3.6-27B with a {MIN_USEFUL_CONTEXT}-token context "
        f"(FP8 weights alone are {WEIGHTS_GIB['fp8']} GiB); use the llama.cpp route below (serve-local) or more GPUs."
    )


def _command(model: str, context: int, tp: int, dp: int, seqs: int, mtp: bool) -> list[str]:
    command = [
        "vllm", "serve", model,
        "--max-model-len", str(context),
        "--max-num-seqs", str(seqs),
        "--reasoning-parser", "qwen3",
        "--enable-auto-tool-choice", "--tool-call-parser", "qwen3_coder",
        "--enable-prefix-caching",  # default since vLLM 0.28; harmless before
        "--enable-prompt-tokens-details",  # usage.prompt_tokens_details.cached_tokens
    ]
    if tp > 1:
        command += ["--tensor-parallel-size", str(tp)]
    if dp > 1:
        command += ["--data-parallel-size", str(dp)]
    if mtp:
        command += ["--speculative-config", json.dumps({"method": "mtp", "num_speculative_tokens": 2})]
    return command


# The vLLM Router (PyPI vllm-router): consistent_hash routes on the x-session-id header qwen-lsp sends
# (one workspace of one developer), so a session's prompts keep meeting one replica's prefix cache.
ROUTER_PORT = 8000
REPLICA_FIRST_PORT = 8001


def router_command(worker_urls: list[str], port: int = ROUTER_PORT) -> list[str]:
    return ["vllm-router", "--host", "0.0.0.0", "--port", str(port), "--policy", "consistent_hash",
            "--worker-urls", *worker_urls]


def replica_commands(plan: ServePlan) -> list[str]:
    """One `vllm serve` per replica, each on its own GPUs and port, then the router in front: the
    shell lines for a plan with data_parallel > 1 (its --data-parallel-size made explicit)."""
    base = [part for part in plan.command]
    if "--data-parallel-size" in base:
        at = base.index("--data-parallel-size")
        del base[at:at + 2]
    lines, urls = [], []
    for replica in range(plan.data_parallel):
        gpus = ",".join(str(g) for g in range(replica * plan.tensor_parallel, (replica + 1) * plan.tensor_parallel))
        port = REPLICA_FIRST_PORT + replica
        command = [*base, "--host", "127.0.0.1", "--port", str(port)]
        lines.append(f"CUDA_VISIBLE_DEVICES={gpus} " + " ".join(shlex.quote(p) for p in command) + " &")
        urls.append(f"http://127.0.0.1:{port}")
    lines.append(" ".join(shlex.quote(p) for p in router_command(urls)))
    return lines


LLAMA_CPP_ROUTE = """\
# No GPU, a Mac, or one 24-32 GiB GPU: llama.cpp with a GGUF quantization of Qwen3.6-27B
# downloaded from Hugging Face (Q4_K_M is about 17 GB), served OpenAI-compatible on :8000.
# Needs llama.cpp, built once for this machine (about 12 CPU-minutes; GPU: CMAKE_ARGS=-DGGML_CUDA=on first):
qwen-lsp serve-local --install
qwen-lsp serve-local --model Qwen3.6-27B-Q4_K_M.gguf --port 8000"""


def nvidia_gpus() -> tuple[float, int] | None:
    """(GiB of the smallest GPU, how many) as nvidia-smi reports them; None without nvidia-smi or a GPU."""
    import shutil
    import subprocess

    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    sizes = [float(line) / 1024 for line in out.split() if line.replace(".", "", 1).isdigit()]
    return (round(min(sizes), 1), len(sizes)) if sizes else None
