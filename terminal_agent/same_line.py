"""`pytest -q tests || qfix`, `make; qfix`: qfix on the same command line as the failure to fix.

The shell hook records a line only once the whole line has finished, so when qfix runs on that line
the record still holds the line before. The qfix shell function passes the line being run
(QFIX_LINE: bash's newest history entry, zsh's and fish's preexec argument) and the exit status of
what ran just before it on that line (QFIX_LINE_STATUS). This module decides, from the line alone,
which command that status belongs to: the one part before qfix when there is exactly one, else
nobody can tell and qfix refuses, saying so. Pure functions; stdlib only.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass

LIST_OPERATORS = (";", "&&", "||", "&")  # what separates the commands of one line (a pipe does not)


@dataclass(frozen=True)
class SameLine:
    """qfix ran after `command` on the same line; `exit_code` is the status the shell gave qfix."""

    command: str
    exit_code: int


@dataclass(frozen=True)
class Refused:
    reason: str


def split_list(line: str) -> list[tuple[str, str]] | None:
    """The line's top-level commands (pipelines kept whole) with the operator after each ("" at the end),
    split outside quotes, parentheses, braces and command substitutions; None when the line cannot be
    split with certainty (a here-document, an unbalanced quote or bracket)."""
    parts: list[tuple[str, str]] = []
    current: list[str] = []
    quote = ""  # ', " or `
    depth = 0
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if quote:
            current.append(c)
            if c == "\\" and quote != "'" and i + 1 < n:
                current.append(line[i + 1])
                i += 1
            elif c == quote:
                quote = ""
            i += 1
            continue
        if c == "\\" and i + 1 < n:
            current.append(line[i : i + 2])
            i += 2
            continue
        if c in "'\"`":
            quote = c
        elif c in "({":
            depth += 1
        elif c in ")}":
            depth -= 1
            if depth < 0:
                return None
        elif c == "#" and (not current or current[-1][-1:].isspace()) and depth == 0:
            while i < n and line[i] != "\n":  # a comment, to the end of its line
                i += 1
            continue
        elif c == "<" and line.startswith("<<", i) and not line.startswith("<<<", i):
            return None  # a here-document's body follows on later lines
        elif depth == 0 and (op := _operator_at(line, i)):
            parts.append(("".join(current).strip(), op))
            current = []
            i += len(op)
            continue
        current.append(c)
        i += 1
    if quote or depth:
        return None
    parts.append(("".join(current).strip(), ""))
    return [(text, op) for text, op in parts if text]


def _operator_at(line: str, i: int) -> str:
    c = line[i]
    if c in ";\n":
        return ";"
    if line.startswith("&&", i) or line.startswith("||", i):
        return line[i : i + 2]
    if c == "&":
        before, after = line[i - 1 : i], line[i + 1 : i + 2]
        if before in ("<", ">", "|") or after == ">":  # 2>&1, >&2, &> file: redirections; |& is a pipe
            return ""
        return "&"
    return ""


def _program(part: str, shell: str) -> str | None:
    """The basename of the program a part starts with (after VAR=value and fish's and/or), if it can be read."""
    try:
        words = shlex.split(part, comments=False)
    except ValueError:
        return None
    while words and ("=" in words[0] and not words[0].startswith("=") and words[0].split("=")[0].isidentifier()):
        words.pop(0)
    if shell == "fish" and words and words[0] in ("and", "or"):
        words.pop(0)
    return os.path.basename(words[0]) if words else None


def decide(line: str, status: int, shell: str) -> SameLine | Refused | None:
    """What qfix should fix, given the line it runs on: None when qfix starts the line (the shell's record
    of the line before is the one), the one command before it, or a refusal saying why."""
    parts = split_list(line)
    if parts is None:
        return Refused("cannot tell which command on this line failed")
    at = next((k for k, (text, _) in enumerate(parts) if _program(text, shell) == "qfix"), None)
    if at == 0:
        return None
    if at is None:  # `time qfix`, `if …; then qfix; fi`, or an alias of the user's
        return Refused("qfix runs inside a compound command on this line and cannot tell which part failed") \
            if len(parts) > 1 else None
    if at > 1:
        commands = ", ".join(f"`{text}`" for text, _ in parts[:at])
        return Refused(f"qfix is on the same line as several commands ({commands}) and cannot tell which one failed")
    command, operator = parts[0]
    if operator == "&":
        return Refused(f"`{command}` runs in the background: its exit status is not known yet")
    if shell == "fish" and command.split(None, 1)[0] in ("and", "or"):
        command = command.split(None, 1)[1]
    return SameLine(command=command, exit_code=status)


def from_environment() -> SameLine | Refused | None:
    """The decision for the line the qfix shell function says it runs on (None without one)."""
    line, status = os.environ.get("QFIX_LINE", ""), os.environ.get("QFIX_LINE_STATUS", "")
    if not line.strip() or not status.isdigit():
        return None
    return decide(line, int(status), os.environ.get("QFIX_SHELL", "bash"))
