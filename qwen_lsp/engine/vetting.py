"""Vetting what a verification would run, before it runs.

- A plan's verify command (model output) is an allow-listed runner (`risk.is_test_command`);
  here its arguments are checked too: options that name output paths or config files must
  stay inside the workspace, and options that load plugins, programs or arbitrary settings
  are refused outright. Inside the sandbox this is defence in depth; without one it is the rule.
- Files the model created or edited that a runner executes as configuration (conftest.py,
  Makefile, build.rs, package.json scripts...) are named, so the user sees what ran.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path, PurePosixPath

from qwen_lsp.types import FileChange

# Options that load code or set arbitrary configuration: refused whatever their value.
_REFUSED = {
    "pytest": {"-p", "-o", "--override-ini", "--pyargs"},
    "cargo": {"--config", "-Z"},
    "go": {"-exec", "-toolexec", "-overlay", "-modfile", "-C"},
    "npm": {"--script-shell", "--node-options", "--prefix", "-C", "--userconfig", "--globalconfig"},
    "node": {"--require", "-r", "--import", "--loader", "--experimental-loader", "--env-file"},
    "make": {"--eval", "-e", "--environment-overrides"},
    "mypy": {"--plugins", "--python-executable"},
}
# Options whose value is a path: allowed only inside the workspace.
_PATH_OPTIONS = {
    "pytest": {"--junitxml", "--junit-xml", "--basetemp", "--rootdir", "-c", "--config-file", "--confcutdir",
               "--cov-report", "--cov-config", "--cov", "--log-file", "--result-log", "--report-log", "--html",
               "--debug", "--ignore", "--deselect"},
    "cargo": {"--manifest-path", "--target-dir", "--artifact-dir", "--out-dir", "--lockfile-path"},
    "go": {"-o", "-coverprofile", "-cpuprofile", "-memprofile", "-blockprofile", "-mutexprofile", "-trace",
           "-outputdir", "-pkgdir"},
    "npm": {"--cache"},
    "tsc": {"--outDir", "--outFile", "--out", "-p", "--project", "--tsBuildInfoFile", "--declarationDir",
            "--rootDir", "--baseUrl"},
    "node": {"--test-reporter-destination", "--cpu-prof-dir", "--heap-prof-dir", "--diagnostic-dir",
             "--report-directory", "--redirect-warnings"},
    "make": {"-f", "--file", "--makefile", "-C", "--directory", "-I", "--include-dir", "-o", "--old-file",
             "-W", "--what-if", "--new-file", "--assume-new", "--assume-old"},
    "mypy": {"--config-file", "--cache-dir", "--junit-xml", "--html-report", "--txt-report", "--xml-report",
             "--linecount-report", "--cobertura-xml-report", "--lineprecision-report", "--any-exprs-report"},
    "ruff": {"--config", "--cache-dir", "--output-file", "-o"},
    "flake8": {"--config", "--append-config", "--output-file"},
}
_RUNNER_BY_PROGRAM = {"python": "pytest", "python3": "pytest", "pytest": "pytest", "npx": "tsc"}

# Files a runner executes (or reads commands from) when it starts: (pattern on the path, what runs it).
_RUNS = [
    (re.compile(r"(^|/)conftest\.py$"), "pytest imports it"),
    (re.compile(r"(^|/)(pytest\.ini|tox\.ini|setup\.cfg|pyproject\.toml)$"), "test-runner configuration"),
    (re.compile(r"(^|/)(setup\.py|noxfile\.py|sitecustomize\.py|usercustomize\.py)$"), "Python runs it"),
    (re.compile(r"(^|/)(GNUmakefile|[Mm]akefile|[^/]+\.mk)$"), "make runs its recipes"),
    (re.compile(r"(^|/)package\.json$"), "npm runs its scripts"),
    (re.compile(r"(^|/)\.npmrc$"), "npm configuration"),
    (re.compile(r"(^|/)(build\.rs|Cargo\.toml)$"), "cargo builds and runs it"),
    (re.compile(r"(^|/)\.cargo/config(\.toml)?$"), "cargo configuration"),
    (re.compile(r"(^|/)(mypy\.ini|\.mypy\.ini)$"), "mypy loads its plugins"),
    (re.compile(r"(^|/)(jest|vitest|babel)\.config\.[cm]?[jt]s$"), "the JavaScript test runner loads it"),
]
_GO_GENERATE = re.compile(r"^//go:generate\s", re.MULTILINE)


def refusal(command: str, workspace: Path, cwd: str | None = None) -> str | None:
    """Why the runner command `command` may not run as a verification, or None when its
    arguments stay inside `workspace` (relative paths count from `cwd` inside it)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return "it does not parse as a command"
    if not words:
        return "it is empty"
    root = workspace.resolve()
    base = (root / cwd).resolve() if cwd else root
    runner = _runner(words)
    if runner == "make":
        assignment = next((w for w in words[1:] if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)), None)
        if assignment:
            return f"`{assignment}` overrides a make variable (it can replace the shell or a compiler)"
    refused, path_options = _REFUSED.get(runner, set()), _PATH_OPTIONS.get(runner, set())
    for i, word in enumerate(words[1:], 1):
        name, eq, value = word.partition("=")
        if name in refused or word in refused or (runner == "pytest" and word.startswith("-p") and len(word) > 2):
            if not _disables_plugin(words, i):
                return f"{name} loads code or settings chosen by the model"
        shown = word
        if name in path_options and not eq and i + 1 < len(words):
            value, shown = words[i + 1], f"{word} {words[i + 1]}"
        elif name not in path_options:
            value = word  # a positional path (a test file, a directory) must stay inside too
        for candidate in _path_values(name, value):
            if not _inside(candidate, base, root):
                return f"{shown} names a path outside the workspace"
    return None


