"""`qwen-lsp serve-local --install`: the portable llama.cpp build of scripts/llama-portable, with progress."""

from __future__ import annotations

import subprocess
import sys
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


def test_install_into_an_environment_that_has_it_says_so_and_builds_nothing(monkeypatch, capsys):
    from qwen_lsp.cli import main

    flags = cmake_flags(Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else "", __import__("platform").machine())
    marker = Path(sys.prefix) / f".llama-portable-{build_key(llama_install.VERSION, flags, sys.version_info[:2])}"
    if not marker.exists():
        pytest.skip("this venv's llama-cpp-python was not installed by scripts/llama-portable")
    monkeypatch.delenv("CMAKE_ARGS", raising=False)
    assert main(["serve-local", "--install"]) == 0
    assert "is already installed" in capsys.readouterr().err


def test_serve_local_without_a_model_says_what_to_do(capsys):
    from qwen_lsp.cli import main

    assert main(["serve-local"]) == 2
    assert "--model FILE.gguf is required (or --install" in capsys.readouterr().err
