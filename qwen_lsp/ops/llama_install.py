"""`qwen-lsp serve-local --install`: llama-cpp-python built for any CPU of this architecture, into
the environment qwen-lsp runs in (pipx's, uv's, a venv), with the build's progress on screen.

Why not `pip install llama-cpp-python`: pip's default build uses -march=native, and a llama.cpp
that mis-detects AVX-512/AMX died with a general protection fault on its first completion.
GGML_NATIVE=OFF compiles for a fixed baseline (AVX2/FMA/F16C on x86-64, never AVX-512; without
AVX2 those are off too). The same as scripts/llama-portable, and the same wheel cache: a wheel
built by either is used by both (`build_key` is the script's key).

Building llama.cpp takes about 12 CPU-minutes, once: some 6 minutes on two idle cores, longer on
a busy machine. A user's CMAKE_ARGS (e.g. -DGGML_CUDA=on) are added to the flags.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

VERSION = "0.3.36"  # scripts/llama-portable's LLAMA_CPP_VERSION default
BASE_FLAGS = "-DGGML_NATIVE=OFF -DGGML_AVX512=OFF"
NO_AVX2_FLAGS = " -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_BMI2=OFF"
CPU_MINUTES = 12  # the build's CPU time (measured on x86-64, 2 cores), for the estimate
# cmake/ninja progress as pip -v relays it: "[ 45%] Building C object …" or "[123/456] Building …".
_PROGRESS = re.compile(r"\[\s*(?:(\d+)%|(\d+)/(\d+))\]\s*(.*)")


def cmake_flags(cpuinfo: str, machine: str, user_args: str = "") -> str:
    """Pure: the portable baseline, minus AVX2 where the CPU lacks it, plus the user's CMAKE_ARGS."""
    flags = BASE_FLAGS
    if machine == "x86_64" and not re.search(r"\bavx2\b", cpuinfo):
        flags += NO_AVX2_FLAGS
    return f"{flags} {user_args.strip()}".strip()


def build_key(version: str, flags: str, python: tuple[int, int]) -> str:
    """Pure: scripts/llama-portable's cache key (`printf '%s %s %s' | sha256sum | cut -c1-12`)."""
    return hashlib.sha256(f"{version} {flags} {python}".encode()).hexdigest()[:12]


def estimate(cpus: int) -> str:
    """Pure: what the build costs here, said before it starts."""
    minutes = max(2, -(-CPU_MINUTES // max(1, min(cpus, 8))))  # ceil
    return f"about {CPU_MINUTES} CPU-minutes: some {minutes} minutes on {cpus} idle core(s), longer on a busy machine"


def progress_line(line: str) -> str | None:
    """Pure: the build step a line of pip's verbose output reports, e.g. "45% ggml-cpu.c" (None if none)."""
    match = _PROGRESS.search(line)
    if not match:
        return None
    percent = match.group(1) or str(round(100 * int(match.group(2)) / max(1, int(match.group(3)))))
    what = match.group(4).split()[-1] if match.group(4).split() else ""
    return f"{percent}% {Path(what).name}".strip()


def wheel_dir(key: str) -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "qwen-lsp-build" / f"llama-{key}"


def install(say: Callable[[str], None], status: Callable[[str], None]) -> int:
    """Build (once, cached) and install llama-cpp-python[server] into this interpreter's environment.
    `say` prints a line, `status` updates the one progress line; returns an exit code."""
    python = sys.executable
    if subprocess.run([python, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        say("this environment has no pip (a uv tool?): run  uv tool install --reinstall -e '.[local]'  with "
            f"CMAKE_ARGS='{BASE_FLAGS}' in your clone instead")
        return 2
    cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace") if Path("/proc/cpuinfo").exists() else ""
    flags = cmake_flags(cpuinfo, platform.machine(), os.environ.get("CMAKE_ARGS", ""))
    key = build_key(VERSION, flags, sys.version_info[:2])
    marker = Path(sys.prefix) / f".llama-portable-{key}"
    if marker.exists():
        say(f"llama-cpp-python {VERSION} (portable build) is already installed in {sys.prefix}")
        return 0
    wheels = wheel_dir(key)
    if not list(wheels.glob("llama_cpp_python-*.whl")):
        say(f"building llama.cpp (llama-cpp-python {VERSION}) for a portable CPU baseline: {estimate(os.cpu_count() or 1)}")
        say(f"  flags: {flags}; the wheel is kept in {wheels} for next time")
        if (code := _build(python, flags, wheels, status, say)) != 0:
            return code
    else:
        say(f"using the llama-cpp-python wheel built before ({wheels})")
    status("installing llama-cpp-python and its server's dependencies…")
    steps = [[python, "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps", *map(str, wheels.glob("llama_cpp_python-*.whl"))],
             [python, "-m", "pip", "install", "-q", f"llama-cpp-python[server]=={VERSION}"]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            say(f"pip failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
            return 1
    marker.touch()
    say(f"installed llama-cpp-python {VERSION} into {sys.prefix}: qwen-lsp serve-local --model FILE.gguf")
    return 0


def _build(python: str, flags: str, wheels: Path, status: Callable[[str], None], say: Callable[[str], None]) -> int:
    tmp = wheels.with_name(wheels.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    log = tmp / "build.log"
    started = time.monotonic()
    command = [python, "-m", "pip", "wheel", "-v", "--no-deps", "--no-cache-dir", "-w", str(tmp), f"llama-cpp-python=={VERSION}"]
    with log.open("w", encoding="utf-8", errors="replace") as out:
        proc = subprocess.Popen(command, env={**os.environ, "CMAKE_ARGS": flags}, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace")
        step = "preparing the build"
        for line in proc.stdout or []:
            out.write(line)
            step = progress_line(line) or step
            minutes, seconds = divmod(int(time.monotonic() - started), 60)
            status(f"building llama.cpp: {minutes}:{seconds:02d} elapsed, {step}")
        code = proc.wait()
    if code != 0:
        tail = log.read_text(errors="replace")[-4000:]
        say(f"the build failed (exit {code}); the end of its log ({log}):\n{tail}")
        return 1
    say(f"built in {(time.monotonic() - started) / 60:.1f} minutes")
    shutil.rmtree(wheels, ignore_errors=True)
    tmp.rename(wheels)
    return 0
