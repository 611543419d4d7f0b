"""A pytest plugin the corpus builder loads (`-p probe`): for every test it records, as JSON lines in
$RECALL_PROBE_OUT, its outcome, the library functions its body called with their call depth below
the test function (1: called by the test function itself), and on failure the traceback's frames (and, apart, those of the exceptions it was raised from or while
handling, which pytest prints above it).

A library function is one whose file lies under $RECALL_PROBE_LIB (the package's own code, not its
tests). Depth is counted with sys.setprofile from the test function's frame, so helpers in the
test module count as a level. Only the test's call phase is traced (fixtures are not the test).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from types import CodeType, FrameType
from typing import Any

import pytest

LIB = os.path.realpath(os.environ.get("RECALL_PROBE_LIB", "/nonexistent"))
OUT = os.environ.get("RECALL_PROBE_OUT")
_calls: dict[str, dict[str, int]] = {}
_keys: dict[CodeType, str | None] = {}


def _key(code: CodeType) -> str | None:
    """'pkg/mod.py::Qual.name::firstlineno' for library code, else None (memoised per code object)."""
    try:
        return _keys[code]
    except KeyError:
        path = os.path.realpath(code.co_filename)
        lib = path == LIB or path.startswith(LIB + os.sep)
        key = f"{os.path.relpath(path, os.path.dirname(LIB))}::{code.co_qualname}::{code.co_firstlineno}" if lib else None
        _keys[code] = key
        return key


def _test_code(item: pytest.Item) -> CodeType | None:
    func = getattr(item, "function", None) or getattr(item, "obj", None)
    func = getattr(func, "__func__", func)
    return getattr(func, "__code__", None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    target = _test_code(item)
    found: dict[str, int] = {}
    state = {"depth": 0, "base": None}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            state["depth"] += 1
            code = frame.f_code
            if state["base"] is None:
                if code is target:
                    state["base"] = state["depth"]
                return
            key = _keys[code] if code in _keys else _key(code)
            if key is not None:
                depth = state["depth"] - state["base"]
                if 0 < depth < found.get(key, 1 << 30):
                    found[key] = depth
        elif event == "return":
            state["depth"] -= 1
            if state["base"] is not None and state["depth"] < state["base"]:
                state["base"] = None  # the test function returned (or a generator test paused)

    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(None)
        _calls[item.nodeid] = found


def _cause(exc: BaseException) -> BaseException | None:
    return exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if OUT is None or report.when != "call" and not (report.failed or report.skipped):
        return
    frames: list[str] = []
    chained: list[str] = []
    if call.excinfo is not None:
        for entry in call.excinfo.traceback:
            key = _key(entry.frame.code.raw)
            if key is not None:
                frames.append(key)
        # pytest also prints the exceptions this one was raised from or while handling
        exc, seen = _cause(call.excinfo.value), set()
        while exc is not None and id(exc) not in seen:
            seen.add(id(exc))
            chained += [k for tb, _ in traceback.walk_tb(exc.__traceback__) if (k := _key(tb.f_code)) is not None]
            exc = _cause(exc)
    record = {"nodeid": item.nodeid, "when": report.when, "outcome": report.outcome,
              "calls": _calls.pop(item.nodeid, {}), "frames": frames, "chained_frames": chained}
    with open(OUT, "a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")
