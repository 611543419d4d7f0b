"""`qfix init bash|zsh|fish`: the shell integration script, printed for `eval`.

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
            .replace("@QFIX_BIN@", shlex.quote(command[0])).replace("@QFIX@", shlex.join(command)))


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
