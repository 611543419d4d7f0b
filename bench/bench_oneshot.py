"""A one-shot fix as a terminal user waits for it: from the moment the command fails to the first
request reaching the model server, `qfix -- CMD` in a new process each time (Django, warm cache).

The failing command is a Python script that goes through real Django code (a TypeError inside
django/utils/datastructures.py), prints its traceback, writes the time it failed to a file and exits 1,
after --command-seconds of work (a failing test run is rarely instant; qfix imports its engine
while the command runs). The vLLM test double runs in its own process and stamps every request on
arrival; the model's answers are scripted (a plan, then finish). The first qfix run builds the
workspace snapshot and is not counted; then --runs more, each a new process: median and max.

    python bench/bench_oneshot.py                        # downloads Django's sdist with pip
    python bench/bench_oneshot.py --django /path/to/Django-5.1.4 [--runs 10] [--command-seconds 0.5]
    python bench/bench_oneshot.py --baseline /tmp/base   # and another checkout's code, the runs taking turns

Figures only, no pass/fail. Goal (issue 28): median < 300 ms on Django with a warm snapshot.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_context import fetch_django, git_init  # noqa: E402  (bench/bench_context.py)
from bench_lsp import post, start_double  # noqa: E402
from figures import figure  # noqa: E402

from tests.lsp.conftest import PLAN  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FAILING = """\
import os, sys, time, traceback
time.sleep(float(os.environ["BENCH_COMMAND_SECONDS"]))
from django.utils.datastructures import MultiValueDict
try:
    print(MultiValueDict({"page": 1})["page"])
except TypeError:
    traceback.print_exc()
    with open(os.environ["BENCH_FAILED_AT"], "w") as out:
        out.write(repr(time.time()))
    sys.exit(1)
"""


def first_request_after(root_url: str, since: float) -> float | None:
    with urllib.request.urlopen(f"{root_url}/_double/requests", timeout=10) as answer:
        times = [r["time"] for r in json.load(answer) if r["path"] == "/v1/chat/completions" and r["time"] >= since]
    return min(times) if times else None


def one_run(code: Path, django: Path, env: dict[str, str], root_url: str, stamp: Path) -> float:
    post(f"{root_url}/_double/script", [{"content": json.dumps(PLAN)},
                                        {"tool_calls": [{"name": "finish", "arguments": {"summary": "bench"}}]}])
    stamp.unlink(missing_ok=True)
    qfix = [sys.executable, "-c", "import sys; from terminal_agent.qfix import main; sys.exit(main())"]
    done = subprocess.run([*qfix, "--json", "--", sys.executable, "bench_failing.py"], cwd=django,
                          env={**env, "PYTHONPATH": str(code)}, capture_output=True, text=True, timeout=300)
    if not stamp.exists():
        raise RuntimeError(f"the command did not fail as scripted:\n{done.stdout}\n{done.stderr}")
    failed_at = float(stamp.read_text())
    first = first_request_after(root_url, failed_at)
    if first is None:
        raise RuntimeError(f"no model request:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return first - failed_at


def measure(codes: list[Path], django: Path, runs: int, command_seconds: float, base_url: str) -> dict[Path, list[float]]:
    """`runs` timed runs of each checkout's qfix, taking turns (a machine shared with other work slows
    both alike), each with its own cache and state dirs."""
    root_url = base_url.removesuffix("/v1")
    with tempfile.TemporaryDirectory(prefix="qwen-bench-oneshot-") as tmp:
        stamp = Path(tmp) / "failed-at"
        envs = {}
        for n, code in enumerate(codes):
            own = Path(tmp) / str(n)
            envs[code] = {**os.environ, "QWEN_LSP_BASE_URL": base_url, "QWEN_LSP_CACHE_DIR": str(own / "cache"),
                          "QWEN_LSP_MAX_RETRIES": "0", "QFIX_STATE_DIR": str(own / "state"),
                          "BENCH_FAILED_AT": str(stamp), "BENCH_COMMAND_SECONDS": str(command_seconds), "NO_COLOR": "1"}
            envs[code].pop("TMUX", None)
            one_run(code, django, envs[code], root_url, stamp)  # builds the snapshot: not counted
        out: dict[Path, list[float]] = {code: [] for code in codes}
        for n in range(runs):
            for code in codes:
                out[code].append(one_run(code, django, envs[code], root_url, stamp))
                print(f"  {code.name}: run {n + 1}: {out[code][-1] * 1000:.0f} ms", flush=True)
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--django", type=Path, help="an extracted Django 5.1.4 tree (default: download the sdist)")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--command-seconds", type=float, default=0.5, help="how long the failing command works")
    parser.add_argument("--baseline", type=Path, help="also measure another checkout's code (e.g. git archive HEAD~1)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="qwen-bench-django-") as tmp:
        source = args.django.resolve() if args.django else fetch_django(Path(tmp) / "src")
        django = Path(tmp) / "Django"
        shutil.copytree(source, django, ignore=shutil.ignore_patterns(".git"))
        (django / "bench_failing.py").write_text(FAILING)
        git_init(django)
        double, base_url = start_double()
        try:
            codes = [ROOT, *([args.baseline.resolve()] if args.baseline else [])]
            results = measure(codes, django, args.runs, args.command_seconds, base_url)
        finally:
            double.terminate()
            double.wait()
    print(f"command failed -> first model request, qfix in a new process, Django, warm snapshot, "
          f"command works {args.command_seconds:g} s, {args.runs} runs")
    for code, values in results.items():
        ms = sorted(v * 1000 for v in values)
        label = "this checkout" if code == ROOT else f"baseline {code}"
        print(f"  {label:<40} median {statistics.median(ms):7.0f} ms   max {ms[-1]:7.0f} ms")
        if code == ROOT:
            figure(f"command failed->first request median, qfix, Django, command {args.command_seconds:g} s",
                   statistics.median(ms), "ms")


if __name__ == "__main__":
    main()
