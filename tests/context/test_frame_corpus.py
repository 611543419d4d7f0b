"""The captured corpus (tests/context/samples): every real tool output must give its expected primary
location, and no frame may point at a file that is not there. Regenerate with corpus/run.py."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from qwen_lsp.context.frames import parse_output, primary_frame, truncate_output

SAMPLES = Path(__file__).parent / "samples"
sys.path.insert(0, str(SAMPLES / "corpus"))
from corpus_layout import lay_out, names

META = {name: json.loads((SAMPLES / name / "meta.json").read_text()) for name in names()}

# Issue 15's miss classes and issue 19's shapes: each needs at least two real outputs.
CLASSES_15 = {
    "exceptiongroup", "pytest_native", "long_log", "node_syntax_header", "file_url", "node_test_tap", "ruby", "rspec",
    "minitest", "php", "asan", "valgrind", "glibc_assert", "eslint_stylish", "eslint_compact", "eslint_unix", "go_race",
    "ruff_grouped", "shellcheck", "cmake", "go_spaces", "go_package_relative", "gopath", "pylint_e", "java_suppressed",
    "windows_paths", "ansi", "terminal_readback",
}
SHAPES_19 = {"at_file_line", "ocaml_file", "paren_line", "after_text", "prefix", "labels", "erlang_terms", "embedded"}


def test_corpus_size_and_coverage() -> None:
    specific = [m for m in META.values() if not m.get("generic")]
    generic = [m for m in META.values() if m.get("generic")]
    assert len(specific) >= 150 and len({m["toolchain"] for m in specific}) >= 20
    assert len({m["toolchain"] for m in generic}) >= 10
    classes = Counter(c for m in META.values() for c in m.get("classes", []))
    assert {c for c in CLASSES_15 | SHAPES_19 if classes[c] < 2} == set()


# Misses of the held-out batch, kept as they came out (see bench/bench_frames.py -v).
KNOWN_MISSES: dict[str, str] = {}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=KNOWN_MISSES[n], strict=True)) if n in KNOWN_MISSES else n for n in names()])
def test_primary_location(name: str, tmp_path: Path) -> None:
    s = lay_out(name, tmp_path)
    frames = parse_output(s.output, cwd=s.cwd, workspace=s.workspace)
    primary = primary_frame(frames)
    assert primary is not None, [f.model_dump() for f in frames]
    assert (primary.resolved, primary.line) == s.expect, [f.model_dump() for f in frames]
    assert primary.severity in ("error", "warning") and not primary.library  # a lint run with warnings only: a warning
    # The file system is the arbiter: a resolved frame names a real file that has that line.
    for f in frames:
        if f.resolved is not None:
            target = s.workspace / f.resolved
            assert target.is_file(), f
            assert f.line <= len(target.read_bytes().split(b"\n")), f
        if f.guessed:
            assert f.resolved is not None, f


@pytest.mark.parametrize("name", [n for n in names() if "long_log" in META[n].get("classes", [])])
def test_long_logs_keep_their_failure_on_the_prompt_path(name: str, tmp_path: Path) -> None:
    s = lay_out(name, tmp_path)
    assert s.output.count("\n") > 5000
    primary = primary_frame(parse_output(truncate_output(s.output, max_lines=5000), cwd=s.cwd, workspace=s.workspace))
    assert primary is not None and (primary.resolved, primary.line) == s.expect


@pytest.mark.parametrize("name", [n for n in names() if META[n].get("generic")])
def test_generic_finder_never_points_at_a_missing_file(name: str, tmp_path: Path) -> None:
    s = lay_out(name, tmp_path)
    for f in parse_output(s.output, cwd=s.cwd, workspace=s.workspace):
        assert f.resolved is None or (s.workspace / f.resolved).is_file()
    # Remove the sources: the same output then yields no location at all, not a made-up one.
    for p in sorted(s.workspace.rglob("*"), reverse=True):
        if p.is_file():
            p.unlink()
    assert primary_frame(parse_output(s.output, cwd=s.cwd, workspace=s.workspace)) is None
