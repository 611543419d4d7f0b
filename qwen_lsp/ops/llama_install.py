"""`qwen-lsp serve-local --install`: llama-cpp-python built for any CPU of this architecture, into
the environment qwen-lsp runs in (pipx's, uv's, a venv), with the build's progress on screen.

Why not `pip install llama-cpp-python`: pip's default build uses -march=native, and a llama.cpp
that mis-detects AVX-512/AMX died with a general protection fault on its first completion.
GGML_NATIVE=OFF compiles for a fixed baseline (AVX2/FMA/F16C on x86-64, never AVX-512; without
AVX2 those are off too). The same as scripts/llama-portable, and the same wheel cache: a wheel
built by either is used by both (`build_key` is the script's key).

Building llama.cpp takes about 12 CPU-minutes, once: some 6 minutes on two idle cores, longer on
a busy machine. A user's CMAKE_ARGS (e.g. -DGGML_CUDA=on) are added to the flags.

A build that fails resumes where it stopped: the sdist is unpacked once into a folder of the cache
and CMake builds in another (scikit-build-core's `build-dir`), so the next try recompiles only what
is missing. A compiler killed for lack of memory is said in one line with its cure (fewer parallel
jobs), and the build is tried once more that way, resuming.

Stdlib only: scripts/llama-portable runs this file before qwen-lsp itself is installed.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

VERSION = os.environ.get("LLAMA_CPP_VERSION") or "0.3.36"  # as scripts/llama-portable: VERSION=${LLAMA_CPP_VERSION:-0.3.36}
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


# What compilers and the kernel's OOM killer leave in a build log when a compiler ran out of memory.
_OUT_OF_MEMORY = re.compile(r"Killed signal terminated program|internal compiler error: Killed|"
                            r"virtual memory exhausted|cannot allocate memory|out of memory allocating", re.I)
_ERROR_LINE = re.compile(r"\berror\b|Killed|FAILED:", re.I)


def out_of_memory(log: str) -> bool:
    """Pure: whether a build log shows a compiler killed for lack of memory."""
    return bool(_OUT_OF_MEMORY.search(log))


def failure_summary(log: str, limit: int = 8) -> str:
    """Pure: the few lines of a long build log that say what failed (not 4,000 characters of it)."""
    lines = [line.strip() for line in log.splitlines() if _ERROR_LINE.search(line)]
    unique = list(dict.fromkeys(lines))[-limit:]
    return "\n".join(f"  {line[:300]}" for line in unique) or "\n".join(f"  {line[:300]}" for line in log.splitlines()[-limit:])


def fewer_jobs(environ: dict[str, str] | os._Environ[str], cpus: int) -> int | None:
    """Pure: the parallel jobs to retry with after running out of memory (None: already one)."""
    current = environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "")
    jobs = int(current) if current.isdigit() else cpus + 2  # ninja's default
    return None if jobs <= 1 else max(1, jobs // 2) if jobs > 2 else 1


def wheel_dir(key: str) -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "qwen-lsp-build" / f"llama-{key}"


def build_dirs(key: str) -> tuple[Path, Path]:
    """The unpacked sdist and CMake's build folder, kept across tries so that a retry resumes."""
    wheels = wheel_dir(key)
    return wheels.with_name(wheels.name + ".src"), wheels.with_name(wheels.name + ".build")


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
    source_root, build_dir = wheels.with_name(wheels.name + ".src"), wheels.with_name(wheels.name + ".build")
    tmp = wheels.with_name(wheels.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    log = tmp / "build.log"
    if build_dir.is_dir():
        kept = sum(1 for _ in build_dir.rglob("*.o"))
        say(f"  resuming the build left in {build_dir}: {kept} file(s) compiled before are kept, the progress "
            "below counts what is left (delete that folder to start from scratch)")
    source = _unpacked_sdist(python, source_root, log)
    if source is None:
        say(f"could not download or unpack llama-cpp-python {VERSION}'s source; see {log}:\n{failure_summary(log.read_text(errors='replace'))}")
        return 1
    started = time.monotonic()
    env = {**os.environ, "CMAKE_ARGS": flags}
    while True:
        code = _compile(python, source, build_dir, tmp, log, env, status, started)
        if code == 0:
            break
        text = log.read_text(errors="replace")
        if not out_of_memory(text):
            say(f"the build failed (exit {code}):\n{failure_summary(text)}\nthe whole log: {log}; "
                "`qwen-lsp serve-local --install` again resumes where it stopped")
            return 1
        jobs = fewer_jobs(env, os.cpu_count() or 1)
        if jobs is None:
            say("the build ran out of memory (the compiler was killed) even with one job at a time: free some "
                f"memory (close programs, add swap) and run `qwen-lsp serve-local --install` again; it resumes "
                f"where it stopped. The log: {log}")
            return 1
        killed = next((line.strip() for line in text.splitlines() if _OUT_OF_MEMORY.search(line)), "")[:200]
        say(f"the build ran out of memory ({killed}): "
            f"retrying with {jobs} parallel job(s), resuming where it stopped. To choose yourself: "
            f"CMAKE_BUILD_PARALLEL_LEVEL={jobs} qwen-lsp serve-local --install")
        env["CMAKE_BUILD_PARALLEL_LEVEL"] = str(jobs)
    say(f"built in {(time.monotonic() - started) / 60:.1f} minutes")
    shutil.rmtree(wheels, ignore_errors=True)
    tmp.rename(wheels)
    shutil.rmtree(build_dir, ignore_errors=True)  # the wheel is what is kept
    shutil.rmtree(source_root, ignore_errors=True)
    return 0


def _unpacked_sdist(python: str, root: Path, log: Path) -> Path | None:
    """llama-cpp-python's source, downloaded and unpacked once into `root` (a fixed path: CMake's cache
    names its source folder, so a resumed build needs the same one)."""
    unpacked = root / f"llama_cpp_python-{VERSION}"
    if (unpacked / "pyproject.toml").is_file():
        return unpacked
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    with log.open("a", encoding="utf-8", errors="replace") as out:
        done = subprocess.run([python, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                               "-d", str(root), f"llama-cpp-python=={VERSION}"], stdout=out, stderr=subprocess.STDOUT)
    archives = list(root.glob("llama_cpp_python-*.tar.gz"))
    if done.returncode != 0 or not archives:
        return None
    try:
        extract(archives[0], root)
    except (OSError, tarfile.TarError) as exc:
        with log.open("a", encoding="utf-8", errors="replace") as out:
            out.write(f"ERROR: could not unpack {archives[0].name}: {exc}\n")
        return None
    return unpacked if (unpacked / "pyproject.toml").is_file() else None


def extract(archive: Path, root: Path) -> None:
    """Unpack the tar `archive` into `root` through tarfile's "data" filter, which refuses members
    that would land outside `root`, links leading out and device files. The filter is in the standard
    library from Python 3.11.4; on older 3.11s (Debian 12 has 3.11.2) its backport, a dependency
    there, does the same. Raises tarfile.TarError (the standard one, whichever module refused)."""
    module = tarfile if hasattr(tarfile, "data_filter") else _backport()
    try:
        with module.open(archive) as tar:
            tar.extractall(root, filter="data")
    except module.TarError as exc:
        raise tarfile.TarError(str(exc)) from exc


def _backport():  # -> the backports.tarfile module
    from backports import tarfile as backport

    return backport


def _compile(python: str, source: Path, build_dir: Path, out_dir: Path, log: Path, env: dict[str, str],
             status: Callable[[str], None], started: float) -> int:
    command = [python, "-m", "pip", "wheel", "-v", "--no-deps", "--no-cache-dir", "-w", str(out_dir),
               f"--config-settings=build-dir={build_dir}", str(source)]
    with log.open("w", encoding="utf-8", errors="replace") as out:
        proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace")
        step = "preparing the build"
        for line in proc.stdout or []:
            out.write(line)
            step = progress_line(line) or step
            minutes, seconds = divmod(int(time.monotonic() - started), 60)
            status(f"building llama.cpp: {minutes}:{seconds:02d} elapsed, {step}")
        return proc.wait()


if __name__ == "__main__":  # scripts/llama-portable: the same build, before qwen-lsp is installed
    def _status(line: str) -> None:
        if sys.stderr.isatty():
            sys.stderr.write(f"\r\x1b[K{line}")
            sys.stderr.flush()

    def _say(line: str) -> None:
        if sys.stderr.isatty():
            sys.stderr.write("\r\x1b[K")
        print(line, file=sys.stderr)

    sys.exit(install(_say, _status))
