"""One benchmark case: a tiny project with a real failing command, read from `cases/<id>/`.

    case.toml   what fails, what "fixed" means, the hidden check, the known fix, where the bug class comes from
    files/      the project as the user has it
    hidden/     held-out files copied in only after the fix, for the anti-cheat check

Cases are plain files so anyone can add one without touching the runner; see cases/README.md.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

CASES_DIR = Path(__file__).resolve().parent / "cases"
COMMAND_TIMEOUT = 300.0
# Fixed identity and dates: the same case gives the same git history, hence the same prompt, every time.
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost", "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@localhost", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a typo in a case.toml is an error, not a silent default


class Edit(_Strict):
    path: str
    old: str
    new: str


class Reference(_Strict):
    """The known answer: proves the case is solvable, and scripts the test double."""

    edits: list[Edit] = Field(default_factory=list)
    suggest: str | None = None


class HiddenCheck(_Strict):
    """Run by the harness after the fix, never shown to the engine."""

    command: str | None = None  # e.g. a held-out test from hidden/; must pass
    unchanged: list[str] = Field(default_factory=list)  # files the fix must not touch (the tests)


class Case(_Strict):
    id: str
    language: str
    kind: Literal["fix", "suggest"] = "fix"
    bug_class: str
    inspiration: str  # the bug class as real projects report it
    requires: list[str]  # executables on PATH; a missing one skips the case, loudly
    command: str  # fails before the fix; for "fix" cases it must pass after
    cwd: str | None = None  # workspace-relative directory the command runs in
    suggestion: str | None = None  # "suggest" cases: a regex one suggested command must match
    hidden: HiddenCheck = Field(default_factory=HiddenCheck)
    reference: Reference = Field(default_factory=Reference)
    root: Path = Field(exclude=True)

    def missing_tools(self) -> list[str]:
        return [tool for tool in self.requires if shutil.which(tool) is None]

    def suggestion_matches(self, command: str) -> bool:
        return self.suggestion is not None and re.search(self.suggestion, command) is not None


def load_case(root: Path) -> Case:
    data = tomllib.loads((root / "case.toml").read_text(encoding="utf-8"))
    return Case.model_validate({**data, "id": root.name, "root": root})


def load_cases(only: list[str] | None = None, cases_dir: Path = CASES_DIR) -> list[Case]:
    """Every case, or those whose id matches one of `only` (exact id or a glob such as `py-*`)."""
    import fnmatch

    roots = sorted(p for p in cases_dir.iterdir() if (p / "case.toml").is_file())
    if only:
        roots = [p for p in roots if any(fnmatch.fnmatchcase(p.name, pattern) for pattern in only)]
    return [load_case(p) for p in roots]


@dataclass
class Ran:
    exit_code: int
    output: str


def run_command(command: str, cwd: Path, timeout: float = COMMAND_TIMEOUT) -> Ran:
    """Run a case's own command (trusted: it is written in the case), output merged as a terminal shows it."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "NO_COLOR": "1", "CARGO_TERM_COLOR": "never"}
    try:
        done = subprocess.run(command, shell=True, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, errors="replace", timeout=timeout, env=env)
    except subprocess.TimeoutExpired as exc:
        out = exc.output.decode("utf-8", "replace") if isinstance(exc.output, bytes) else (exc.output or "")
        return Ran(124, out + f"\n(timed out after {timeout:.0f}s)")
    return Ran(done.returncode, done.stdout)


def prepare(case: Case, dest: Path) -> Path:
    """A fresh copy of the case's project at `dest`, committed to a new git repository (as a user's
    project would be), so the engine sees the same workspace on every pass."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(case.root / "files", dest)
    env = {**os.environ, **_GIT_ENV}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", f"{case.id}: as reported"]):
        subprocess.run(["git", *args], cwd=dest, env=env, check=True, capture_output=True)
    return dest


def workdir(case: Case, ws: Path) -> Path:
    return ws / case.cwd if case.cwd else ws


def original(case: Case, path: str) -> bytes | None:
    source = case.root / "files" / path
    return source.read_bytes() if source.is_file() else None


def add_hidden_files(case: Case, ws: Path) -> None:
    hidden = case.root / "hidden"
    if hidden.is_dir():
        shutil.copytree(hidden, ws, dirs_exist_ok=True)


def apply_reference(case: Case, ws: Path) -> None:
    """The known fix, applied exactly (the case self-check)."""
    for edit in case.reference.edits:
        target = ws / edit.path
        text = target.read_text(encoding="utf-8")
        if text.count(edit.old) != 1:
            raise ValueError(f"{case.id}: reference edit for {edit.path} matches {text.count(edit.old)} times")
        target.write_text(text.replace(edit.old, edit.new), encoding="utf-8")
