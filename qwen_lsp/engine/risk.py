"""Risk labels for shell commands the model suggests. Nothing here runs a command:
the label decides how loudly the editor or `qfix` asks before the user runs it.

The command is parsed with a real shell parser (bashlex), so what actually runs is
judged: every command of a list or pipeline, inside `$(...)`, `<(...)` and `sh -c`,
behind wrappers (`env`, `sudo`, `xargs`, `nice`, `timeout`, `find -exec`). A command
we do not know is never read-only, and one we cannot parse is judged conservatively.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from qwen_lsp.types import Risk, ShellSuggestion

if TYPE_CHECKING:
    import bashlex

_ORDER = [Risk.read_only, Risk.modifies_files, Risk.network, Risk.destructive]

_READ_ONLY = {
    "ls", "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "find", "which", "type", "echo",
    "printf", "pwd", "env", "printenv", "wc", "diff", "stat", "file", "tree", "du", "df", "ps", "whoami", "id",
    "uname", "true", "false", "date", "hostname", "test", "[", "realpath", "readlink", "basename", "dirname",
}
_READ_ONLY_SUB = {
    "git": {"status", "log", "diff", "show", "blame", "rev-parse", "ls-files", "shortlog", "describe", "grep"},
    "pip": {"list", "show", "freeze", "check"},
    "npm": {"ls", "list", "view"},
    "cargo": {"tree", "metadata"},
}
_NETWORK = {
    "curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "telnet", "ftp", "apt", "apt-get", "brew", "yum",
    "dnf", "pacman", "pipx", "uv", "npx",
}
_NETWORK_SUB = {
    "git": {"clone", "pull", "fetch", "push", "submodule"},
    "pip": {"install", "download"},
    "npm": {"install", "i", "ci", "add", "update", "publish"},
    "yarn": {"add", "install"},
    "pnpm": {"add", "install"},
    "cargo": {"install", "add", "update", "fetch", "publish"},
    "go": {"get", "install"},
    "poetry": {"add", "install", "update"},
}
_DESTROYS = {
    "shred": "shred overwrites files beyond recovery",
    "dd": "dd writes raw bytes to a file or device",
    "wipefs": "wipefs erases filesystem signatures",
    "mkswap": "mkswap formats a device",
    "fdisk": "fdisk rewrites partition tables",
    "sfdisk": "sfdisk rewrites partition tables",
    "parted": "parted rewrites partition tables",
    "truncate": "truncate cuts files short",
    "srm": "srm deletes files beyond recovery",
    "unlink": "unlink deletes a file for good",
    "rmdir": "rmdir deletes directories",
    "reboot": "reboots the machine", "shutdown": "shuts the machine down", "poweroff": "powers the machine off",
    "halt": "halts the machine", "killall": "kills processes by name", "pkill": "kills processes by pattern",
}
_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "busybox"}
_INTERPRETERS = _SHELLS | {"python", "python3", "perl", "ruby", "node", "php", "lua", "osascript"}
_DISK = re.compile(r"^/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk|md|dm-|mapper/)")
_HARMLESS_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"}

# Wrappers that run the rest of their arguments as a command: options that take a
# value (so the value is not mistaken for the command), and positional arguments
# that come before the command.
_WRAPPERS: dict[str, tuple[set[str], int]] = {
    "env": ({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}, 0),
    "sudo": ({"-u", "--user", "-g", "--group", "-C", "-D", "--chdir", "-h", "--host", "-p", "--prompt",
              "-r", "--role", "-t", "--type", "-T", "--command-timeout", "-U", "--other-user"}, 0),
    "doas": ({"-u", "-C"}, 0),
    "nice": ({"-n", "--adjustment"}, 0),
    "ionice": ({"-c", "--class", "-n", "--classdata", "-p", "--pid"}, 0),
    "nohup": (set(), 0),
    "time": ({"-f", "--format", "-o", "--output"}, 0),
    "command": (set(), 0),
    "builtin": (set(), 0),
    "exec": ({"-a"}, 0),
    "setsid": (set(), 0),
    "stdbuf": ({"-i", "-o", "-e"}, 0),
    "timeout": ({"-s", "--signal", "-k", "--kill-after"}, 1),
    "chrt": (set(), 1),
    "taskset": (set(), 1),
    "flock": ({"-w", "--timeout", "-E", "--conflict-exit-code"}, 1),
    "watch": ({"-n", "--interval", "-d", "--differences"}, 0),
    "xargs": ({"-I", "-i", "-n", "--max-args", "-P", "--max-procs", "-d", "--delimiter", "-L", "--max-lines",
               "-s", "--max-chars", "-E", "-e", "--eof", "-a", "--arg-file"}, 0),
    "strace": ({"-e", "-o", "-p", "-s", "-u"}, 0),
    "unbuffer": (set(), 0),
}
_GIT_GLOBAL_VALUE = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"}
_GIT_COMMAND_CONFIG = re.compile(
    r"^(core\.(pager|editor|sshcommand|fsmonitor|hookspath|askpass|gitproxy)|alias\.|pager\.|diff\.external|"
    r"[^=]*\.(command|cmd|textconv|clean|smudge|process)\b|credential\.helper|gpg\.program|sequence\.editor)",
    re.IGNORECASE,
)


_TEST_RUNNERS = [
    ["pytest"], ["python", "-m", "pytest"], ["python3", "-m", "pytest"], ["python", "-m", "unittest"],
    ["python3", "-m", "unittest"], ["cargo", "test"], ["cargo", "check"], ["cargo", "build"], ["go", "test"],
    ["go", "vet"], ["go", "build"], ["npm", "test"], ["npx", "tsc"], ["tsc"], ["mypy"], ["ruff", "check"],
    ["flake8"], ["node", "--test"], ["make", "test"], ["make", "check"],
]
_SHELL_META = re.compile(r"[;&|<>`$(){}\n]")


@dataclass
class _Verdict:
    risk: Risk = Risk.read_only
    dangers: list[str] = field(default_factory=list)

    def add(self, risk: Risk, why: str | None = None) -> None:
        self.risk = max(self.risk, risk, key=_ORDER.index)
        if why and why not in self.dangers:
            self.dangers.append(why)

    def merge(self, other: _Verdict) -> None:
        self.add(other.risk)
        for why in other.dangers:
            self.add(other.risk, why)


def load_parser() -> None:
    """Import bashlex, whose vendored yacc rebuilds its LALR tables on every import (~0.3 s of CPU): the
    warm-ups call this in the background, so the first command a fix classifies does not wait for it."""
    import bashlex  # noqa: F401


def classify(command: str) -> tuple[Risk, list[str]]:
    """The command's risk and, for risky ones, the reasons to say out loud."""
    verdict = _Verdict()
    _judge_script(command, verdict, depth=0)
    return verdict.risk, verdict.dangers


