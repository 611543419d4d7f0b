"""The shell hook in login shells (tmux windows, ssh sessions): a login bash reads the ~/.bash_profile that
`pipx ensurepath` creates, not ~/.bashrc; a zsh started after a `pipx ensurepath` run in bash has no
~/.local/bin on PATH. `qfix init SHELL --install` puts the hook where each reads it; real shells under a pty.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from terminal_agent.shell_init import MARK

BIN = Path(sys.executable).parent
PROMPT = "LOGIN$ "


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A user's home after `pipx install` and `pipx ensurepath` in bash, with no ~/.profile (a user made
    without /etc/skel, or macOS): pipx then creates ~/.bash_profile with its PATH line and nothing else."""
    home = tmp_path / "home"
    local_bin = home / ".local" / "bin"
    local_bin.mkdir(parents=True)
    for command in ("qfix", "qwen-lsp", "qwen-review"):
        (local_bin / command).symlink_to(BIN / command)  # where pipx puts them
    pipx = BIN / "pipx"
    if not pipx.exists():
        pytest.skip("pipx is not installed (the [dev] extra has it)")
    subprocess.run([str(pipx), "ensurepath"], env={**env_of(home), "PIPX_HOME": str(home / ".local" / "pipx"),
                   "PIPX_BIN_DIR": str(local_bin)}, capture_output=True, check=True, timeout=120)
    assert "bashrc" not in (home / ".bash_profile").read_text()  # as pipx writes it: PATH only
    return home


def env_of(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "PATH": "/usr/bin:/bin", "SHELL": "/bin/bash", "TERM": "xterm-256color",
            "LANG": "C.UTF-8", "QFIX_STATE_DIR": str(home / "state"), "QFIX_WARM": "0"}


def qfix(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(home / ".local" / "bin" / "qfix"), *args], env=env_of(home), capture_output=True,
                          text=True, timeout=60)


def login_shell(shell: str, home: Path) -> pexpect.spawn:
    child = pexpect.spawn(shell, ["-l", "-i"], cwd=str(home), env=env_of(home), encoding="utf-8", timeout=60,
                          dimensions=(40, 200))
    child.sendline("PS1='LOG''IN$ '" if shell == "bash" else "PROMPT='LOG''IN$ '")
    child.expect_exact(PROMPT)
    return child


def ask(child: pexpect.spawn, line: str) -> str:
    child.sendline(line)
    child.expect_exact(PROMPT)
    return child.before.replace("\r", "")


def close(child: pexpect.spawn) -> None:
    child.sendline("exit")
    child.expect(pexpect.EOF, timeout=10)
    child.close()


def test_install_puts_the_hook_in_the_bash_profile_pipx_wrote_and_a_login_bash_records_commands(home):
    installed = qfix(home, "init", "bash", "--install")
    assert installed.returncode == 0, installed.stderr
    assert "~/.bashrc: hook added" in installed.stdout and "~/.bash_profile: hook added" in installed.stdout
    shell = login_shell("bash", home)
    try:
        assert "function" in ask(shell, "type -t qfix")
        ask(shell, "false")
        record = ask(shell, 'cat "$__qfix_sessions/$$.json"')
        assert '"command":"false"' in record and '"exit_code":1' in record
    finally:
        close(shell)


def test_install_in_zsh_loads_the_hook_and_puts_local_bin_on_path_in_a_login_zsh(home):
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed")
    assert qfix(home, "init", "zsh", "--install").returncode == 0
    assert MARK in (home / ".zshrc").read_text()
    shell = login_shell("zsh", home)
    try:
        assert "qfix: function" in ask(shell, "whence -w qfix")
        assert str(home / ".local" / "bin" / "qwen-lsp") in ask(shell, "command -v qwen-lsp")  # pipx ensurepath ran in bash
        ask(shell, "false")
        assert '"command":"false"' in ask(shell, 'cat "$__qfix_sessions/$$.json"')
    finally:
        close(shell)


def test_a_login_bash_without_the_hook_says_where_it_is_missing(home):
    """The hook in ~/.bashrc only (the line added by hand): a login bash never reads it, and qfix says so
    instead of asking for the line that is already there."""
    with (home / ".bashrc").open("a") as bashrc:
        bashrc.write('eval "$(PATH=$PATH:$HOME/.local/bin qfix init bash 2>/dev/null)"\n')
    shell = login_shell("bash", home)
    try:
        said = ask(shell, "qfix")
    finally:
        close(shell)
    assert "did not load the qfix hook that ~/.bashrc has" in said and "~/.bash_profile" in said
    assert "qfix init bash --install" in said


def test_install_twice_writes_once_and_uninstall_takes_every_line_out(home):
    before = {name: (home / name).read_text() for name in (".bashrc", ".bash_profile")}
    qfix(home, "init", "bash", "--install")
    again = qfix(home, "init", "bash", "--install")
    assert again.stdout.count("already has the hook") == 2
    assert (home / ".bashrc").read_text().count(MARK) == 1
    assert qfix(home, "init", "fish", "--install").returncode == 0
    removed = qfix(home, "init", "--uninstall")
    assert removed.returncode == 0 and removed.stdout.count("hook removed") == 3, removed.stdout
    assert {name: (home / name).read_text() for name in before} == before
    assert not (home / ".config" / "fish" / "conf.d" / "qfix.fish").exists()
