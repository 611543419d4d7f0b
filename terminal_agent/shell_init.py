"""`qfix init bash|zsh|fish`: the shell integration script, printed for `eval`; `qfix init [SHELL]
--install` writes the line that loads it into the files that shell reads at start, login shells
included, and `qfix init --uninstall` takes those lines out again.

Stdlib and platformdirs only: shells run this at every start, so it must not import the engine.
"""

from __future__ import annotations

import os
import shlex
import sys
from importlib import resources
from pathlib import Path

from terminal_agent.paths import sessions_dir

SHELLS = ("bash", "zsh", "fish")


def init_script(shell: str) -> str:
    """The integration for `shell`, recording into the sessions dir and calling this qfix."""
    if shell not in SHELLS:
        raise ValueError(f"unsupported shell {shell!r}; choose one of: {', '.join(SHELLS)}")
    template = resources.files("terminal_agent").joinpath(f"shell/qfix.{shell}").read_text(encoding="utf-8")
    command = _qfix_command()
    return (template.replace("@SESSIONS@", shlex.quote(str(sessions_dir())))
            .replace("@PATH_LINE@", _path_line(shell, command))
            .replace("@QFIX_BIN@", shlex.quote(command[0])).replace("@QFIX@", shlex.join(command)))


def _path_line(shell: str, command: list[str]) -> str:
    """The folder of this qfix (and of qwen-lsp and qwen-review next to it) added at the end of PATH when
    it is not on it: `pipx ensurepath` run in bash leaves a zsh started later without ~/.local/bin."""
    if len(command) != 1:  # `python -m terminal_agent.qfix`: no folder of commands to add
        return ""
    folder = shlex.quote(os.path.dirname(command[0]))
    if shell == "fish":
        return f"contains -- {folder} $PATH; or set -gx PATH $PATH {folder}"
    return f'case ":$PATH:" in *:{folder}:*) ;; *) export PATH="$PATH:"{folder} ;; esac'


# -- --install / --uninstall -------------------------------------------------------------------------

MARK = "# qfix shell hook (written by `qfix init --install`; `qfix init --uninstall` removes it)"


def rc_line(shell: str, home: Path) -> str:
    """The line that loads the hook: it finds a qfix in ~/.local/bin (pipx, uv) even before that folder is
    on PATH, and is silent and harmless once qfix is uninstalled."""
    folder = os.path.dirname(_qfix_command()[0]) if len(_qfix_command()) == 1 else str(home / ".local" / "bin")
    spelled = "$HOME/.local/bin" if Path(folder) == home / ".local" / "bin" else shlex.quote(folder)
    if shell == "fish":
        spelled = "~/.local/bin" if spelled == "$HOME/.local/bin" else spelled
        return f"begin; set -lx PATH $PATH {spelled}; qfix init fish 2>/dev/null; end | source"
    return f'eval "$(PATH=$PATH:{spelled} qfix init {shell} 2>/dev/null)"'


def startup_files(shell: str, home: Path, environ: dict[str, str] | None = None) -> list[Path]:
    """Where `shell` must load the hook so that every interactive shell of the user has it.

    bash: ~/.bashrc, and the login file a login shell (tmux, ssh, a macOS terminal) reads instead, the
    first of ~/.bash_profile, ~/.bash_login, ~/.profile that exists, unless it reads ~/.bashrc itself
    (Debian's ~/.profile does; the ~/.bash_profile `pipx ensurepath` creates does not). zsh reads
    ~/.zshrc in login shells too; fish reads every file in conf.d."""
    environ = os.environ if environ is None else environ
    if shell == "bash":
        files = [home / ".bashrc"]
        login = next((home / name for name in (".bash_profile", ".bash_login", ".profile") if (home / name).exists()), None)
        if login is not None and ".bashrc" not in _read(login):
            files.append(login)
        return files
    if shell == "zsh":
        return [Path(environ.get("ZDOTDIR") or home) / ".zshrc"]
    return [Path(environ.get("XDG_CONFIG_HOME") or home / ".config") / "fish" / "conf.d" / "qfix.fish"]


def install(shell: str, home: Path) -> list[str]:
    """Write the hook's line where `shell` reads it (once); what was done, one line each."""
    done = []
    line = rc_line(shell, home)
    for path in startup_files(shell, home):
        if MARK in _read(path):
            done.append(f"{_tilde(path, home)}: already has the hook")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        text = _read(path)
        with path.open("a", encoding="utf-8") as out:
            out.write(("\n" if text and not text.endswith("\n") else "") + f"{MARK}\n{line}\n")
        done.append(f"{_tilde(path, home)}: hook added")
    return done


def uninstall(home: Path) -> list[str]:
    """Take out every hook `install` wrote, for every shell (a qfix.fish of ours is deleted)."""
    done = []
    candidates = {path for shell in SHELLS for path in startup_files(shell, home)}
    candidates |= {home / name for name in (".bash_profile", ".bash_login", ".profile")}
    for path in sorted(candidates):
        text = _read(path)
        if MARK not in text:
            continue
        lines = text.splitlines(keepends=True)
        kept, skip = [], False
        for current in lines:
            if skip:  # the line after our mark is ours
                skip = False
                continue
            if current.rstrip("\n") == MARK:
                skip = True
                continue
            kept.append(current)
        if path.name == "qfix.fish" and not "".join(kept).strip():
            path.unlink()
        else:
            path.write_text("".join(kept), encoding="utf-8")
        done.append(f"{_tilde(path, home)}: hook removed")
    return done


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _tilde(path: Path, home: Path) -> str:
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


def prune_dead_sessions() -> None:
    """Drop the records of shells that have exited (cheap: one kill(pid, 0) per file)."""
    for record in sessions_dir().glob("*.json"):
        try:
            os.kill(int(record.stem), 0)
        except ProcessLookupError:
            record.unlink(missing_ok=True)
        except (ValueError, PermissionError):  # not ours to judge: another user's pid is alive
            continue


def _qfix_command() -> list[str]:
    """How the shell function calls this very qfix (absolute, so PATH changes do not matter)."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "qfix" and argv0.exists():
        return [os.path.abspath(argv0)]
    return [sys.executable, "-m", "terminal_agent.qfix"]


def no_record_advice(environ: dict[str, str], home: Path) -> str:
    """What to say when `qfix` finds no recorded command: a shell with the hook that has run nothing yet,
    a shell that did not load a hook its user did install (a login shell reading another file), or none."""
    if environ.get("QFIX_SHELL_PID"):
        return "qfix: this shell has recorded no command yet: run one first, or `qfix -- CMD`"
    shell = os.path.basename(environ.get("SHELL", "")) if os.path.basename(environ.get("SHELL", "")) in SHELLS else "bash"
    wanted = startup_files(shell, home, environ)
    has_hook = [path for path in wanted if "qfix init" in _read(path)]
    if has_hook and len(has_hook) < len(wanted):
        missing = ", ".join(_tilde(path, home) for path in wanted if path not in has_hook)
        return (f"qfix: this shell did not load the qfix hook that {_tilde(has_hook[0], home)} has: a login shell "
                f"(tmux, ssh) reads {missing} instead. `qfix init {shell} --install` adds it there too; then open a "
                "new shell. Meanwhile: `qfix -- CMD`")
    if has_hook:
        return (f"qfix: this shell did not load the qfix hook (it is in {_tilde(has_hook[0], home)}; was the shell "
                "started before it was added?): open a new shell, or run `qfix -- CMD`")
    return (f"qfix: no command given and none recorded: run `qfix -- CMD`, or `qfix init {shell} --install` so "
            "that your shell records the commands it runs (then open a new shell)")
