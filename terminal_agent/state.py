"""What the shell integration records about the last command, and where.

The hook (terminal_agent/shell/qfix.*) writes one small JSON file per shell
session, `<state dir>/sessions/<shell pid>.json`, after every command; `qfix`
with no command reads the file of the shell it was started from.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from pydantic import BaseModel, ValidationError

from terminal_agent.paths import sessions_dir

TMUX_LINES = 2000  # scrollback lines read from the pane when looking for the last output


class ShellRecord(BaseModel):
    """The last command a shell session ran."""

    shell: str  # bash | zsh | fish: re-runs use the same shell
    pid: int
    command: str
    exit_code: int
    cwd: str  # absolute: where the command was typed
    output: str | None = None  # only when captured (tmux)


def session_file(pid: int) -> Path:
    return sessions_dir() / f"{pid}.json"


def write_record(record: ShellRecord) -> None:
    """Replace the shell's record (as its hook would): after `cmd || qfix` the failing `cmd` is the
    shell's last command, not the whole line, which the hook leaves alone."""
    path = session_file(record.pid)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(record.model_dump_json(exclude={"output"}) + "\n", encoding="utf-8", errors="surrogateescape")
    except OSError:
        pass  # only a convenience for the next plain `qfix`


def last_record() -> ShellRecord | None:
    """The record of the shell that started us: the qfix shell function says which
    (QFIX_SHELL_PID); a plain `qfix` from an integrated shell is its child."""
    pid = os.environ.get("QFIX_SHELL_PID")
    candidates = [int(pid)] if pid and pid.isdigit() else [os.getppid()]
    for candidate in candidates:
        try:
            raw = session_file(candidate).read_text(encoding="utf-8", errors="surrogateescape")
            # strict=False: the shell escapes only \ " and newlines/tabs; other control characters pass raw.
            return ShellRecord.model_validate(json.loads(raw, strict=False))
        except (OSError, ValueError, ValidationError):
            continue
    return None


def tmux_output(command: str, running_line: str | None = None) -> str | None:
    """The last command's output as it is still on screen, when running inside tmux:
    the lines between the prompt that shows `command` and the prompt running qfix; or, when qfix
    runs on the same line as the command (`running_line`), everything after that line's prompt."""
    pane = os.environ.get("TMUX_PANE")
    if not os.environ.get("TMUX") or not pane or os.environ.get("QFIX_TMUX_CAPTURE", "1") == "0":
        return None
    try:
        screen = subprocess.run(
            ["tmux", "capture-pane", "-p", "-J", "-t", pane, "-S", f"-{TMUX_LINES}"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    lines = screen.splitlines()
    if running_line is not None:  # no prompt after it yet: the screen's end is the output's end
        return output_after_prompt([*lines, "(qfix)"], running_line)
    return output_after_prompt(lines, command)


def output_after_prompt(lines: list[str], command: str) -> str | None:
    """Between the last line ending with the command (its prompt) and the last
    non-empty line (the prompt we were started from; qfix has printed nothing yet)."""
    lines = [line.rstrip() for line in lines]
    while lines and not lines[-1]:
        lines.pop()
    end = len(lines) - 1
    tail = command.strip().splitlines()[-1].strip() if command.strip() else ""
    if not tail:
        return None
    start = next((i for i in range(end - 1, -1, -1) if lines[i].endswith(tail)), None)
    if start is None:
        return None
    return "\n".join(lines[start + 1 : end]) + "\n"
