"""Risk labels for shell commands the model suggests. Nothing here runs a command:
the label decides how loudly the editor or `qfix` asks before the user runs it."""

from __future__ import annotations

import re
import shlex

from qwen_lsp.types import Risk, ShellSuggestion

_ORDER = [Risk.read_only, Risk.modifies_files, Risk.network, Risk.destructive]

_READ_ONLY = {
    "ls", "cat", "head", "tail", "less", "grep", "rg", "find", "which", "type", "echo", "pwd", "env",
    "printenv", "wc", "diff", "stat", "file", "tree", "du", "df", "ps", "whoami", "uname", "true",
}
_READ_ONLY_SUB = {
    "git": {"status", "log", "diff", "show", "blame", "branch", "remote", "rev-parse", "ls-files"},
    "pip": {"list", "show", "freeze", "check"},
    "npm": {"ls", "list", "view"},
    "cargo": {"tree", "metadata"},
}
_NETWORK = {"curl", "wget", "ssh", "scp", "rsync", "apt", "apt-get", "brew", "yum", "dnf", "pipx", "uv"}
_NETWORK_SUB = {
    "git": {"clone", "pull", "fetch", "push"},
    "pip": {"install", "download"},
    "npm": {"install", "i", "ci", "add", "update"},
    "yarn": {"add", "install"},
    "pnpm": {"add", "install"},
    "cargo": {"install", "add", "update", "fetch"},
    "go": {"get", "install"},
    "poetry": {"add", "install", "update"},
}
_DESTRUCTIVE = [
    (re.compile(r"\brm\s+(-[a-zA-Z]*[rRf][a-zA-Z]*\s+)+"), "rm with -r/-f deletes files for good"),
    (re.compile(r"\bgit\s+reset\s+--hard\b"), "git reset --hard discards uncommitted work"),
    (re.compile(r"\bgit\s+clean\s+-[a-zA-Z]*f"), "git clean -f deletes untracked files"),
    (re.compile(r"\bgit\s+push\s+.*(--force|-f)\b"), "force-push rewrites remote history"),
    (re.compile(r"\bgit\s+checkout\s+(--\s+)?\.(\s|$)"), "git checkout . discards uncommitted work"),
    (re.compile(r"\bdd\b"), "dd writes raw bytes to a file or device"),
    (re.compile(r"\bmkfs(\.\w+)?\b"), "mkfs formats a filesystem"),
    (re.compile(r"\bch(mod|own)\s+(-[a-zA-Z]*R|--recursive)"), "recursive permission/owner change"),
    (re.compile(r"\b(curl|wget)\b[^|]*\|\s*(sudo\s+)?(ba|z|da)?sh\b"), "pipes a download straight into a shell"),
    (re.compile(r"\bsudo\b"), "runs with root privileges"),
    (re.compile(r"(^|[^<])>\s*/dev/sd"), "writes to a disk device"),
    (re.compile(r"\$\(|`"), "command substitution runs a hidden command"),
]
_TEST_RUNNERS = [
    ["pytest"], ["python", "-m", "pytest"], ["python3", "-m", "pytest"], ["python", "-m", "unittest"],
    ["python3", "-m", "unittest"], ["cargo", "test"], ["cargo", "check"], ["cargo", "build"], ["go", "test"],
    ["go", "vet"], ["go", "build"], ["npm", "test"], ["npx", "tsc"], ["tsc"], ["mypy"], ["ruff", "check"],
    ["flake8"], ["node", "--test"], ["make", "test"], ["make", "check"],
]
_SHELL_META = re.compile(r"[;&|<>`$(){}\n]")


def classify(command: str) -> tuple[Risk, list[str]]:
    """The command's risk and, for risky ones, the reasons to say out loud."""
    dangers = [why for pattern, why in _DESTRUCTIVE if pattern.search(command)]
    risk = Risk.destructive if dangers else Risk.read_only
    for part in re.split(r"&&|\|\||;|\|", command):
        risk = max(risk, _simple_risk(part.strip()), key=_ORDER.index)
    if re.search(r"(^|[^>&0-9])>{1,2}\s*[^&\s]", command):
        risk = max(risk, Risk.modifies_files, key=_ORDER.index)
    return risk, dangers


def _simple_risk(command: str) -> Risk:
    try:
        words = shlex.split(command)
    except ValueError:
        return Risk.modifies_files
    while words and "=" in words[0] and not words[0].startswith("="):
        words = words[1:]  # leading VAR=value assignments
    if not words:
        return Risk.read_only
    prog, sub = words[0].rsplit("/", 1)[-1], words[1] if len(words) > 1 else ""
    if prog in ("python", "python3") and words[1:3] == ["-m", "pip"]:
        prog, sub = "pip", words[3] if len(words) > 3 else ""
    if prog in _NETWORK or sub in _NETWORK_SUB.get(prog, set()):
        return Risk.network
    if prog in _READ_ONLY and not (prog == "find" and ("-delete" in words or "-exec" in words)):
        return Risk.read_only
    if sub in _READ_ONLY_SUB.get(prog, set()):
        return Risk.read_only
    return Risk.modifies_files


def suggestion(command: str, reason: str) -> ShellSuggestion:
    risk, dangers = classify(command)
    return ShellSuggestion(command=command, reason=reason, risk=risk, dangers=dangers)


def is_test_command(command: str) -> bool:
    """A plain test/build/type-check invocation, safe to run in a sandbox copy."""
    if _SHELL_META.search(command):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return any(words[: len(prefix)] == prefix for prefix in _TEST_RUNNERS)
