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
    python bench/bench_oneshot.py --warm on|off          # only through qfix's warm process / only in-process

Both paths are measured by default, taking turns: through the warm process (terminal_agent/warm.py: started
by the uncounted first run, then every counted run must have thought in it) and with QFIX_WARM=0 (in-process).

Figures only, no pass/fail. Goal (issue 28): median < 300 ms on Django with a warm snapshot.
"""

from __future__ import annotations

import argparse
import json
import os
import re
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


def qfix_status(code: Path, env: dict[str, str], *args: str) -> str:
    # -P: not the cwd's checkout (this one's, when `code` is a baseline) but `code`'s, as in one_run
    qfix = [sys.executable, "-P", "-c", "import sys; from terminal_agent.qfix import main; sys.exit(main())"]
    return subprocess.run([*qfix, *args], env={**env, "PYTHONPATH": str(code)}, capture_output=True, text=True).stdout


def warm_served(code: Path, env: dict[str, str]) -> tuple[int, int] | None:
    """(pid, qfix runs served) of the warm process for `code`, per `qfix --warm-status`."""
    found = re.search(r"pid (\d+) \(this qfix's code\).*?served (\d+) qfix run", qfix_status(code, env, "--warm-status"))
    return (int(found[1]), int(found[2])) if found else None


def wait_for_warm(code: Path, env: dict[str, str]) -> None:
    deadline = time.monotonic() + 60
    while warm_served(code, env) is None:
        if time.monotonic() > deadline:
            log = Path(env["QFIX_STATE_DIR"]) / "warm.log"
            raise RuntimeError(f"no warm process started: {log.read_text()[-2000:] if log.exists() else 'no log'}")
        time.sleep(0.2)


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
    if "thinking here" in done.stderr:
        raise RuntimeError(f"the warm process failed:\n{done.stderr[-2000:]}")
    return first - failed_at


Variant = tuple[Path, bool]  # a checkout, and whether its qfix thinks in the warm process


def measure(variants: list[Variant], django: Path, runs: int, command_seconds: float,
            base_url: str) -> dict[Variant, list[float]]:
    """`runs` timed runs of each variant's qfix, taking turns (a machine shared with other work slows
    all alike), each with its own cache and state dirs (and so its own warm process)."""
    root_url = base_url.removesuffix("/v1")
    with tempfile.TemporaryDirectory(prefix="qwen-bench-oneshot-") as tmp:
        stamp = Path(tmp) / "failed-at"
        envs = {}
        try:
            for n, (code, warm) in enumerate(variants):
                own = Path(tmp) / str(n)
                envs[code, warm] = {**os.environ, "QWEN_LSP_BASE_URL": base_url, "QWEN_LSP_CACHE_DIR": str(own / "cache"),
                                    "QWEN_LSP_MAX_RETRIES": "0", "QFIX_STATE_DIR": str(own / "state"), "QFIX_WARM_DIR": str(own / "warm"),
                                    "BENCH_FAILED_AT": str(stamp), "BENCH_COMMAND_SECONDS": str(command_seconds),
                                    "NO_COLOR": "1", "QFIX_WARM": "1" if warm else "0"}
                envs[code, warm].pop("TMUX", None)
                # builds the snapshot (and starts the warm process): not counted
                one_run(code, django, envs[code, warm], root_url, stamp)
                if warm:
                    wait_for_warm(code, envs[code, warm])
            out: dict[Variant, list[float]] = {variant: [] for variant in variants}
            for n in range(runs):
                for code, warm in variants:
                    out[code, warm].append(one_run(code, django, envs[code, warm], root_url, stamp))
                    print(f"  {code.name} ({'warm process' if warm else 'in-process'}): run {n + 1}: "
                          f"{out[code, warm][-1] * 1000:.0f} ms", flush=True)
            for code, warm in variants:
                if warm and (served := warm_served(code, envs[code, warm])) and served[1] != runs:
                    raise RuntimeError(f"the warm process served {served[1]} of {runs} runs")
            return out
        finally:
            for (code, warm), env in envs.items():
                if warm:
                    qfix_status(code, env, "--warm-stop")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--django", type=Path, help="an extracted Django 5.1.4 tree (default: download the sdist)")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--command-seconds", type=float, default=0.5, help="how long the failing command works")
    parser.add_argument("--baseline", type=Path, help="also measure another checkout's code (e.g. git archive HEAD~1)")
    parser.add_argument("--warm", choices=("both", "on", "off"), default="both",
                        help="through qfix's warm process (on), in-process with QFIX_WARM=0 (off), or both")
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
            modes = {"both": (True, False), "on": (True,), "off": (False,)}[args.warm]
            results = measure([(code, warm) for code in codes for warm in modes], django, args.runs,
                              args.command_seconds, base_url)
        finally:
            double.terminate()
            double.wait()
    print(f"command failed -> first model request, qfix in a new process, Django, warm snapshot, "
          f"command works {args.command_seconds:g} s, {args.runs} runs")
    for (code, warm), values in results.items():
        ms = sorted(v * 1000 for v in values)
        path = "warm process" if warm else "in-process (QFIX_WARM=0)"
        label = f"{'this checkout' if code == ROOT else f'baseline {code}'}, {path}"
        print(f"  {label:<60} median {statistics.median(ms):7.0f} ms   max {ms[-1]:7.0f} ms")
        if code == ROOT:
            qfix = "qfix warm process" if warm else "qfix"
            figure(f"command failed->first request median, {qfix}, Django, command {args.command_seconds:g} s",
                   statistics.median(ms), "ms")


if __name__ == "__main__":
    main()
