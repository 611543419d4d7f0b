"""Printed paths -> absolute and workspace-relative paths; library detection; make directories.

The only module of the package that touches the file system (and only to stat
and list the workspace, and to read a line for a caret column)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote

from .make_shell import MAKE_DIR
from .model import Raw

# Installed third-party code, wherever it lives: library even inside the workspace (a venv, node_modules).
_VENDORED_RE = re.compile(
    r"(^|/)(site-packages|dist-packages|node_modules|\.cargo/registry|\.cargo/git|\.rustup|pkg/mod|\.m2/repository|vendor/bundle|gems/[^/]+/gems)(/|$)",
    re.IGNORECASE,
)
# Toolchain sources: library unless the workspace itself is there (a GOPATH project lives in ~/go/src/...).
_TOOLCHAIN_RE = re.compile(
    r"^/rustc/|^/usr/(lib|include|local/lib|local/include|share)/|/lib/python\d[\d.]*/|^/usr/local/go/|/go[\d.-]*/src/"
    r"|^[A-Za-z]:/(Python\d*|Program Files[^/]*)/|/AppData/Local/Programs/",
    re.IGNORECASE,
)
_WINDOWS_ABS = re.compile(r"^[A-Za-z]:[\\/]|^\\\\")
_SKIP_DIRS = {"node_modules", "target", "build", "dist", "out", "__pycache__", "venv", "site-packages"}


def is_library(posix_path: str, in_workspace: bool) -> bool:
    return bool(_VENDORED_RE.search(posix_path)) or (not in_workspace and bool(_TOOLCHAIN_RE.search(posix_path)))


class Resolver:
    """Turns printed paths into absolute ones and workspace-relative ones. Holds per-call caches only."""

    def __init__(self, cwd: Path, workspace: Path) -> None:
        self.workspace = Path(os.path.abspath(workspace))
        self.cwd = Path(os.path.abspath(self.workspace / cwd))
        self.real_ws = Path(os.path.realpath(self.workspace))
        self._by_name: dict[str, list[Path]] | None = None
        self._lines: dict[str, int | None] = {}

    def _files_named(self, name: str) -> list[Path]:
        """Workspace files with this base name (one walk per parse, bounded)."""
        if self._by_name is None:
            self._by_name = {}
            count = 0
            for root, dirs, files in os.walk(self.workspace):
                dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS]
                for f in files:
                    self._by_name.setdefault(f, []).append(Path(root) / f)
                count += len(files)
                if count > 200_000:  # a pathological workspace: give up on the search, not on the parse
                    break
        return self._by_name.get(name, [])

    def line_count(self, path: str) -> int | None:
        if path not in self._lines:
            try:
                with open(path, "rb") as fh:
                    self._lines[path] = sum(1 for _ in fh)
            except OSError:
                self._lines[path] = None
        return self._lines[path]

    def by_suffix(self, printed: str, cwd: Path, hint: str | None = None, line: int = 1) -> Path | None:
        """The workspace file whose path ends with the longest tail of `printed` (or of hint/printed).

        For paths printed relative to something else than the cwd (go test's package
        directory, a container's /app, a Windows checkout, valgrind's base names). The
        file must have the printed line: a same-named file elsewhere is not a match."""
        found = self._by_suffix(printed, cwd, hint)
        return found if found is not None and (self.line_count(str(found)) or 0) >= line else None

    def _by_suffix(self, printed: str, cwd: Path, hint: str | None) -> Path | None:
        parts = [p for p in printed.replace("\\", "/").split("/") if p and p not in (".", "..")]
        if hint:
            parts = [p for p in hint.replace("\\", "/").split("/") if p] + parts
        if not parts:
            return None
        found = self._files_named(parts[-1])
        for k in range(len(parts), 0, -1):
            tail = "/" + "/".join(parts[-k:])
            match = [f for f in found if f.as_posix().endswith(tail)]
            if len(match) == 1:
                return match[0]
            if len(match) > 1:
                under_cwd = [f for f in match if f.is_relative_to(cwd)]
                return under_cwd[0] if len(under_cwd) == 1 else None
        return None

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
        if printed.startswith(("<", "node:")) or printed in {"native", "[eval]", "[C]", "?"}:
            return printed, True, None
        if printed.startswith("internal/") and not (cwd / printed).is_file() and not (self.workspace / printed).is_file():
            return printed, True, None  # old Node's own modules; a Go project's internal/ is user code
        if raw.java_class is not None:
            return self._resolve_jvm(raw, printed)
        posix = printed.replace("\\", "/")
        if _WINDOWS_ABS.match(printed):
            # A Windows path on this host: a library by its shape, else the workspace file it ends with.
            if is_library(posix, in_workspace=False) or raw.library_hint:
                return printed, True, None
            found = self.by_suffix(posix[2:], cwd, line=raw.line)
            return (str(found), False, self.relative(found)) if found else (printed, False, None)
        p = Path(posix)
        if not p.is_absolute():
            p = next((c for c in (cwd / p, self.workspace / p) if c.is_file()), None) or self.by_suffix(posix, cwd, raw.dir_hint, raw.line) or cwd / p
        elif not p.is_file() and not self.relative(p) and not raw.library_hint and not is_library(p.as_posix(), False):
            p = self.by_suffix(posix, cwd, line=raw.line) or p  # an absolute path from another machine or a container
        p = Path(os.path.normpath(p))
        rel = self.relative(p)
        library = raw.library_hint or is_library(p.as_posix(), in_workspace=rel is not None)
        if library or (rel is not None and not p.is_file()):
            rel = None  # never point a user at a file that is not there
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

    def lookup(self, printed: str, cwd: Path) -> tuple[str, int] | None:
        """(absolute path, line count) of a real workspace file the printed path names, else None.

        The generic location finder's arbiter: a candidate that names no real file,
        or a line past its end, is not a location."""
        raw = Raw(at=0, path=printed, line=1)
        path, _library, rel = self.resolve(raw, cwd)
        if rel is None:
            return None
        count = self.line_count(path)
        return (path, count) if count is not None else None


    def source_line(self, printed: str, n: int, cwd: Path) -> str | None:
        """Line n of the workspace file a printed path names (the locator reads the code a message names)."""
        found = self.lookup(printed, cwd)
        if found is None or os.path.getsize(found[0]) > 2_000_000:
            return None
        try:
            with open(found[0], encoding="utf-8", errors="replace") as fh:
                for k, text in enumerate(fh, 1):
                    if k == n:
                        return text
        except OSError:
            pass
        return None


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
