"""A team's model cluster on one machine: several vLLM test doubles, each with its own simulated
prefix cache, behind the real vLLM Router (PyPI `vllm-router`, a Rust binary), all on 127.0.0.1.
Used by the team tier (tests/team) and bench/bench_team.py.

The doubles answer a fix statelessly from the conversation (`fix_responder`), so any replica can
take any request of any session, as a real replica can; each records which session it served.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.net import free_port
from tests.vllm_double import Reply, VLLMDouble

ROUTER_VERSION = "0.1.17"  # pinned in pyproject.toml's dev extra
PLAN = {"hypotheses": ["the script uses an undefined name"], "evidence": [], "steps": ["use the parameter"],
        "verify_command": None}
SCRIPT = re.compile(r"python (script_\d+\.py)")


def buggy(n: int) -> str:
    """script_N.py: a NameError (a typo of the parameter), different text for each N."""
    return f'def greet_{n}(name):\n    return "Hello {n}, " + nme\n\n\nprint(greet_{n}("world"))\n'


def stateless(plan: Reply, steps: list[Reply]):
    """A responder that answers from the conversation alone: `plan` when the request asks for JSON,
    else the step for the number of tool results so far (the last one repeats)."""

    def respond(body: dict[str, Any]) -> Reply:
        if body.get("structured_outputs"):
            return plan
        tool_results = sum(1 for m in body.get("messages") or [] if m.get("role") == "tool")
        return steps[min(tool_results, len(steps) - 1)]

    return respond


def fix_responder(chunk_delay: float = 0.0, head_delay: float = 0.0):
    """Qwen's answers to the typo, from the conversation alone: a plan (the request asks for JSON),
    then read_file, edit_file, finish as the tool results come back."""

    def respond(body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        text = "\n".join(m.get("content") or "" for m in messages if isinstance(m.get("content"), str))
        found = SCRIPT.search(text)
        path = found.group(1) if found else "script_0.py"
        if body.get("structured_outputs"):
            return Reply(reasoning="nme is a typo of the parameter name", content=json.dumps(PLAN),
                         chunk_delay=chunk_delay, head_delay=head_delay)
        tool_results = sum(1 for m in messages if m.get("role") == "tool")
        if tool_results == 0:
            return Reply(tool_calls=[("read_file", {"path": path})], chunk_delay=chunk_delay, head_delay=head_delay)
        if tool_results == 1:
            return Reply(tool_calls=[("edit_file", {"path": path, "old_string": "+ nme", "new_string": "+ name"})],
                         chunk_delay=chunk_delay, head_delay=head_delay)
        return Reply(tool_calls=[("finish", {"summary": "the greeting uses its parameter"})], chunk_delay=chunk_delay, head_delay=head_delay)

    return respond


def router_argv(port: int, metrics_port: int, workers: list[str], policy: str, *extra: str) -> list[str]:
    """The router, run by this interpreter (its console script is a Python launcher of the Rust core)."""
    launch = "import sys; from vllm_router.launch_router import main; sys.argv[0] = 'vllm-router'; sys.exit(main())"
    return [sys.executable, "-c", launch, "--host", "127.0.0.1", "--port", str(port), "--policy", policy,
            "--worker-urls", *workers, "--prometheus-host", "127.0.0.1", "--prometheus-port", str(metrics_port),
            "--log-level", "warning", *extra]


@dataclass
class Cluster:
    replicas: list[VLLMDouble]
    policy: str
    port: int = 0
    metrics_port: int = 0
    process: subprocess.Popen | None = None
    log: Path | None = None
    argv: list[str] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def chats(self) -> list[tuple[int, Any]]:
        """(replica index, recorded request) of every chat completion any replica served."""
        return [(i, r) for i, d in enumerate(self.replicas) for r in d.requests if r.path == "/v1/chat/completions"]

    def sessions(self) -> dict[str, Counter]:
        """Per x-session-id: how many of its requests each replica got."""
        seen: dict[str, Counter] = {}
        for i, request in self.chats():
            seen.setdefault(request.headers.get("x-session-id", "-"), Counter())[i] += 1
        return seen

    def affinity(self) -> float:
        """The share of each session's requests that went to its main replica, over all sessions."""
        sessions = self.sessions()
        total = sum(sum(c.values()) for c in sessions.values())
        return sum(max(c.values()) for c in sessions.values()) / total if total else 0.0

    def cached_share(self) -> float:
        """Cached prompt tokens / prompt tokens over every replica (vLLM's prefix_cache hits / queries)."""
        hits = sum(d._counters["prefix_cache_hits"] for d in self.replicas)
        queries = sum(d._counters["prefix_cache_queries"] for d in self.replicas)
        return hits / queries if queries else 0.0

    def router_metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as answer:
            return answer.read().decode()

    def kill(self, index: int) -> None:
        """Replica `index` dies: its open answers break off mid-stream, its port refuses connections."""
        self.replicas[index].kill()


