"""Files that something runs later, without the user reading them: pure classification.

Two kinds, told apart by who decides:

- **what git runs**, read from git's own configuration (`git config --list --show-origin`,
  includes followed): the `core.hooksPath` directory, files pulled in by `include.path` /
  `includeIf.*.path`, a `core.fsmonitor` hook, scripts named by filter/diff/merge drivers and
  other command-valued keys, and `.gitmodules`. These are protected like `.git/` itself
  (`executed_paths`): the model may never write them.
- **runs later**: files some other tool executes on its own: hook managers' configs
  (pre-commit, husky, lefthook, overcommit), editor tasks and settings, CI workflows,
  `.envrc`, `.npmrc`, `.cargo/config.toml`, `sitecustomize.py`, a Makefile or package.json
  scripts that are not what the fix is about (`runs_later_reason`). They may be written, but
  only with the user's explicit consent: every front end lists them and `qfix --yes` refuses.

No I/O here: the git query is `qwen_lsp.gitio.config_entries`, run at the edge.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from qwen_lsp.types import FileChange, Task

GITMODULES_WHY = "git clones and checks out what it names"


@dataclass(frozen=True)
class ConfigEntry:
    """One line of `git config --list --show-origin`: where it came from, its key (lower-case
    section and name), its value."""

    origin: str  # "file:.git/config", "file:/home/u/.gitconfig", "command line:"
    key: str
    value: str


# -- what git runs -------------------------------------------------------------------------------

# Keys whose value is a command git runs through the shell; their script arguments are protected.
_COMMAND_KEY = re.compile(
    r"^(core\.(fsmonitor|editor|pager|sshcommand|askpass|gitproxy)|sequence\.editor|gpg(\.[^.]+)?\.program|"
    r"credential(\..+)?\.helper|diff\.external|pager\..+|alias\..+|filter\..+\.(clean|smudge|process)|"
    r"diff\..+\.(textconv|command)|merge\..+\.driver|(diff|merge)tool\..+\.cmd|uploadpack\.packobjectshook|"
    r"remote\..+\.(uploadpack|receivepack)|submodule\..+\.update|core\.hookspath)$"
)
_BOOLEAN = {"true", "false", "yes", "no", "on", "off", "1", "0", ""}


def executed_paths(root: str, entries: Iterable[ConfigEntry], top: str | None = None) -> dict[str, str]:
    """Workspace-relative paths (files or folders) that git runs or reads commands from, with why.
    `root`: the workspace's absolute POSIX path, where git was asked (origins are relative to it);
    `top`: the work tree's top (default `root`), which relative hook and driver paths are relative to
    (git runs them there); include paths are relative to the including file's folder."""
    top = top or root
    found: dict[str, str] = {".gitmodules": GITMODULES_WHY}
    for entry in entries:
        key, value = entry.key.lower(), entry.value.strip()
        if key == "include.path" or (key.startswith("includeif.") and key.endswith(".path")):
            base = _origin_dir(root, entry.origin)
            target = _inside(root, value, base)
            if target:
                found.setdefault(target, f"git reads it as configuration (included by {_origin_name(entry.origin)})")
            continue
        if key == "core.hookspath":
            target = _inside(root, value, top)
            if target:
                found.setdefault(target, "git runs the hooks in it (core.hooksPath)")
            continue
        if not _COMMAND_KEY.match(key) or value.lower() in _BOOLEAN:
            continue
        if key.startswith(("alias.", "submodule.")) and not value.startswith("!"):
            continue  # a plain alias or update mode runs no program
        for target in _script_arguments(root, top, value.removeprefix("!")):
            found.setdefault(target, f"git runs it ({key})")
    return found


