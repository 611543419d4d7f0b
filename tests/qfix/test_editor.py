"""qfix and a running qwen-lsp (a real server over stdio, driven by pytest-lsp): the failure
qfix saw shows as diagnostics in the editor, a verified fix clears them, and fixing in the
editor after qfix reuses qfix's cached plan."""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from qwen_lsp.lsp.convert import file_uri
from tests.lsp.helpers import code_actions, wait_until
from tests.qfix.helpers import QFIX, fix_replies

MAIN_FIX = {"path": "main.py", "old": "print(undefined_name)", "new": "print(x)"}


def qfix(args: list[str], project, env) -> subprocess.CompletedProcess:
    return subprocess.run([QFIX, *args], cwd=project, env=env, capture_output=True, text=True, timeout=90,
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def env(qfix_env, cache_dir):
    return {**qfix_env, "QWEN_LSP_CACHE_DIR": str(cache_dir)}  # the server's cache dir: same socket, same plans


async def test_qfix_failures_show_in_the_editor_and_a_verified_fix_clears_them(lsp, vllm, project, env):
    uri = file_uri(project, "main.py")
    vllm.script(*fix_replies(**MAIN_FIX))
    proc = await asyncio.to_thread(qfix, ["--yes", "--", "python", "main.py"], project, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # qfix sent the failure first (diagnostics appeared), then the passing re-run (cleared).
    await wait_until(lambda: uri in lsp.diagnostics and not lsp.diagnostics[uri], what="diagnostics cleared")
    assert (project / "main.py").read_text().count("print(x)") == 1


async def test_the_failure_reaches_the_editor_before_the_model_answers(lsp, vllm, project, env):
    uri = file_uri(project, "main.py")
    vllm.script(*fix_replies(**MAIN_FIX))
    proc = await asyncio.to_thread(qfix, ["--dry-run", "--", "python", "main.py"], project, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (diagnostic,) = await wait_until(lambda: lsp.diagnostics.get(uri), what="diagnostics from qfix")
    assert diagnostic.source == "qwen" and diagnostic.range.start.line == 2


async def test_fixing_in_the_editor_after_qfix_makes_no_new_thinking_call(lsp, vllm, project, env):
    """The shared disk cache: the server builds the same task for the run as qfix, so the plan is reused."""
    uri = file_uri(project, "main.py")
    vllm.script(*fix_replies(**MAIN_FIX))
    proc = await asyncio.to_thread(qfix, ["--dry-run", "--", "python", "main.py"], project, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    diagnostics = await wait_until(lambda: lsp.diagnostics.get(uri), what="diagnostics from qfix")
    vllm.reset()
    vllm.script(*fix_replies(**MAIN_FIX, with_plan=False))

    actions = await code_actions(lsp, uri, list(diagnostics))
    fix = next(a for a in actions if a.title.startswith("Fix with Qwen"))
    await lsp.code_action_resolve_async(fix)
    thinking = [b["chat_template_kwargs"]["enable_thinking"] for b in vllm.chat_requests()]
    assert thinking and not any(thinking)