def wait_ready(url: str, timeout: float = 60, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the router exited with {process.returncode}; its log says why")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                answer.read()
                return
        except (OSError, urllib.error.URLError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@contextmanager
def cluster(n: int, policy: str, tmp: Path, *, chunk_delay: float = 0.0, head_delay: float = 0.0,
            router_args: tuple[str, ...] = (), block_size: int = 16) -> Iterator[Cluster]:
    """`n` doubles behind `vllm-router --policy POLICY`; everything stopped on exit."""
    replicas = [VLLMDouble(block_size=block_size).start() for _ in range(n)]
    for double in replicas:
        double.responder = fix_responder(chunk_delay, head_delay)
    made = Cluster(replicas, policy, port=free_port(), metrics_port=free_port(), log=tmp / f"router-{policy}.log")
    made.argv = router_argv(made.port, made.metrics_port, [d.root_url for d in replicas], policy, *router_args)
    try:
        with open(made.log, "w") as log:
            made.process = subprocess.Popen(made.argv, stdout=log, stderr=subprocess.STDOUT,
                                            env={**os.environ, "NO_COLOR": "1"})
        wait_ready(f"http://127.0.0.1:{made.port}/v1/models", process=made.process)
        yield made
    finally:
        if made.process is not None:
            made.process.terminate()
            try:
                made.process.wait(10)
            except subprocess.TimeoutExpired:
                made.process.kill()
                made.process.wait()
        for double in replicas:
            double.stop()


@contextmanager
def single(tmp: Path, *, chunk_delay: float = 0.0) -> Iterator[Cluster]:
    """One double and no router: the baseline a cluster's cached share is held against."""
    double = VLLMDouble().start()
    double.responder = fix_responder(chunk_delay)
    try:
        made = Cluster([double], "single", port=double.port)
        yield made
    finally:
        double.stop()


# -- developers ------------------------------------------------------------------------------------

def developer(tmp: Path, name: str, fixes: int) -> tuple[Path, Path]:
    """A developer: a home of their own (cache, qfix state) and a git workspace with `fixes` failing scripts."""
    home = tmp / name / "home"
    work = tmp / name / "workspaces" / "app"  # the same checkout path under every developer's root
    home.mkdir(parents=True)
    work.mkdir(parents=True)
    for n in range(fixes):
        (work / f"script_{n}.py").write_text(buggy(n))
    env = {**os.environ, "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": f"{name}@example.com",
           "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": f"{name}@example.com"}
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=work, env=env, check=True, capture_output=True)
    return home, work


def qfix_env(home: Path, base_url: str, **extra: str) -> dict[str, str]:
    bin_dir = Path(sys.executable).parent
    return {
        "PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "QWEN_LSP_BASE_URL": base_url,
        "QWEN_LSP_CACHE_DIR": str(home / "cache"),
        "QFIX_STATE_DIR": str(home / "state"),
        "QFIX_WARM": "0",  # one process per fix: a warm process per developer would be 6 more on 2 cores
        "PYTHONDONTWRITEBYTECODE": "1",
        **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
        **extra,
    }


def start_qfix(work: Path, env: dict[str, str], n: int) -> subprocess.Popen:
    """`qfix --json --yes -- python script_N.py`, started (the caller waits)."""
    return subprocess.Popen([str(Path(sys.executable).parent / "qfix"), "--json", "--yes", "--", "python",
                             f"script_{n}.py"], cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)


@dataclass
class FixRun:
    developer: str
    script: int
    exit_code: int
    report: dict[str, Any] | None
    stderr: str
    seconds: float

    @property
    def done(self) -> bool:
        """The model's fix came back whole: fixed (and applied, with a sandbox to verify it) or, where no
        sandbox is installed (bubblewrap), the change that --yes then declines to apply unverified."""
        report = self.report or {}
        return report.get("engine_outcome") in ("fixed", "changed_unverified") and bool(report.get("diffs"))


def run_team(tmp: Path, base_url: str, developers: int, fixes: int, *, timeout: float = 240,
             env_extra: dict[str, str] | None = None) -> list[FixRun]:
    """Every developer runs their fixes one after another, all developers at once; every run's result."""
    homes = [developer(tmp, f"dev{d}", fixes) for d in range(developers)]
    runs: list[FixRun] = []
    queues = [[n for n in range(fixes)] for _ in homes]
    running: dict[int, tuple[subprocess.Popen, int, float]] = {}
    deadline = time.monotonic() + timeout
    while any(queues) or running:
        for d, (home, work) in enumerate(homes):
            if d not in running and queues[d]:
                n = queues[d].pop(0)
                running[d] = (start_qfix(work, qfix_env(home, base_url, **(env_extra or {})), n), n, time.monotonic())
        for d, (process, n, started) in list(running.items()):
            if process.poll() is None:
                if time.monotonic() > deadline:
                    process.kill()
                continue
            out, err = process.communicate()
            try:
                report = json.loads(out)
            except ValueError:
                report = None
            runs.append(FixRun(f"dev{d}", n, process.returncode, report, err, time.monotonic() - started))
            del running[d]
        time.sleep(0.05)
    return runs
