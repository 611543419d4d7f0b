"""The sandbox's pieces: argument vetting, protected paths, the bwrap command line, and
that a timeout or a cancel leaves no process behind and the network is unreachable."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from qwen_lsp.engine import sandbox
from qwen_lsp.engine.overlay import Overlay
from qwen_lsp.engine.protected import ProtectedPath, protected_reason
from qwen_lsp.engine.validate import run_verify
from qwen_lsp.engine.vetting import refusal, runs_during_verification
from qwen_lsp.types import FileChange
from tests.hostile import Stage
from tests.net import free_port


@pytest.mark.parametrize("command", [
    "pytest --junitxml=/tmp/x.xml", "pytest --junitxml /tmp/x.xml", "pytest --basetemp=../out", "pytest --rootdir=/",
    "pytest -c ~/pytest.ini", "pytest --confcutdir=/", "pytest --cov-report=xml:/tmp/cov.xml", "pytest -p evil",
    "pytest -pevil", "pytest -o addopts=-pevil", "python -m pytest ../other_project/tests",
    "cargo test --manifest-path /elsewhere/Cargo.toml", "cargo build --config build.rustc-wrapper='x'",
    "go test -o /usr/local/bin/go ./...", "go test -exec evil ./...", "go build -toolexec=x ./...",
    "npm test --prefix /elsewhere", "npm test --script-shell=/bin/evil", "make test SHELL=/tmp/evil",
    "make -f /tmp/Makefile test", "make test -C ..", "mypy --cache-dir=/tmp/c .", "ruff check --output-file=/tmp/o .",
    "node --test --require ./x.js", "tsc --outDir /tmp/out",
])
def test_runner_options_that_reach_outside_or_load_code_are_refused(tmp_path, command):
    assert refusal(command, tmp_path) is not None


@pytest.mark.parametrize("command", [
    "pytest -q -p no:cacheprovider test_calc.py", "pytest --junitxml=reports/junit.xml tests/",
    "python -m pytest -x --basetemp=.tmp tests/test_a.py::test_b", "pytest --cov-report=xml:cov.xml --cov=pkg",
    "cargo test --manifest-path crates/a/Cargo.toml", "go test -o bin/t ./...", "make test", "make check -C sub",
    "mypy src", "ruff check .", "tsc -p tsconfig.json", "npm test",
])
def test_runner_options_inside_the_workspace_are_allowed(tmp_path, command):
    (tmp_path / "sub").mkdir()
    assert refusal(command, tmp_path) is None


def test_a_symlink_out_of_the_workspace_counts_as_outside(tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "reports").symlink_to(tmp_path / "elsewhere")
    assert "outside" in refusal("pytest --junitxml=reports/x.xml", tmp_path / "ws")


def test_files_that_run_as_configuration_are_named():
    def change(path: str, before: str = "", after: str = "x") -> FileChange:
        return FileChange(path=path, original=before, updated=after, diff="")

    named = runs_during_verification([
        change("conftest.py"), change("tests/conftest.py"), change("calc.py"), change("pkg/setup.cfg"),
        change("Makefile"), change("build.rs"), change("web/package.json"), change("a.go", "package a\n",
        "package a\n//go:generate sh -c evil\n"), change("b.go", "//go:generate x\n", "//go:generate x\n// y\n"),
    ])
    assert [n.split(" (")[0] for n in named] == ["conftest.py", "tests/conftest.py", "pkg/setup.cfg", "Makefile",
                                                 "build.rs", "web/package.json", "a.go"]


def test_a_symlink_into_git_is_protected_too(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n")
    (tmp_path / "innocent").symlink_to(tmp_path / ".git")
    overlay = Overlay(tmp_path)
    with pytest.raises(ProtectedPath, match=r"\.git/config is inside \.git/"):
        overlay.write("innocent/config", "[core]\n\tfsmonitor = x\n")
    assert protected_reason(tmp_path, "src/.gitignore") is None and protected_reason(tmp_path, "a.py") is None


def test_the_cache_directory_is_protected(tmp_path):
    overlay = Overlay(tmp_path, protected=(tmp_path / ".cache" / "qwen",))
    with pytest.raises(ProtectedPath, match="cache"):
        overlay.write(".cache/qwen/state/x.json", "{}")


def test_the_command_line_is_a_list_with_no_network_and_a_scrubbed_environment(tmp_path):
    environ = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "LANG": "C.UTF-8", "LC_ALL": "C",
               "QWEN_LSP_API_KEY": "k", "GITHUB_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "s", "SSH_AUTH_SOCK": "/run/x",
               "VIRTUAL_ENV": sys.prefix, "PYTHONPATH": "/x"}
    (tmp_path / "home").mkdir()
    scratch = tmp_path / "scratch"
    (scratch / "ws").mkdir(parents=True)
    jail = sandbox.build("/usr/bin/bwrap", "pytest -q; echo $HOME", scratch=scratch, workdir=scratch / "ws",
                         workspace=tmp_path / "real", environ=environ)
    assert jail.argv[-4:] == ["--", "/bin/sh", "-c", "pytest -q; echo $HOME"]  # one word, never re-split
    assert {"--unshare-net", "--die-with-parent", "--new-session", "--unshare-pid"} <= set(jail.argv)
    binds = [jail.argv[i + 1:i + 3] for i, word in enumerate(jail.argv) if word == "--bind"]
    # Writable: the scratch directory, and the copy in it mounted over the real workspace.
    assert binds == [[str(scratch.resolve())] * 2, [str(scratch.resolve() / "ws"), str((tmp_path / "real").resolve())]]
    assert jail.argv[jail.argv.index("--chdir") + 1] == str((tmp_path / "real").resolve())
    assert set(jail.env) == {"PATH", "LANG", "LC_ALL", "VIRTUAL_ENV", "PYTHONPATH", "HOME", "TMPDIR",
                             "PYTHONDONTWRITEBYTECODE"}
    assert jail.env["HOME"] == str(scratch.resolve() / "home")


def detached_sleeper(tag: str) -> str:
    code = f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', '{tag}'], start_new_session=True); time.sleep(600)"
    return f'{sys.executable} -c "{code}"'


async def test_a_timeout_kills_everything_the_command_started(tmp_path, jail):
    stage = Stage(tmp_path, tmp_path, tmp_path, "qwen-sleeper-" + uuid.uuid4().hex)
    try:
        outcome = await run_verify(Overlay(tmp_path), detached_sleeper(stage.process_tag), None, 3, bwrap=jail.bwrap)
        assert not outcome.ok and outcome.detail == "timed out after 3s"
        await asyncio.sleep(0.5)
        assert stage.survivors() == []
    finally:
        stage.kill_survivors()


async def test_a_cancelled_fix_kills_everything_the_command_started(tmp_path, jail):
    stage = Stage(tmp_path, tmp_path, tmp_path, "qwen-sleeper-" + uuid.uuid4().hex)
    try:
        task = asyncio.create_task(run_verify(Overlay(tmp_path), detached_sleeper(stage.process_tag), None, 60,
                                              bwrap=jail.bwrap))
        for _ in range(100):  # until the sleeper is up
            await asyncio.sleep(0.1)
            if stage.survivors():
                break
        assert stage.survivors()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.5)
        assert stage.survivors() == []
    finally:
        stage.kill_survivors()


async def test_the_network_is_unreachable_inside(tmp_path, jail):
    connections = []
    server = await asyncio.start_server(lambda r, w: connections.append(w.close()), "127.0.0.1", port := free_port())
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('CONNECTED')"
    async with server:
        outcome = await run_verify(Overlay(tmp_path), f'{sys.executable} -c "{code}"', None, 30, bwrap=jail.bwrap)
    # Its own network namespace: only a loopback of its own, where nothing listens.
    assert not outcome.ok and "CONNECTED" not in outcome.detail and "Connection refused" in outcome.detail
    assert connections == []


async def test_the_workspace_path_is_the_copy_and_its_virtualenv_is_read_only(tmp_path, jail):
    root = tmp_path / "ws"
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / "calc.py").write_text("before\n")
    overlay = Overlay(root)
    overlay.write("calc.py", "PATCHED\n")
    command = (f"grep -q PATCHED {root}/calc.py && test -d {root}/.venv/bin && touch {root}/new.txt"
               f" && ! touch {root}/.venv/x 2>/dev/null && echo ALL-GOOD && false")
    outcome = await run_verify(overlay, command, None, 30, bwrap=jail.bwrap)
    assert "ALL-GOOD" in outcome.detail  # absolute paths reach the patched copy; the venv is read-only
    assert (root / "calc.py").read_text() == "before\n" and not (root / "new.txt").exists()
    assert sorted(p.name for p in root.rglob("*")) == [".venv", "bin", "calc.py"]


def test_toolchains_under_the_real_home_are_still_found_with_home_moved(tmp_path, jail):
    """rustup's `cargo` looks for ~/.rustup through HOME, which the sandbox moves: without RUSTUP_HOME
    set to the real one, every Rust verification failed with "rustup could not choose a version"."""
    home = tmp_path / "home"
    (home / ".rustup" / "toolchains" / "stable").mkdir(parents=True)
    (home / ".rustup" / "settings.toml").write_text('default_toolchain = "stable"\n')
    (home / ".cargo" / "bin").mkdir(parents=True)
    (home / ".cargo" / "credentials.toml").write_text("token = 'secret'\n")
    scratch = tmp_path / "scratch"
    (scratch / "ws").mkdir(parents=True)
    environ = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    command = ('cat "$RUSTUP_HOME/settings.toml"; test -d "$CARGO_HOME/bin" && echo CARGO-BIN; '
               'cat "$CARGO_HOME/credentials.toml" 2>/dev/null || echo NO-CREDENTIALS; echo "home=$HOME"')
    built = sandbox.build(jail.bwrap, command, scratch=scratch, workdir=scratch / "ws", workspace=None, environ=environ)
    assert built.env["RUSTUP_HOME"] == str(home / ".rustup") and built.env["CARGO_HOME"] == str(home / ".cargo")
    out = subprocess.run(built.argv, env=built.env, capture_output=True, text=True, timeout=60).stdout
    assert 'default_toolchain = "stable"' in out and "CARGO-BIN" in out
    assert "NO-CREDENTIALS" in out and "secret" not in out  # only the toolchain's parts are shown
    assert f"home={scratch.resolve() / 'home'}" in out


def test_a_toolchain_variable_the_user_set_is_kept(tmp_path):
    home = tmp_path / "home"
    (home / ".rustup").mkdir(parents=True)
    environ = {"PATH": "/usr/bin", "HOME": str(home), "RUSTUP_HOME": "/opt/rustup"}
    env = sandbox.sandbox_env(environ, tmp_path / "h", tmp_path / "t", home)
    assert env["RUSTUP_HOME"] == "/opt/rustup" and "CARGO_HOME" not in env  # no ~/.cargo here: nothing named
