"""Printed paths -> absolute and workspace-relative paths; library detection; make directories."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote

from .make_shell import MAKE_DIR
from .model import Raw

_LIBRARY_RE = re.compile(
    r"(^|/)(site-packages|dist-packages|node_modules|\.cargo/registry|\.cargo/git|\.rustup|pkg/mod|\.m2/repository)(/|$)"
    r"|^/rustc/|^/usr/(lib|include|local/lib|local/include|share)/|/lib/python\d[\d.]*/|/go[\d.-]*/src/|^/usr/local/go/"
)


class Resolver:
    """Turns printed paths into absolute ones and workspace-relative ones. Holds per-call caches only."""

    def __init__(self, cwd: Path, workspace: Path) -> None:
        self.workspace = Path(os.path.abspath(workspace))
        self.cwd = Path(os.path.abspath(self.workspace / cwd))
        self.real_ws = Path(os.path.realpath(self.workspace))
        self._by_name: dict[str, list[Path]] | None = None

    def _files_named(self, name: str) -> list[Path]:
        if self._by_name is None:
            self._by_name = {}
            skip = {"node_modules", "target", "build", "dist", "out", "__pycache__", "venv"}
            count = 0
            for root, dirs, files in os.walk(self.workspace):
                dirs[:] = [d for d in dirs if not d.startswith(".") and d not in skip]
                for f in files:
                    if f.endswith((".java", ".kt", ".scala", ".groovy", ".kts")):
                        self._by_name.setdefault(f, []).append(Path(root) / f)
                count += len(files)
                if count > 200_000:  # a pathological workspace: give up on the search, not on the parse
                    break
        return self._by_name.get(name, [])

    def relative(self, p: Path) -> str | None:
        for base, cand in ((self.workspace, p), (self.real_ws, Path(os.path.realpath(p)))):
            try:
                rel = cand.relative_to(base)
            except ValueError:
                continue
            return rel.as_posix() if str(rel) != "." else None
        return None

    def resolve(self, raw: Raw, cwd: Path) -> tuple[str, bool, str | None]:
        printed = raw.path
        if printed.startswith("file://"):
            printed = unquote(printed[len("file://") :])
        if printed.startswith(("<", "node:", "internal/")) or printed in {"native", "[eval]"}:
            return printed, True, None
        if raw.java_class is not None:
            return self._resolve_jvm(raw, printed)
        p = Path(printed.replace("\\", "/")) if not re.match(r"^[A-Za-z]:[\\/]", printed) else Path(printed)
        if not p.is_absolute():
            candidates = [cwd / p, self.workspace / p]
            p = next((c for c in candidates if c.is_file()), candidates[0])
        p = Path(os.path.normpath(p))
        library = raw.library_hint or bool(_LIBRARY_RE.search(p.as_posix()))
        rel = None if library else self.relative(p)
        return str(p), library, rel

    def _resolve_jvm(self, raw: Raw, printed: str) -> tuple[str, bool, str | None]:
        if raw.library_hint:
            return printed, True, None
        cls = raw.java_class or ""
        package = cls.rsplit(".", 1)[0] if "." in cls else ""
        suffix = "/".join([*package.split("."), printed]) if package else printed
        found = self._files_named(printed)
        match = [f for f in found if f.as_posix().endswith("/" + suffix)] or (found if len(found) == 1 else [])
        if not match:
            return printed, False, None
        rel = self.relative(match[0])
        return str(match[0]), False, rel


def column_of(raw: Raw, abs_path: str) -> int | None:
    if raw.column is not None or raw.snippet is None or raw.snippet_col is None:
        return raw.column
    col = raw.snippet_col + 1
    try:
        with open(abs_path, encoding="utf-8", errors="replace") as fh:
            for n, text in enumerate(fh, 1):
                if n == raw.line:
                    found = text.find(raw.snippet.strip())
                    return col + (found if found >= 0 else len(text) - len(text.lstrip()))
    except OSError:
        pass
    return col


def make_dirs(lines: list[str], cwd: Path) -> list[Path]:
    """The working directory in force at each line, following make's Entering/Leaving directory."""
    stack = [cwd]
    out = []
    for ln in lines:
        if m := MAKE_DIR.match(ln):
            if m["what"] == "Entering":
                stack.append(cwd / m["dir"])
            elif len(stack) > 1:
                stack.pop()
        out.append(stack[-1])
    return out
