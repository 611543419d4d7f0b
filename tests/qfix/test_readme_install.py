"""The README's newcomer path, followed literally: its install command in a clean login shell
of a fresh user (Debian's /etc/skel dot files, pipx on PATH as `apt install pipx` would put it),
its shell-hook command, `qwen-lsp doctor`, then a failing script and `qfix` in a new login
shell, against the vLLM test double.

The install is real: pipx makes a fresh venv and pip installs the project and its dependencies
(from pip's cache after the first run). Each step's wall time is printed (`pytest -s`)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

from terminal_agent.shell_init import rc_line
from tests.ops.helpers import honest_server
from tests.qfix.helpers import BUGGY, FIXED, fix_replies

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PIPX = Path(sys.executable).with_name("pipx")
PROMPT = "NEWCOMER$ "

pytestmark = pytest.mark.slow


def readme_line(pattern: str) -> str:
    """The one line of a README code block that matches `pattern`, without its trailing comment."""
    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    lines = {re.sub(r"\s+#[^\"']*$", "", line).strip()
             for block in blocks for line in block.splitlines() if re.search(pattern, line)}
    assert len(lines) == 1, (pattern, lines)
    return lines.pop()


def copy_sources(dest: Path) -> Path:
    """The repository as a user's clone would have it (tracked and new files, no build output)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


@pytest.fixture
def newcomer(tmp_path: Path, vllm) -> dict[str, str]:
    """A fresh user's home and the environment a login shell of theirs starts from."""
    if not PIPX.exists():
        pytest.skip("pipx is not installed (the [dev] extra has it)")
    home = tmp_path / "home"
    home.mkdir()
    for dotfile in (".bashrc", ".profile"):
        shutil.copy(Path("/etc/skel") / dotfile, home / dotfile)
    tools = tmp_path / "system-bin"  # what `apt install pipx` adds, and nothing of this project
    tools.mkdir()
    (tools / "pipx").symlink_to(PIPX)
    with (home / ".profile").open("a") as profile:
        profile.write(f'\nPATH="{tools}:$PATH"\n')
    keep = {k: os.environ[k] for k in ("PIP_FIND_LINKS", "PIP_CERT", "PIP_DEFAULT_TIMEOUT") if k in os.environ}
    return {**keep, "HOME": str(home), "USER": "newcomer", "TERM": "xterm-256color", "LANG": "C.UTF-8",
            "QWEN_LSP_BASE_URL": vllm.base_url, "QWEN_LSP_MAX_RETRIES": "0"}


