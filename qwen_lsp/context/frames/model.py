"""Shared shapes: the public Frame, the raw traces recognisers return, path and severity helpers."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from pydantic import BaseModel

Severity = Literal["error", "warning", "info"]


class Frame(BaseModel):
    path: str  # absolute when it could be made absolute, else as printed ("<frozen ...>", "Main.java")
    line: int  # 1-based
    column: int | None = None  # 1-based
    function: str | None = None
    message: str
    severity: Severity
    library: bool = False  # site-packages, node_modules, stdlib, toolchain sources
    resolved: str | None = None  # workspace-relative POSIX path for a user file inside the workspace
    trace: int = 0  # frames of one stack trace (or one diagnostic) share this number
    guessed: bool = False  # found by the generic location finder, no recogniser knew the format


@dataclass
class Raw:
    at: int  # index of the output line it came from (for the make directory stack)
    path: str
    line: int
    column: int | None = None
    function: str | None = None
    message: str = ""
    severity: Severity = "error"
    library_hint: bool = False
    java_class: str | None = None  # fully qualified class, to find Main.java by package
    snippet: str | None = None  # code line as printed, for a caret column relative to it
    snippet_col: int | None = None  # 0-based caret offset into snippet.strip()
    related: bool = False  # a secondary stack (Suppressed:, "freed by", "previous write"): never the place to fix
    dir_hint: str | None = None  # a directory or import path the printed path is relative to (go test packages)


@dataclass
class Trace:
    start: int
    frames: list[Raw]
    stack: bool = True  # a call stack: only its deepest frames are errors, callers are info
    sections: list[list[Raw]] = field(default_factory=list)  # chained exceptions
    guessed: bool = False  # from the generic location finder
    end: int | None = None  # last line of a report whose body may quote another tool's traceback
    severity: Severity = "error"  # of its deepest frames: a stack printed with a warning ("(node:1) DeprecationWarning") is "warning"


Parser = Callable[[list[str], set[int]], list[Trace]]

# A path as tools print it: no spaces, no quotes, no parentheses.
PATH = r"(?:[A-Za-z]:[\\/])?[^\s:()'\"<>,|*]+"
KNOWN_NAMES = {"Makefile", "makefile", "GNUmakefile", "Dockerfile", "Rakefile", "Justfile", "justfile", "BUILD", "WORKSPACE"}
SHELLS = {"bash", "sh", "zsh", "dash", "ksh", "-bash", "fish"}


def plausible_path(p: str) -> bool:
    if p.isdigit() or "://" in p:
        return False
    name = PurePosixPath(p.replace("\\", "/")).name
    return "/" in p or "\\" in p or name in KNOWN_NAMES or bool(re.search(r"\.[A-Za-z][\w+-]*$", name))


def lint_severity(code: str) -> Severity:
    # Syntax errors and undefined names break the program; the rest is style.
    if len(code) == 5 and code[0] in "EF" and code[1:].isdigit():  # pylint: E/F are errors, C/R/W/I are not
        return "error"
    if code.startswith(("E9", "F82", "F63", "F7")) or code in {"F821", "F822", "F823"}:
        return "error"
    return "warning"
