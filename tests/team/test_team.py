"""The team tier: the real vLLM Router (PyPI vllm-router, pinned in the dev extra) in front of three
vLLM doubles, each with its own prefix cache; concurrent qfix runs and a language-server session.

Bounded for CI on two cores: three developers, one or two fixes each, about two minutes in all.
`pytest -m team` runs only these; the figures for the issue's full workload are bench/bench_team.py's.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.team.cluster import (
    FixRun, cluster, developer, qfix_env, run_team, start_qfix, stateless,
)

pytestmark = [pytest.mark.team, pytest.mark.timeout(240)]

try:
    import vllm_router  # noqa: F401 - the router's launcher (the dev extra pins it)
except ImportError:  # pragma: no cover - an install without the dev extra
    pytest.skip("vllm-router is not installed (pip install -e '.[dev]')", allow_module_level=True)

NOT_UNAVAILABLE = ("Cannot reach", "unavailable", "vllm serve")


def assert_said_what_happened(run: FixRun) -> None:
    """A fix either came back whole or said what it is: never 'cannot reach' while the router was up."""
    if run.done:
        return
    assert run.exit_code == 3, (run.exit_code, run.stderr[-800:])
    assert not any(words in run.stderr for words in NOT_UNAVAILABLE), run.stderr[-800:]


def test_every_session_stays_on_one_replica_under_consistent_hash_and_hits_its_cache(tmp_path):
    with cluster(3, "consistent_hash", tmp_path) as team:
        runs = run_team(tmp_path, team.base_url, developers=3, fixes=2)
        sessions = team.sessions()
        chats = team.chats()
        shares = team.cached_share()
    assert len(runs) == 6 and all(r.done for r in runs), [(r.exit_code, r.stderr[-300:]) for r in runs if not r.done]
    assert len(sessions) == 3  # one per developer's workspace, both fixes of a workspace in one session
    assert all(len(replicas) == 1 for replicas in sessions.values()), sessions  # affinity: 100%
    assert all("user" not in request.body for _, request in chats)  # no user_id set: no `user`, not the hash
    # Each fix's rounds extend one conversation: after its first request a session's prompts hit the cache.
    assert shares > 0.6, shares


def test_two_developers_with_the_same_checkout_path_are_two_sessions(tmp_path):
    _home, work = developer(tmp_path, "shared", fixes=1)  # one path, e.g. /workspaces/app in two devcontainers
    homes = [tmp_path / "ada", tmp_path / "bob"]
    with cluster(3, "consistent_hash", tmp_path) as team:
        for home in homes:
            home.mkdir()
            subprocess.run(["git", "checkout", "-q", "--", "."], cwd=work, check=True)
            process = start_qfix(work, qfix_env(home, team.base_url), 0)
            out, err = process.communicate(timeout=180)
            assert "changed_unverified" in out or '"fixed"' in out, err[-500:]
        sessions = team.sessions()
    assert len(sessions) == 2 and all(len(replicas) == 1 for replicas in sessions.values()), sessions


def test_a_replica_killed_mid_answer_loses_no_fix_and_the_user_is_told(tmp_path):
    with cluster(3, "consistent_hash", tmp_path, chunk_delay=0.03,
                 router_args=("--health-check-interval-secs", "1", "--health-failure-threshold", "1")) as team:
        killed: list[int] = []

        def kill_the_first_replica_caught_streaming() -> None:
            deadline = time.monotonic() + 150
            while time.monotonic() < deadline:
                for index, replica in enumerate(team.replicas):
                    if replica.streaming:
                        team.kill(index)
                        killed.append(index)
                        return
                time.sleep(0.01)

        killer = threading.Thread(target=kill_the_first_replica_caught_streaming, daemon=True)
        killer.start()
        runs = run_team(tmp_path, team.base_url, developers=3, fixes=1)
        killer.join(5)
        broken = sum(replica.broken_streams for replica in team.replicas)
    assert killed and broken >= 1  # a replica really died with an answer half sent
    for run in runs:
        assert_said_what_happened(run)
    told = [r for r in runs if "closed the answer mid-stream" in r.stderr]
    assert told, [r.stderr[-500:] for r in runs]  # one line: asked again on a new connection
    assert all(r.done for r in told if "asking again" in r.stderr and r.stderr.count("mid-stream") == 1)
    assert sum(r.done for r in runs) == len(runs)  # the router moved the session to a live replica


def test_an_overloaded_router_makes_fixes_wait_their_turn_not_fail(tmp_path):
    # One request at a time and no queue: the router answers 429 (Retry-After: 1) to a request that
    # arrives while another is starting; every answer takes a second to start (a loaded replica's prefill).
    with cluster(3, "consistent_hash", tmp_path, head_delay=1.0,
                 router_args=("--max-concurrent-requests", "1", "--queue-size", "0")) as team:
        runs = run_team(tmp_path, team.base_url, developers=3, fixes=1)
    busy = [r for r in runs if re.search(r"qfix: model server busy \(HTTP 429\), retrying in \d+ s", r.stderr)]
    assert busy, [r.stderr[-500:] for r in runs]  # the user saw why it waited
    for run in runs:
        assert_said_what_happened(run)
    assert sum(r.done for r in runs) == len(runs)


def test_the_routers_queue_timeout_408_is_busy_too_and_waited_out(tmp_path):
    # A queue that gives up after 1 s while answers take 2 s to start: the router answers 408 to a request
    # that waited behind another (three developers at once, so at least two requests meet at the router).
    with cluster(2, "consistent_hash", tmp_path, head_delay=2.0,
                 router_args=("--max-concurrent-requests", "1", "--queue-size", "4", "--queue-timeout-secs", "1")) as team:
        runs = run_team(tmp_path, team.base_url, developers=3, fixes=1)
    assert any("busy (HTTP 408)" in r.stderr for r in runs), [r.stderr[-500:] for r in runs]
    for run in runs:
        assert_said_what_happened(run)
    assert sum(r.done for r in runs) == len(runs)


# -- a language-server session beside concurrent qfix runs ------------------------------------------------

@pytest.fixture
def team_cluster(tmp_path):
    from tests.lsp.helpers import FIX_REPLIES, plan_reply

    with cluster(3, "consistent_hash", tmp_path) as team:
        for replica in team.replicas:
            replica.responder = stateless(plan_reply(), FIX_REPLIES)
        yield team


@pytest.fixture
def server_options(team_cluster, cache_dir):
    return {"baseUrl": team_cluster.base_url, "cacheDir": str(cache_dir), "maxRetries": 0}


async def test_a_language_server_fix_and_qfix_runs_each_keep_their_session(lsp, team_cluster, project, tmp_path):
    from qwen_lsp.lsp.convert import file_uri
    from tests.lsp.helpers import PYTEST, PYTEST_OUTPUT, code_actions, terminal_output, wait_until
    from tests.team.cluster import fix_responder

    shell_dir = tmp_path / "shell"
    homes = [developer(shell_dir, f"dev{d}", fixes=1) for d in range(2)]
    for replica in team_cluster.replicas:  # the calc fix for the editor, the typo fix for qfix
        editor, shell = replica.responder, fix_responder()
        replica.responder = lambda body, e=editor, s=shell: s(body) if "script_" in str(body["messages"]) else e(body)
    processes = [start_qfix(work, qfix_env(home, team_cluster.base_url), 0) for home, work in homes]

    terminal_output(lsp, PYTEST, 1, PYTEST_OUTPUT, project)
    test_uri = file_uri(project, "test_calc.py")
    diagnostics = await wait_until(lambda: lsp.diagnostics.get(test_uri))
    fix = next(a for a in await code_actions(lsp, test_uri, list(diagnostics)) if a.title.startswith("Fix with Qwen"))
    resolved = await lsp.code_action_resolve_async(fix)
    assert resolved.edit is not None and resolved.edit.document_changes

    for process in processes:
        out, err = process.communicate(timeout=180)
        assert "changed_unverified" in out or '"fixed"' in out, err[-500:]
    sessions = team_cluster.sessions()
    assert len(sessions) == 3 and all(len(replicas) == 1 for replicas in sessions.values()), sessions


# -- doctor behind a router -------------------------------------------------------------------------------------

async def _doctor_through(policy: str, tmp_path: Path) -> dict[str, object]:
    from qwen_lsp.ops.doctor import run_doctor
    from qwen_lsp.settings import Settings
    from tests.ops.test_ops import honest_server

    with cluster(3, policy, tmp_path) as team:
        for replica in team.replicas:
            replica.responder = honest_server
        checks = await run_doctor(Settings(base_url=team.base_url, cache_dir=tmp_path / "c"))
    return {c.name: c for c in checks}


async def test_doctor_says_it_talks_to_a_router_and_that_a_session_reaches_its_cache(tmp_path):
    checks = await _doctor_through("consistent_hash", tmp_path)
    assert checks["router"].ok and "vLLM Router in front of 3 worker(s), 3 healthy" in checks["router"].detail
    assert checks["session reaches its cache"].ok, checks["session reaches its cache"]
    assert checks["prefix caching effective"].ok


async def test_doctor_behind_a_round_robin_router_names_the_policy_to_use(tmp_path):
    checks = await _doctor_through("round_robin", tmp_path)
    session = checks["session reaches its cache"]
    assert checks["router"].ok and not session.ok
    assert "--policy consistent_hash" in session.fix and "another replica" in session.detail