def _judge_script(script: str, verdict: _Verdict, depth: int) -> None:
    if depth > 4:  # sh -c "sh -c \"...\"" nested this deep is itself a red flag
        verdict.add(Risk.destructive, "nests shells too deeply to check")
        return
    # Imported only when a command is classified: bashlex builds its parser tables at import
    # (~0.2 s), which every fix would otherwise pay before its first request.
    import bashlex

    try:
        trees = bashlex.parse(script)
    except Exception:  # noqa: BLE001 - bashlex raises several types, incl. NotImplementedError
        _judge_unparsed(script, verdict, depth)
        return
    for tree in trees:
        _walk(tree, verdict, depth, piped=None)


def _judge_unparsed(script: str, verdict: _Verdict, depth: int) -> None:
    """Syntax bashlex lacks (`case`, `[[`, `$((`): split at operators with shlex and judge each
    piece; never read-only, since part of the command went unseen."""
    verdict.add(Risk.modifies_files, "the command could not be fully parsed; read it before running it")
    lexer = shlex.shlex(script, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        verdict.add(Risk.destructive, "unbalanced quotes hide what would run")
        return
    words: list[str] = []
    piped: str | None = None
    for token in [*tokens, ";"]:
        if token and set(token) <= set(";&|()<>"):
            if words:
                _judge_words([w for w in words if w not in ("[[", "]]", "then", "do", "fi", "done", "esac")],
                             verdict, depth, piped=piped)
            if ">" in token and token.count(">") <= 2:
                verdict.add(Risk.modifies_files)
            piped, words = ("output" if "|" in token and "||" not in token else None), []
        else:
            words.append(token)


def _walk(node: bashlex.ast.node, verdict: _Verdict, depth: int, piped: str | None) -> None:
    """`piped`: what the command reads on stdin from a pipe ("output", "a download"), or None."""
    kind = node.kind
    if kind == "pipeline":
        fed = piped
        for part in (p for p in node.parts if p.kind not in ("pipe", "reservedword")):
            own = _Verdict()
            _walk(part, own, depth, piped=fed)
            verdict.merge(own)
            fed = "a download" if own.risk == Risk.network or fed == "a download" else "output"
        return
    if kind == "command":
        _judge_command(node, verdict, depth, piped)
        return
    for child in _children(node):
        _walk(child, verdict, depth, piped)


def _children(node: bashlex.ast.node) -> Iterator[bashlex.ast.node]:
    import bashlex  # already loaded by _judge_script

    for attr in ("parts", "list"):
        yield from getattr(node, attr, None) or []
    for attr in ("command",):
        child = getattr(node, attr, None)
        if isinstance(child, bashlex.ast.node):
            yield child


def _judge_command(node: bashlex.ast.node, verdict: _Verdict, depth: int, piped: str | None) -> None:
    words: list[str] = []
    computed_name = substituted = False
    for part in node.parts:
        for sub in _substitutions(part):
            substituted = substituted or part.kind == "word"
            _walk(sub, verdict, depth, piped=None)
        if part.kind == "word":
            if not words and any(p.kind in ("commandsubstitution", "parameter") for p in part.parts or []):
                computed_name = True
            if any(p.kind == "processsubstitution" for p in part.parts or []):
                words.append("<(...)")
            else:
                words.append(part.word)
        elif part.kind == "redirect":
            _judge_redirect(part, verdict, words)
    if computed_name:
        verdict.add(Risk.destructive, "the program to run is only known at run time")
    emptied = [r.output.word for r in node.parts if r.kind == "redirect" and r.type in (">", ">|")
               and hasattr(r.output, "word") and r.output.word not in _HARMLESS_TARGETS]
    if emptied and [w for w in words if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)] in ([], [":"], ["true"]):
        verdict.add(Risk.destructive, f"`> {emptied[0]}` with no command empties the file, as truncate -s 0 does")
    own = _Verdict()
    _judge_words(words, own, depth, piped=piped)
    if substituted and own.risk != Risk.read_only:  # `rm $(...)`: which files is decided out of sight
        own.add(Risk.destructive, "command substitution decides its arguments at run time")
    verdict.merge(own)


