"""`qwen-lsp model-command` for a team: the replicas and the vLLM Router line in front of them."""

from __future__ import annotations

import shlex

from qwen_lsp.cli import main as qwen_lsp_main


def test_several_replicas_print_one_server_each_and_the_router_with_consistent_hash(capsys):
    assert qwen_lsp_main(["model-command", "--gpu-memory-gib", "80", "--gpus", "8"]) == 0
    lines = capsys.readouterr().out.splitlines()
    replicas = [line for line in lines if line.startswith("CUDA_VISIBLE_DEVICES=")]
    assert [r.split()[0] for r in replicas] == ["CUDA_VISIBLE_DEVICES=0,1,2,3", "CUDA_VISIBLE_DEVICES=4,5,6,7"]
    assert all("--data-parallel-size" not in r and "--enable-prompt-tokens-details" in r for r in replicas)
    (router,) = [shlex.split(line) for line in lines if line.startswith("vllm-router ")]
    assert router[router.index("--policy") + 1] == "consistent_hash"
    urls = router[router.index("--worker-urls") + 1:]
    assert urls == ["http://127.0.0.1:8001", "http://127.0.0.1:8002"]
    assert all(f"--port {url.rsplit(':', 1)[1]}" in replica for url, replica in zip(urls, replicas))


def test_one_replica_still_names_the_router_for_a_team_of_machines(capsys):
    assert qwen_lsp_main(["model-command", "--gpu-memory-gib", "80", "--gpus", "1"]) == 0
    out = capsys.readouterr().out
    assert "# vllm-router --host 0.0.0.0 --port 8000 --policy consistent_hash --worker-urls" in out
