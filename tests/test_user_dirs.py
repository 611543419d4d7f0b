"""The suite's own cache and state dirs (tests/conftest.py's autouse `own_user_dirs`): a test, and every
process it starts, writes its model-call log, plan cache and qfix records there, never into the user's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from platformdirs import user_cache_dir, user_state_dir

from tests.vllm_double import Reply

CALL_IN_A_CHILD = """
import asyncio
from qwen_lsp.llm.client import ModelClient
from qwen_lsp.settings import Settings
from terminal_agent.paths import state_dir

async def main():
    client = ModelClient(Settings(max_retries=0))  # every directory from the environment, as qfix has it
    await client.complete([{"role": "user", "content": "hi"}], thinking=False, max_tokens=8)
    await client.close()

asyncio.run(main())
print(state_dir())
"""


def _fingerprint(path: Path) -> tuple[int, int] | None:
    return (path.stat().st_size, path.stat().st_mtime_ns) if path.exists() else None


def test_a_model_call_in_a_child_process_is_logged_in_the_tests_own_cache(own_user_dirs, vllm):
    users_log = Path(user_cache_dir("qwen-lsp")) / "calls.jsonl"  # where a child without a cache dir would log
    before = _fingerprint(users_log)
    vllm.script(Reply(content="ok"))
    child = subprocess.run([sys.executable, "-c", CALL_IN_A_CHILD], env={**os.environ, "QWEN_LSP_BASE_URL": vllm.base_url},
                           capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr
    own_log = own_user_dirs["QWEN_LSP_CACHE_DIR"] / "calls.jsonl"
    assert len(own_log.read_text().splitlines()) == 1  # the call was counted here...
    assert _fingerprint(users_log) == before  # ...and not in the user's log
    assert Path(child.stdout.strip()) == own_user_dirs["QFIX_STATE_DIR"] != Path(user_state_dir("qwen-lsp"))


def test_each_test_starts_with_empty_dirs_of_its_own(own_user_dirs, tmp_path_factory):
    for path in own_user_dirs.values():
        assert not path.exists() or not any(path.iterdir())
        assert path.is_relative_to(tmp_path_factory.getbasetemp())


SHOW_SIGINT = "import signal; print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)"
CHILD_TEST = f'''
import subprocess, sys

def test_a_child_of_the_suite_can_be_interrupted():
    shown = subprocess.run([sys.executable, "-c", {SHOW_SIGINT!r}], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "False"
'''


def test_a_suite_started_with_sigint_ignored_starts_its_processes_with_sigint_default(tmp_path):
    """Started in the background of a script (SIGINT ignored, which exec keeps), the suite's children must
    still take Ctrl-C: tests/conftest.py puts a handler back, and a handler does not survive exec."""
    import signal

    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    ignored = subprocess.run([sys.executable, "-c", SHOW_SIGINT], capture_output=True, text=True,
                             preexec_fn=ignore_sigint, check=True)
    assert ignored.stdout.strip() == "True"  # what the suite's processes inherit without the conftest's fix
    (tmp_path / "test_child.py").write_text(CHILD_TEST)
    root = Path(__file__).resolve().parents[1]
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
                          "--rootdir", str(tmp_path), str(tmp_path / "test_child.py")],
                         cwd=root, capture_output=True, text=True, preexec_fn=ignore_sigint, timeout=300)
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout + run.stderr


def test_the_run_caches_in_a_folder_of_its_own_with_the_users_other_caches_linked_in():
    """A process that forgot its cache dir writes into this run's stand-in for ~/.cache/qwen-lsp, which the
    per-test check watches; pip's cache, the built llama.cpp and code-server are still the user's."""
    from tests.conftest import SUITE_XDG_CACHE, USERS_CACHE, USERS_OTHER_CACHES

    assert Path(os.environ["XDG_CACHE_HOME"]) == SUITE_XDG_CACHE and USERS_CACHE == SUITE_XDG_CACHE / "qwen-lsp"
    assert not (SUITE_XDG_CACHE / "qwen-lsp").is_symlink()
    for entry in USERS_OTHER_CACHES:
        assert (SUITE_XDG_CACHE / entry.name).resolve() == entry.resolve()
