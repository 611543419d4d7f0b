"""A small package whose bug sits two calls below its failing test, reached through an import of a
module, a method called on self, a constructor, a decorator and `partial(f, ...)`; with the real
pytest output of the failure. Shared by the callee, changes and prompt tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.context.helpers import git, write

UTIL = '''from functools import partial


def normalize(value, fold):
    """Normalise one value.

    A long explanation the model does not need to read
    before it reads the code below.
    """
    if fold:
        return value.lower()
    return value


def fold_all(values, fold):
    return list(map(partial(normalize, fold=fold), values))
'''
CORE = '''from . import util
from .util import fold_all


def cached(fn):
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


class Choice:
    def __init__(self, choices, case_sensitive=True):
        self.choices = fold_all(choices, not case_sensitive)
        self.case_sensitive = case_sensitive

    @cached
    def convert(self, value):
        folded = self._fold(value)
        if folded in self.choices:
            return value
        raise ValueError(value)

    def _fold(self, value):
        return util.normalize(value, not self.case_sensitive)


class Path:
    def convert(self, value):
        return value
'''
INIT = "from .core import Choice, Path\n"
TEST = '''from pkg import Choice


def test_case_insensitive_choice():
    choice = Choice(["a", "b"], case_sensitive=False)
    assert choice.convert("A") == "A"
'''
BUG = ("    if fold:\n        return value.lower()", "    if not fold:\n        return value.lower()")


def make_package(root: Path) -> Path:
    write(root, "pkg/__init__.py", INIT)
    write(root, "pkg/util.py", UTIL)
    write(root, "pkg/core.py", CORE)
    write(root, "tests/test_choice.py", TEST)
    return root


def break_it(root: Path) -> None:
    path = root / "pkg/util.py"
    path.write_text(path.read_text().replace(*BUG))


def commit_all(root: Path, message: str, date: str = "2024-03-01T12:00:00") -> None:
    if not (root / ".git").exists():
        git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message, date=date)


def pytest_output(root: Path, *extra: str) -> str:
    """The real output of the package's failing test."""
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, "tests"], cwd=root,
                         capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert run.returncode == 1, run.stdout + run.stderr
    return run.stdout