def login(env: dict[str, str], script: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-l", "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def test_the_readme_install_and_first_fix_work_in_a_clean_login_shell(tmp_path, newcomer, vllm):
    home = Path(newcomer["HOME"])
    clone = copy_sources(tmp_path / "qwen-lsp")
    timings: dict[str, float] = {}

    started = time.monotonic()
    install = login(newcomer, readme_line(r"^pipx install|^uv tool install"), clone)
    timings["install"] = time.monotonic() - started
    assert install.returncode == 0, install.stdout + install.stderr

    started = time.monotonic()
    hook = login(newcomer, readme_line(r"qfix init bash"), clone, timeout=120)  # in a new shell: qfix on PATH
    timings["shell hook"] = time.monotonic() - started
    assert hook.returncode == 0 and "~/.bashrc: hook added" in hook.stdout, hook.stdout + hook.stderr

    vllm.responder = honest_server
    started = time.monotonic()
    doctor = login(newcomer, readme_line(r"^qwen-lsp doctor"), clone, timeout=120)
    timings["doctor"] = time.monotonic() - started
    assert "✓ server reachable" in doctor.stdout and "✓ tool calls parse" in doctor.stdout, doctor.stdout

    repo = tmp_path / "project"
    repo.mkdir()
    (repo / "script.py").write_text(BUGGY)
    vllm.responder = None
    vllm.script(*fix_replies())
    shell = pexpect.spawn("bash", ["-l", "-i"], cwd=str(repo), env=newcomer, encoding="utf-8", timeout=120,
                          dimensions=(40, 200))
    try:
        shell.sendline("PS1='NEW''COMER$ '")  # split, so the echo does not look like the prompt
        shell.expect_exact(PROMPT)
        shell.sendline(readme_line(r"^python3? script\.py"))
        shell.expect("NameError")
        shell.expect_exact(PROMPT)
        started = time.monotonic()
        shell.sendline(readme_line(r"^qfix\s+# plan"))
        shell.expect_exact("to see its output? [y/N]")
        shell.sendline("y")
        shell.expect_exact("[a]pply / [s]kip / [e]dit command / [q]uit")
        shell.sendline("a")
        shell.expect_exact("passes now")
        timings["first fix"] = time.monotonic() - started
        shell.expect_exact(PROMPT)
        assert "command not found" not in shell.before
    finally:
        shell.sendline("exit")
        shell.expect(pexpect.EOF, timeout=10)
        shell.close()
        # the first qfix started the newcomer's warm process: stopped as a user would, not left for its
        # 15 idle minutes (it outlived the suite)
        stop = login(newcomer, "qfix --warm-stop", repo, timeout=60)
    assert (repo / "script.py").read_text() == FIXED
    assert stop.returncode == 0 and "stopped" in stop.stdout, stop.stdout + stop.stderr
    print("\nnewcomer path: " + ", ".join(f"{step} {seconds:.1f}s" for step, seconds in timings.items()))


def test_the_rc_line_is_harmless_when_qfix_is_not_installed(tmp_path, newcomer):
    """The line `qfix init bash --install` writes, in a shell where qfix is missing: no error, the shell works."""
    home = Path(newcomer["HOME"])
    line = rc_line("bash", home)
    assert line.startswith("eval ") and "2>/dev/null" in line  # a shell without qfix still starts cleanly
    with (home / ".bashrc").open("a") as bashrc:
        bashrc.write(line + "\n")
    shell = login(newcomer, "echo started", tmp_path)  # a login shell reads ~/.profile, which reads ~/.bashrc
    interactive = subprocess.run(["bash", "-i", "-c", "echo started"], cwd=tmp_path, env=newcomer,
                                 capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    for run in (shell, interactive):
        assert run.returncode == 0 and run.stdout.strip() == "started"
        assert "qfix" not in run.stderr and "not found" not in run.stderr, run.stderr


@pytest.mark.parametrize("shell_name", ["bash", "zsh"])
def test_the_rc_line_finds_qfix_in_local_bin_before_that_is_on_path(shell_name, tmp_path):
    """pipx ensurepath appends ~/.local/bin to PATH at the END of ~/.bashrc: the hook's line (as
    `qfix init --install` writes it), earlier in the file, must still install the hook rather than silently do nothing."""
    if shutil.which(shell_name) is None:
        pytest.skip(f"{shell_name} is not installed")
    local_bin = tmp_path / ".local" / "bin"
    local_bin.mkdir(parents=True)
    (local_bin / "qfix").symlink_to(Path(sys.executable).with_name("qfix"))  # where pipx puts it
    line = rc_line(shell_name, tmp_path)
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "QFIX_STATE_DIR": str(tmp_path / "state"),
           "LANG": "C.UTF-8", **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"}}
    run = subprocess.run([shell_name, "-c", f"{line}\nwhence -w qfix" if shell_name == "zsh" else f"{line}\ntype -t qfix"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert run.stdout.split()[-1:] == ["function"], run.stdout + run.stderr


@pytest.mark.parametrize("shell_name", ["bash", "zsh", "fish"])
def test_the_shell_function_says_so_when_its_qfix_was_uninstalled(shell_name, tmp_path):
    """`eval "$(qfix init bash)"` from a qfix that was later removed: `qfix` explains, the shell goes on."""
    if shutil.which(shell_name) is None:
        pytest.skip(f"{shell_name} is not installed")
    gone = tmp_path / "bin" / "qfix"
    gone.parent.mkdir()
    shutil.copy(Path(sys.executable).with_name("qfix"), gone)
    env = {**os.environ, "HOME": str(tmp_path), "QFIX_STATE_DIR": str(tmp_path / "state")}
    script = subprocess.run([str(gone), "init", shell_name], env=env, capture_output=True, text=True,
                            check=True).stdout
    gone.unlink()
    (tmp_path / "init").write_text(script)
    source = {"fish": "source init", "zsh": "source ./init", "bash": "source ./init"}[shell_name]
    run = subprocess.run([shell_name, "-c", f"{source}; qfix; echo status=$?" if shell_name != "fish"
                          else f"{source}; qfix; echo status=$status"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert "status=127" in run.stdout
    assert f"qfix: {gone} is gone" in run.stderr
