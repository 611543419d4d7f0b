"""Sandbox benchmark: the cost of running a verification inside bubblewrap.

Verifies the fixed calc project (tests/calc_project.py) with its pytest command ten times
in the sandbox (`validate.run_verify`: copy the workspace, start bwrap, run pytest) and ten
times the way it ran before the sandbox (the same copy, the command straight in a shell),
and prints the median of each and the difference; then the cost of the resource limits'
launcher (`true` with and without it), and the peak memory of a process whose verify command
prints 500 MB (the output is kept as a bounded head and tail).

    .venv/bin/python bench/bench_sandbox.py
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qwen_lsp.engine import sandbox  # noqa: E402
from qwen_lsp.engine.overlay import Overlay  # noqa: E402
from qwen_lsp.engine.sandbox_limits import SandboxLimits  # noqa: E402
from qwen_lsp.engine.validate import run_verify  # noqa: E402
from tests.calc_project import FIXED, PYTEST, make_project  # noqa: E402

from figures import figure  # noqa: E402  (bench/figures.py)

RUNS = 10


async def sandboxed(overlay: Overlay, bwrap: str) -> float:
    started = time.perf_counter()
    outcome = await run_verify(overlay, PYTEST, None, 120, bwrap=bwrap)
    elapsed = time.perf_counter() - started
    assert outcome.ok, outcome.detail
    return elapsed


def unsandboxed(overlay: Overlay) -> float:
    """The baseline: the same temporary copy, the command run directly (for comparison only)."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="qwen-verify-") as tmp:
        copy, _ = overlay.materialize(Path(tmp) / "ws")
        subprocess.run(["/bin/sh", "-c", PYTEST], cwd=copy, check=True, capture_output=True, stdin=subprocess.DEVNULL)
    return time.perf_counter() - started


def start_cost(bwrap: str, scratch: Path) -> tuple[float, float]:
    """Median seconds of `true` in the sandbox and straight in a shell: bwrap's fixed cost."""
    jail = sandbox.build(bwrap, "true", scratch=scratch, workdir=scratch, workspace=None)
    inside, outside = [], []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(jail.argv, env=jail.env, check=True)
        inside.append(time.perf_counter() - started)
        started = time.perf_counter()
        subprocess.run(["/bin/sh", "-c", "true"], check=True)
        outside.append(time.perf_counter() - started)
    return statistics.median(inside), statistics.median(outside)


def launcher_cost(bwrap: str, scratch: Path) -> float:
    """Median extra seconds of `true` in the sandbox with the limits' launcher over without it."""
    plain = sandbox.build(bwrap, "true", scratch=scratch, workdir=scratch, workspace=None)
    limited = sandbox.build(bwrap, "true", scratch=scratch, workdir=scratch, workspace=None, limits=SandboxLimits())
    extra = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(plain.argv, env=plain.env, check=True)
        middle = time.perf_counter()
        subprocess.run(limited.argv, env=limited.env, check=True)
        extra.append((time.perf_counter() - middle) - (middle - started))
    return statistics.median(extra)


LOUD = """\
import asyncio, resource, sys, tempfile
from pathlib import Path
from qwen_lsp.engine.overlay import Overlay
from qwen_lsp.engine.validate import run_verify
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
with tempfile.TemporaryDirectory() as tmp:
    (Path(tmp) / "a.py").write_text("x = 1\\n")
    command = sys.executable + " -c \\"import sys; sys.stdout.write('x' * 500_000_000); sys.exit(1)\\""
    outcome = asyncio.run(run_verify(Overlay(Path(tmp)), command, None, 300, bwrap=sys.argv[1]))
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024, len(outcome.detail))
"""


def loud_output_memory(bwrap: str) -> tuple[int, int]:
    """MB the verifying process grew by while its command printed 500 MB, and the detail's length."""
    done = subprocess.run([sys.executable, "-c", LOUD, bwrap], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[1])
    grew, kept = done.stdout.split()
    return int(grew), int(kept)


def main() -> int:
    status = sandbox.status()
    if not status.available:
        print(f"no sandbox here: {status.detail}\nto enable: {status.fix}")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        overlay = Overlay(make_project(Path(tmp) / "proj"))
        overlay.write("calc.py", FIXED)
        with_bwrap, without = [], []
        for _ in range(RUNS):  # interleaved, so a busy machine slows both alike
            with_bwrap.append(asyncio.run(sandboxed(overlay, status.bwrap)))
            without.append(unsandboxed(overlay))
        start_with, start_without = start_cost(status.bwrap, Path(tmp) / "scratch")
        launcher = launcher_cost(status.bwrap, Path(tmp) / "scratch")
    grew_mb, kept = loud_output_memory(status.bwrap)
    med_with, med_without = statistics.median(with_bwrap), statistics.median(without)
    figure("verify median, with bwrap", med_with, "s")
    figure("verify median, without bwrap", med_without, "s")
    figure("sandbox cost per verification", med_with - med_without, "s")
    figure("bwrap start (true), median", start_with - start_without, "s")
    print(f"calc project, `{PYTEST}`, median of {RUNS}:")
    print(f"  with bwrap     {med_with * 1000:7.1f} ms")
    print(f"  without bwrap  {med_without * 1000:7.1f} ms")
    print(f"  sandbox cost   {(med_with - med_without) * 1000:7.1f} ms per verification")
    print(f"bwrap's own start (`true` inside minus outside, median of {RUNS}): {(start_with - start_without) * 1000:.1f} ms")
    print(f"the limits' launcher (`true` with minus without it, median of {RUNS}): {launcher * 1000:.1f} ms")
    print(f"a verify command printing 500 MB: the verifying process grew by {grew_mb} MB, kept {kept} characters")
    figure("limits launcher, median", launcher, "s")
    figure("memory growth, 500 MB of verify output", grew_mb, "MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