def runs_during_verification(changes: list[FileChange]) -> list[str]:
    """'conftest.py (pytest imports it)' for each created/edited file that runs as configuration."""
    out = []
    for change in changes:
        why = next((why for pattern, why in _RUNS if pattern.search(change.path)), None)
        if why is None and change.path.endswith(".go") and _new_go_generate(change):
            why = "a new //go:generate line runs a command"
        if why:
            out.append(f"{change.path} ({why})")
    return out


def _runner(words: list[str]) -> str:
    program = PurePosixPath(words[0]).name
    if program in ("python", "python3") and words[1:3] == ["-m", "pytest"]:
        return "pytest"
    return _RUNNER_BY_PROGRAM.get(program, program)


def _disables_plugin(words: list[str], i: int) -> bool:
    """`-p no:NAME` / `-pno:NAME` only switches a plugin off: allowed."""
    word = words[i]
    value = word[2:] if word.startswith("-p") and len(word) > 2 else (words[i + 1] if i + 1 < len(words) else "")
    return word.startswith("-p") and value.startswith("no:")


def _path_values(option: str, value: str) -> list[str]:
    """The path-like parts of an option value: `--cov-report=xml:out.xml` names out.xml."""
    if option == "--cov-report" and ":" in value:
        value = value.split(":", 1)[1]
    looks_like_path = value.startswith(("/", "~", ".")) or "/" in value or ".." in value
    return [value] if value and (looks_like_path or option.startswith("-")) else []


def _inside(value: str, base: Path, root: Path) -> bool:
    if value.startswith("~") or value.startswith("$"):
        return False  # the shell would expand it to somewhere else
    if value.startswith("-"):
        return True  # another option, not a path
    target = (base / value).resolve()  # absolute values replace base; symlinks are followed
    return target == root or root in target.parents


def _new_go_generate(change: FileChange) -> bool:
    return len(_GO_GENERATE.findall(change.updated)) > len(_GO_GENERATE.findall(change.original))
