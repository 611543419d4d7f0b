"""The language server's start path (the command line with no subcommand, then the server module)
imports neither the model client nor the operator commands' dependencies: they are loaded after
`ready` (engine_thread.preload) or by the commands that need them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_servers_start_path_leaves_the_model_client_and_the_operator_commands_for_later() -> None:
    script = (
        "import json, sys\n"
        "from qwen_lsp import cli\n"
        "parser = cli.build_parser()\n"
        "assert parser.parse_args([]).handler is cli.serve\n"
        "from qwen_lsp.lsp.server import create_server\n"
        "create_server()\n"
        "print(json.dumps(sorted(m for m in ('openai', 'prometheus_client', 'qwen_lsp.llm.client', "
        "'qwen_lsp.ops.doctor', 'qwen_lsp.ops.stats', 'qwen_lsp.engine.loop') if m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    assert json.loads(out) == []


def test_the_preload_after_ready_loads_the_engine_the_tokenizer_and_the_shell_parser() -> None:
    """What the first fix would otherwise wait for: bashlex rebuilds its parser tables on import."""
    script = (
        "import asyncio, json, sys\n"
        "from qwen_lsp.lsp.engine_thread import EngineThread\n"
        "thread = EngineThread()\n"
        "thread.preload()\n"
        "asyncio.run_coroutine_threadsafe(asyncio.sleep(0), thread.loop).result(timeout=120)  # after the preload\n"
        "print(json.dumps(sorted(m for m in ('bashlex', 'qwen_lsp.engine.loop', 'openai') if m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    assert json.loads(out) == ["bashlex", "openai", "qwen_lsp.engine.loop"]


def test_the_operator_commands_are_still_there() -> None:
    from qwen_lsp import cli

    parser = cli.build_parser()
    for command in ("doctor", "stats", "model-command", "serve-local"):
        assert parser.parse_args([command]).command == command