def _script_arguments(root: str, top: str, command: str) -> list[str]:
    """Workspace files a command line names: its program if given as a path, and its arguments."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    out = []
    for i, word in enumerate(words):
        if word.startswith("-") or "%" in word or "=" in word or "$" in word:
            continue
        if "/" not in word and (i == 0 or "." not in word.strip(".")):
            continue  # a program found on PATH, or a word that names no file (`git-lfs clean`)
        target = _inside(root, word, top)
        if target:
            out.append(target)
    return out


def _inside(root: str, value: str, base: str) -> str | None:
    """`value` (absolute, ~-relative or relative to `base`) as a path inside `root`, or None."""
    if not value or value.startswith("~") or "\0" in value:
        return None  # ~/...: the user's home, never the workspace's business
    full = posixpath.normpath(value if value.startswith("/") else posixpath.join(base, value))
    if full == root or not full.startswith(root.rstrip("/") + "/"):
        return None
    return full[len(root.rstrip("/")) + 1:]


def _origin_dir(root: str, origin: str) -> str:
    path = origin.removeprefix("file:")
    return posixpath.dirname(path if path.startswith("/") else posixpath.join(root, path))


def _origin_name(origin: str) -> str:
    return origin.removeprefix("file:") or origin


def git_reason(rel: str, executed: dict[str, str]) -> str | None:
    """Why git would run `rel` (it is, or is inside, one of `executed`), or None."""
    for path, why in executed.items():
        if rel == path or rel.startswith(path.rstrip("/") + "/"):
            return f"{rel}: {why}" if rel == path else f"{rel} is inside {path}/ ({why})"
    return None


# -- runs later ----------------------------------------------------------------------------------

_DIR_PREFIXES: dict[str, str] = {
    ".husky/": "husky runs it as a git hook",
    ".githooks/": "a git hooks folder",
    ".git-hooks/": "a git hooks folder",
    ".lefthook/": "lefthook runs it as a git hook",
    ".github/workflows/": "CI runs it on push",
    ".github/actions/": "CI runs it as an action",
    ".gitlab/ci/": "CI runs it",
    ".circleci/": "CI runs it",
    ".buildkite/": "CI runs it",
    ".woodpecker/": "CI runs it",
    ".azure-pipelines/": "CI runs it",
    ".devcontainer/": "the dev container runs its commands on creation",
    ".idea/": "the IDE runs its run configurations, tools and file watchers",
    ".run/": "the IDE runs these run configurations",
}
_NAMES: dict[str, str] = {
    ".pre-commit-config.yaml": "pre-commit runs its hooks on git commit",
    ".pre-commit-hooks.yaml": "pre-commit runs the hooks it defines",
    "lefthook.yml": "lefthook runs it on git commands", "lefthook.yaml": "lefthook runs it on git commands",
    ".lefthook.yml": "lefthook runs it on git commands", ".lefthook.yaml": "lefthook runs it on git commands",
    "lefthook-local.yml": "lefthook runs it on git commands",
    ".overcommit.yml": "overcommit runs its hooks on git commands",
    ".gitattributes": "chooses which filter and diff programs git runs",
    ".envrc": "direnv runs it on cd",
    ".npmrc": "npm reads its script shell, node options and registry from it",
    ".yarnrc": "yarn reads its settings and scripts from it",
    ".yarnrc.yml": "yarn runs its yarnPath and plugins",
    ".pnpmfile.cjs": "pnpm runs it on install",
    "sitecustomize.py": "Python runs it at every start",
    "usercustomize.py": "Python runs it at every start",
    ".gitlab-ci.yml": "CI runs it on push",
    ".travis.yml": "CI runs it on push",
    "azure-pipelines.yml": "CI runs it on push",
    "bitbucket-pipelines.yml": "CI runs it on push",
    ".drone.yml": "CI runs it on push",
    ".woodpecker.yml": "CI runs it on push",
    "appveyor.yml": "CI runs it on push", ".appveyor.yml": "CI runs it on push",
    "Jenkinsfile": "CI runs it on push",
    ".exrc": "vim runs it on start (exrc)", ".nvimrc": "Neovim runs it on start (exrc)",
    ".nvim.lua": "Neovim runs it on start (exrc)",
    ".gdbinit": "gdb runs it on start", ".lldbinit": "lldb runs it on start",
    "mise.toml": "mise runs its hooks and tasks", ".mise.toml": "mise runs its hooks and tasks",
}
_PATHS: dict[str, str] = {
    ".vscode/settings.json": "VS Code applies it: settings choose programs, servers and paths",
    ".vscode/tasks.json": "VS Code runs its tasks (some on folder open)",
    ".vscode/launch.json": "VS Code runs its launch configurations",
    ".cargo/config.toml": "cargo runs its runners, wrappers and aliases",
    ".cargo/config": "cargo runs its runners, wrappers and aliases",
}
_MAKEFILES = {"Makefile", "makefile", "GNUmakefile"}


def runs_later_reason(rel: str, before: str | None, after: str | None, subjects: Iterable[str] = ()) -> str | None:
    """Why changing `rel` from `before` to `after` (None: absent) changes something that runs later
    without the user reading it, or None. `subjects`: the files the fix is about (a Makefile the
    failing `make` runs is the subject, not a side effect)."""
    path = PurePosixPath(rel)
    name = path.name
    for prefix, why in _DIR_PREFIXES.items():
        if rel.startswith(prefix):
            return why
    if rel in _PATHS:
        return _PATHS[rel]
    if name in _NAMES:
        return _NAMES[name]
    if name.endswith(".code-workspace"):
        return "VS Code applies its settings and runs its tasks"
    if rel in set(subjects):
        return None
    if name in _MAKEFILES or name.endswith(".mk"):
        return "make runs its recipes"
    if name == "package.json" and _scripts(before) != _scripts(after):
        return "npm runs its scripts, some on install"
    return None


def _scripts(text: str | None) -> object:
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return ("unparsable", text)  # differs from any parsed form: unknown counts as changed
    return data.get("scripts") if isinstance(data, dict) else data


def subjects(task: Task) -> set[str]:
    """The files a fix is about: the task's file, files its command names, and the build file a
    failing `make` or `npm run` reads (in the command's folder)."""
    out = {task.path} if task.path else set()
    if not task.command:
        return out
    try:
        words = shlex.split(task.command)
    except ValueError:
        words = task.command.split()
    cwd = task.cwd or ""
    out |= {posixpath.normpath(posixpath.join(cwd, w)) for w in words[1:] if not w.startswith("-")}
    program = PurePosixPath(words[0]).name if words else ""
    if program in ("make", "gmake"):
        out |= {posixpath.join(cwd, m) for m in _MAKEFILES}
    if program in ("npm", "yarn", "pnpm", "bun"):
        out.add(posixpath.join(cwd, "package.json"))
    return out


@dataclass(frozen=True)
class Listing:
    runs_later: list[str]  # "path (why)"
    not_tracked: list[str]  # paths git ignores


def listing(changes: Iterable[FileChange], about: Iterable[str], ignored: Iterable[str]) -> Listing:
    """What the user must see before these changes are written, and consent to explicitly."""
    changes = list(changes)
    about, ignored = set(about), set(ignored)
    later = []
    for change in changes:
        why = runs_later_reason(change.path, None if change.created else change.original, change.updated, about)
        if why:
            later.append(f"{change.path} ({why})")
    return Listing(later, [c.path for c in changes if c.path in ignored])
