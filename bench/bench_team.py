"""A team on one model cluster: the real vLLM Router (PyPI vllm-router) in front of 3 vLLM doubles,
each with its own prefix cache; D developers (default 6), each in a workspace of their own, F
`qfix --json --yes` fixes each (default 3), all developers at once.

Prints, per routing policy (round_robin, consistent_hash, cache_aware) and for one server without a
router: the share of each session's requests on its main replica (affinity), the cached share of
prompt tokens (and against the single server's), fixes done. Then one replica killed mid-run, then an
overloaded router (--max-concurrent-requests 1 --queue-size 0, answers that take 0.5 s to start),
and the router's overhead per request.

"Fix done": the model's fix came back whole. Where bubblewrap is missing (these machines) qfix --yes
then declines to apply the unverified change (exit 1, outcome not_applied); with it, it applies.

    .venv/bin/python bench/bench_team.py [--developers 6] [--fixes 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.team.cluster import FixRun, cluster, run_team, single  # noqa: E402
from tests.vllm_double import Reply  # noqa: E402

from figures import figure  # noqa: E402  (bench/figures.py)

POLICIES = ("round_robin", "consistent_hash", "cache_aware")
UNAVAILABLE = ("Cannot reach", "unavailable", "Start one with")


def summary(runs: list[FixRun]) -> str:
    done = sum(r.done for r in runs)
    codes: dict[int, int] = {}
    for r in runs:
        codes[r.exit_code] = codes.get(r.exit_code, 0) + 1
    seconds = statistics.median(r.seconds for r in runs) if runs else 0.0
    return f"fixes done {done}/{len(runs)}, exit codes {dict(sorted(codes.items()))}, median fix {seconds:.1f} s"


def policies(developers: int, fixes: int, root: Path) -> None:
    with single(root / "single") as alone:
        (root / "single").mkdir(exist_ok=True)
        runs = run_team(root / "single", alone.base_url, developers, fixes)
        baseline = alone.cached_share()
    print(f"{'single server':>16}: cached share {baseline:6.1%}; {summary(runs)}")
    figure("single server cached share", round(100 * baseline, 1), "%")
    for policy in POLICIES:
        work = root / policy
        work.mkdir()
        with cluster(3, policy, work) as team:
            runs = run_team(work, team.base_url, developers, fixes)
            affinity, cached = team.affinity(), team.cached_share()
            spread = [sum(1 for _ in d.chat_requests()) for d in team.replicas]
        relative = cached / baseline if baseline else 0.0
        print(f"{policy:>16}: affinity {affinity:6.1%}, cached share {cached:6.1%} ({relative:6.1%} of a single "
              f"server's), requests per replica {spread}; {summary(runs)}")
        figure(f"{policy} affinity", round(100 * affinity, 1), "%")
        figure(f"{policy} cached share vs single server", round(100 * relative, 1), "%")
        figure(f"{policy} fixes done", sum(r.done for r in runs), "fixes")


def replica_killed(developers: int, fixes: int, root: Path) -> None:
    work = root / "killed"
    work.mkdir()
    with cluster(3, "consistent_hash", work, chunk_delay=0.03,
                 router_args=("--health-check-interval-secs", "1", "--health-failure-threshold", "1")) as team:
        killed: list[int] = []

        def kill_once_a_third_is_done() -> None:
            total = developers * fixes * 4  # about four chat requests a fix
            while len(team.chats()) < total // 3:
                time.sleep(0.05)
            while not killed:
                for index, replica in enumerate(team.replicas):
                    if replica.streaming:
                        team.kill(index)
                        killed.append(index)
                        break
                time.sleep(0.01)

        threading.Thread(target=kill_once_a_third_is_done, daemon=True).start()
        runs = run_team(work, team.base_url, developers, fixes)
        broken = sum(d.broken_streams for d in team.replicas)
    retried = [r for r in runs if "closed the answer mid-stream" in r.stderr]
    said = [r for r in runs if not r.done and r.exit_code == 3]
    wrong = [r for r in runs if not r.done and any(w in r.stderr for w in UNAVAILABLE)]
    print(f"{'replica killed':>16}: replica {killed} killed with {broken} answer(s) mid-stream; {summary(runs)}; "
          f"{len(retried)} fix(es) told 'closed the answer mid-stream' and asked again, {len(said)} gave up saying so, "
          f"{len(wrong)} reported as unreachable")
    figure("replica killed: fixes done", sum(r.done for r in runs), "fixes")
    figure("replica killed: reported as unreachable", len(wrong), "fixes")


def overloaded(developers: int, fixes: int, root: Path) -> None:
    work = root / "overloaded"
    work.mkdir()
    with cluster(3, "consistent_hash", work, head_delay=0.5,
                 router_args=("--max-concurrent-requests", "1", "--queue-size", "0")) as team:
        runs = run_team(work, team.base_url, developers, fixes, timeout=600)
    notices = sum(r.stderr.count("model server busy (HTTP") for r in runs)
    wrong = [r for r in runs if any(w in r.stderr for w in UNAVAILABLE)]
    done = sum(r.done for r in runs)
    print(f"{'overloaded':>16}: {summary(runs)}; {notices} 'model server busy' lines; "
          f"{len(wrong)} reported as unavailable; {done / len(runs):.0%} done")
    figure("overloaded: fixes done", round(100 * done / len(runs), 1), "%")
    figure("overloaded: reported as unavailable", len(wrong), "fixes")


def overhead(root: Path, requests: int = 40) -> None:
    """Median time of one small streamed chat completion, straight to a replica and through the router."""
    with cluster(1, "consistent_hash", root) as team:
        team.replicas[0].responder = lambda body: Reply(content="ok")

        def timed(base: str) -> float:
            body = json.dumps({"model": team.replicas[0].model, "stream": True,
                               "messages": [{"role": "user", "content": "hi"}]}).encode()
            times = []
            for _ in range(requests):
                request = urllib.request.Request(f"{base}/chat/completions", data=body,
                                                 headers={"content-type": "application/json", "x-session-id": "s"})
                started = time.perf_counter()
                with urllib.request.urlopen(request, timeout=30) as answer:
                    answer.read()
                times.append(time.perf_counter() - started)
            return statistics.median(times)

        direct, routed = timed(team.replicas[0].base_url), timed(team.base_url)
    print(f"{'router overhead':>16}: median {1000 * (routed - direct):+.1f} ms a request "
          f"({1000 * direct:.1f} ms direct, {1000 * routed:.1f} ms through the router; {requests} each)")
    figure("router overhead", round(1000 * (routed - direct), 2), "ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--developers", type=int, default=6)
    parser.add_argument("--fixes", type=int, default=3)
    parser.add_argument("--only", choices=("policies", "killed", "overloaded", "overhead"))
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-team-") as tmp:
        root = Path(tmp)
        print(f"{args.developers} developers x {args.fixes} fixes, 3 replicas, vllm-router")
        if args.only in (None, "policies"):
            policies(args.developers, args.fixes, root)
        if args.only in (None, "killed"):
            replica_killed(args.developers, args.fixes, root)
        if args.only in (None, "overloaded"):
            overloaded(args.developers, args.fixes, root)
        if args.only in (None, "overhead"):
            overhead(root)
    print(f"took {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