def _substitutions(node: bashlex.ast.node) -> Iterator[bashlex.ast.node]:
    """Commands inside `$(...)`, backticks and `<(...)`/`>(...)`, at any depth of a word."""
    import bashlex  # already loaded by _judge_script

    for part in getattr(node, "parts", None) or []:
        if part.kind in ("commandsubstitution", "processsubstitution"):
            yield part.command
        else:
            yield from _substitutions(part)
    for attr in ("output",):
        child = getattr(node, attr, None)
        if isinstance(child, bashlex.ast.node):
            yield from _substitutions(child)


def _judge_redirect(redirect: bashlex.ast.node, verdict: _Verdict, words: list[str]) -> None:
    import bashlex  # already loaded by _judge_script

    kind = redirect.type
    heredoc = getattr(redirect, "heredoc", None)
    if heredoc is not None and words and _program(words[0]) in _INTERPRETERS:
        verdict.add(Risk.destructive, f"{_program(words[0])} runs the here-document as a script")
    if ">" not in kind or not isinstance(redirect.output, bashlex.ast.node):
        return  # input, or a descriptor copy like 2>&1
    target = redirect.output.word
    if target in _HARMLESS_TARGETS:
        return
    if _DISK.match(target):
        verdict.add(Risk.destructive, "writes to a disk device")
    verdict.add(Risk.modifies_files)


def _program(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _judge_words(words: list[str], verdict: _Verdict, depth: int, *, piped: str | None) -> None:
    """One simple command, given as its words (after quote removal)."""
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]  # leading VAR=value assignments
    if not words:
        return
    prog, args = _program(words[0]), words[1:]
    if prog in ("sudo", "doas"):
        verdict.add(Risk.destructive, "runs with root privileges")
    if prog in _WRAPPERS:
        inner = _unwrap(prog, args, verdict, depth)
        if inner is None:
            return _judge_wrapper_alone(prog, verdict)
        return _judge_words(inner, verdict, depth, piped=piped or ("output" if prog == "xargs" else None))
    if prog == "eval":
        return _judge_script(" ".join(args), verdict, depth + 1)
    if prog in ("python", "python3") and args[:2] == ["-m", "pip"]:
        prog, args = "pip", args[2:]
    elif prog in _INTERPRETERS:
        return _judge_interpreter(prog, args, verdict, depth, piped)
    if prog in (".", "source"):
        return verdict.add(Risk.modifies_files, f"{prog} runs a script in the current shell")
    if prog == "find":
        return _judge_find(args, verdict, depth)
    if prog == "git":
        return _judge_git(args, verdict)
    if prog == "rm":
        forced = any(a in ("--recursive", "--force") or re.match(r"^-[a-zA-Z]*[rRf]", a) for a in args)
        return verdict.add(Risk.destructive, "rm with -r/-f deletes files for good" if forced else "rm deletes files for good")
    if prog in ("chmod", "chown", "chgrp") and any(re.match(r"^(-[a-zA-Z]*R|--recursive)", a) for a in args):
        return verdict.add(Risk.destructive, "recursive permission/owner change")
    if prog.startswith("mkfs"):
        return verdict.add(Risk.destructive, "mkfs formats a filesystem")
    if prog in _DESTROYS:
        return verdict.add(Risk.destructive, _DESTROYS[prog])
    if prog == "crontab" and "-r" in args:
        return verdict.add(Risk.destructive, "crontab -r deletes every scheduled job")
    if prog == "crontab" and any(a == "-" or not a.startswith("-") for a in args):
        return verdict.add(Risk.destructive, "crontab FILE replaces every scheduled job with the file's")
    if prog == "alias":
        for definition in (a.partition("=")[2] for a in args if "=" in a):
            _judge_script(definition, verdict, depth + 1)  # what the name will run from now on
        return verdict.add(Risk.modifies_files)
    if prog == "history" and any(re.match(r"^-[a-zA-Z]*[cd]", a) for a in args):
        return verdict.add(Risk.destructive, "history -c/-d deletes the shell history")
    if prog in ("at", "batch"):
        return verdict.add(Risk.destructive, f"{prog} runs commands later, unseen" + (f" (from {piped})" if piped else ""))
    if prog == "kill" and any(a in ("-1", "0", "-0") for a in _kill_targets(args)):
        return verdict.add(Risk.destructive, "kill -1 (or 0) signals every process of the user (or group)")
    if prog == "rsync" and any(a.startswith(("--delete", "--remove-source-files")) for a in args):
        return verdict.add(Risk.destructive, "rsync --delete deletes files the source lacks")
    sub = args[0] if args else ""
    if prog in _NETWORK or sub in _NETWORK_SUB.get(prog, set()):
        return verdict.add(Risk.network)
    if prog in _READ_ONLY or sub in _READ_ONLY_SUB.get(prog, set()):
        return verdict.add(Risk.read_only)
    verdict.add(Risk.modifies_files)  # unknown: never read-only


def _kill_targets(args: list[str]) -> list[str]:
    """kill's process ids, after its signal (`-9`, `-KILL`, `-s KILL`, `-n 9`)."""
    if args[:1] in (["-s"], ["-n"]):
        return args[2:]
    if args and re.match(r"^-([0-9]+|[A-Z][A-Z0-9+-]*)$", args[0]):
        return args[1:]
    return args


def _unwrap(prog: str, args: list[str], verdict: _Verdict, depth: int) -> list[str] | None:
    """The command a wrapper runs, or None when it runs none (`env` alone prints the environment)."""
    takes_value, positional = _WRAPPERS[prog]
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if prog == "env" and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", arg):
            i += 1
            continue
        if prog == "env" and (arg in ("-S", "--split-string") or arg.startswith("--split-string=")):
            script = args[i + 1] if arg in ("-S", "--split-string") and i + 1 < len(args) else arg.partition("=")[2]
            return shlex.split(script) + args[i + 2:] if script else None
        if arg.startswith("-") and arg != "-":
            i += 2 if arg in takes_value else 1
            continue
        break
    i += positional
    inner = args[i:]
    if prog == "watch" and len(inner) == 1:
        _judge_script(inner[0], verdict, depth + 1)  # watch runs its argument through sh -c
        return []
    if prog == "xargs" and not inner:
        return ["echo"]
    return inner or None


def _judge_wrapper_alone(prog: str, verdict: _Verdict) -> None:
    verdict.add(Risk.read_only if prog in ("env", "time") else Risk.modifies_files)


def _judge_interpreter(prog: str, args: list[str], verdict: _Verdict, depth: int, piped: str | None) -> None:
    """Shells and script interpreters: `-c` code is judged; code from a pipe or a download is not knowable."""
    if prog in _SHELLS:
        for i, arg in enumerate(args):
            if re.match(r"^-[a-zA-Z]*c[a-zA-Z]*$", arg) and i + 1 < len(args):
                return _judge_script(args[i + 1], verdict, depth + 1)
    if "<(...)" in args:
        return verdict.add(Risk.destructive, f"{prog} runs code produced by another command (e.g. a download)")
    script_args = [a for a in args if not a.startswith("-")]
    if piped and (not script_args or "-" in args):
        into = "a shell" if prog in _SHELLS else "an interpreter"
        return verdict.add(Risk.destructive, f"pipes {piped} straight into {into} ({prog}), which runs it as code")
    verdict.add(Risk.modifies_files)  # runs a script or inline code we cannot see into


def _judge_find(args: list[str], verdict: _Verdict, depth: int) -> None:
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-delete":
            verdict.add(Risk.destructive, "find -delete deletes every file it matches")
        elif arg in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+")), len(args))
            _judge_words(args[i + 1:end], verdict, depth, piped=None)
            i = end
        elif arg in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            verdict.add(Risk.modifies_files)
        i += 1
    verdict.add(Risk.read_only)


def _judge_git(args: list[str], verdict: _Verdict) -> None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] in ("-c", "--config-env") and i + 1 < len(args):
            if _GIT_COMMAND_CONFIG.match(args[i + 1]):
                verdict.add(Risk.destructive, f"git -c {args[i + 1].partition('=')[0]} makes git run a command")
            verdict.add(Risk.modifies_files)
        i += 2 if args[i] in _GIT_GLOBAL_VALUE else 1
    sub, rest = (args[i], args[i + 1:]) if i < len(args) else ("", [])
    flags = set(rest)
    short = "".join(a[1:] for a in rest if re.match(r"^-[a-zA-Z]+$", a))
    if sub == "reset" and "--hard" in flags:
        return verdict.add(Risk.destructive, "git reset --hard discards uncommitted work")
    if sub == "clean" and ("f" in short or "--force" in flags):
        return verdict.add(Risk.destructive, "git clean -f deletes untracked files")
    if sub == "push" and (flags & {"--force", "-f", "--force-with-lease", "--mirror", "--delete", "-d"}
                          or "f" in short or any(a.startswith(("+", "--force-with-lease=")) for a in rest)):
        return verdict.add(Risk.destructive, "force-push or remote delete rewrites remote history")
    if sub in ("checkout", "restore", "switch") and (
        flags & {".", "-f", "--force", "--discard-changes", "--worktree", "-W"} or sub == "restore"
    ):
        return verdict.add(Risk.destructive, f"git {sub} discards uncommitted work")
    if sub == "branch":
        if flags & {"-D", "--force"} or ("d" in short and "f" in short) or "D" in short:
            return verdict.add(Risk.destructive, "git branch -D deletes a branch even if it is not merged")
        listing = {"-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--list", "-l", "--show-current",
                   "--merged", "--no-merged", "--contains", "--no-contains", "--sort", "--color", "--no-color"}
        return verdict.add(Risk.read_only if all(a in listing or a.startswith("--format") for a in rest)
                           else Risk.modifies_files)
    if sub == "remote":
        if not rest or rest[0] in ("-v", "--verbose", "show", "get-url"):
            return verdict.add(Risk.read_only)
        if rest[0] in ("set-url", "add", "rename", "remove", "rm"):
            return verdict.add(Risk.destructive, f"git remote {rest[0]} changes where fetch and push go")
        return verdict.add(Risk.modifies_files)
    if sub == "stash" and rest[:1] in (["drop"], ["clear"]):
        return verdict.add(Risk.destructive, f"git stash {rest[0]} deletes stashed work")
    if sub in ("filter-branch", "filter-repo") or (sub == "reflog" and rest[:1] == ["expire"]):
        return verdict.add(Risk.destructive, f"git {sub} rewrites history")
    if sub in ("tag", "update-ref") and flags & {"-d", "--delete"}:
        return verdict.add(Risk.destructive, f"git {sub} -d deletes a ref")
    if sub == "config":
        keys = [a for a in rest if not a.startswith("-")]
        keys = keys[1:] if keys[:1] in (["set"], ["add"]) else keys  # git >= 2.46: `git config set KEY VALUE`
        if keys and len(keys) >= 2 and _GIT_COMMAND_CONFIG.match(keys[0]):
            return verdict.add(Risk.destructive, f"git config {keys[0]} makes git run a command")
    if sub in _NETWORK_SUB["git"]:
        return verdict.add(Risk.network)
    if sub in _READ_ONLY_SUB["git"] and not any(a.startswith(("--output", "--ext-diff")) for a in rest):
        return verdict.add(Risk.read_only)
    verdict.add(Risk.modifies_files)


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
