"""Frames from real tool outputs (tests/context/samples, see its README)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from qwen_lsp.context.frames import Frame, parse_output, primary_frame, strip_ansi, truncate_output

SAMPLES = Path(__file__).parent / "samples"
sys.path.insert(0, str(SAMPLES / "corpus"))
from corpus_layout import lay_out, names


def load_sample(name: str, tmp_path: Path) -> tuple[str, Path, Path]:
    """Lay the sample's sources out in tmp_path; return (output, cwd, workspace)."""
    s = lay_out(name, tmp_path)
    return s.output, s.cwd, s.workspace


# case: (resolved path, line, column or None to skip, message fragment)
PRIMARY = {
    "python_name_error": ("pkg/calc.py", 13, 12, "NameError: name 'totl' is not defined"),
    "python_chained": ("app/config.py", 9, None, "app.config.ConfigError: bad port 'eighty'"),
    "python_during_handling": ("cache.py", 9, 16, "NameError: name 'defaults' is not defined"),
    "python_syntax_error": ("broken.py", 5, 10, "SyntaxError: invalid syntax"),
    "python_syntax_import": ("helpers.py", 2, 14, "SyntaxError: '[' was never closed"),
    "python_library": ("settings.py", 10, 12, "ValidationError: 1 validation error for Server"),
    "pytest_long": ("calc.py", 6, None, "ZeroDivisionError: division by zero"),
    "pytest_short": ("tests/test_calc.py", 5, None, "assert 3 == 4"),
    "pytest_collect_syntax": ("helpers.py", 2, 15, "SyntaxError: '(' was never closed"),
    "pytest_collect_import": ("api/client.py", 1, None, "ModuleNotFoundError: No module named 'api.transport'"),
    "mypy": ("typed.py", 6, 12, 'error: Incompatible return value type (got "int", expected "str")'),
    "ruff": ("lint_me.py", 5, 12, "F821 Undefined name `undefined_name`"),
    "ruff_concise": ("lint_me.py", 5, 12, "F821 Undefined name `undefined_name`"),
    "flake8": ("src/lint_me.py", 6, 12, "F821 undefined name 'undefined_name'"),
    "node": ("lib/user.js", 2, 23, "TypeError: Cannot read properties of undefined (reading 'name')"),
    "node_esm": ("src/parse.js", 4, 11, "Error: config has no name"),
    "tsc": ("src/index.ts", 7, 9, "error TS2322: Type 'string' is not assignable to type 'number'."),
    "tsc_pretty": ("src/app.ts", 3, 7, "error TS2322: Type 'number | undefined' is not assignable"),
    "cargo_build": ("src/main.rs", 3, 18, "error[E0308]: mismatched types"),
    "cargo_test": ("src/lib.rs", 11, 9, "assertion `left == right` failed"),
    "rust_panic": ("src/main.rs", 2, 5, "index out of bounds: the len is 3 but the index is 10"),
    "rust_backtrace": ("src/main.rs", 2, 22, "called `Result::unwrap()` on an `Err` value"),
    "go_panic": ("main.go", 6, None, "panic: runtime error: index out of range [5] with length 3"),
    "go_build": ("main.go", 6, 2, "count declared but not used"),
    "go_vet": ("main.go", 7, 2, "fmt.Printf format %d has arg name of wrong type string"),
    "go_test": ("calc_test.go", 7, None, "Area(3, 3) = 6, want 9"),
    "java_stack": ("src/com/example/Calc.java", 5, None, "java.lang.ArithmeticException: / by zero"),
    "java_caused_by": ("src/main/java/org/demo/Repo.java", 10, None, "java.lang.IndexOutOfBoundsException"),
    "javac": ("Hello.java", 4, None, "error: cannot find symbol"),
    "kotlin_stack": ("src/main/kotlin/com/acme/shop/Cart.kt", 10, None, "IllegalArgumentException: Failed requirement."),
    "kotlinc": ("src/main/kotlin/com/acme/shop/Cart.kt", 5, 34, "error: Unresolved reference 'discount'."),
    "gcc": ("src/main.c", 8, 26, "undeclared (first use in this function)"),
    "gxx": ("shapes.cpp", 5, 38, "was not declared in this scope"),
    "clang": ("vec.c", 6, 23, "error: no member named 'length' in 'struct vec'"),
    "make_not_found": ("Makefile", 5, None, "make: frobnicate: No such file or directory"),
    "make_subdir_gcc": ("lib/parse.c", 2, 22, "undeclared (first use in this function)"),
    "shell_script": ("scripts/deploy.sh", 4, None, "frobnicate: command not found"),
    "shell_no_such_file": ("run.sh", 3, None, "./tools/setup.sh: not found"),
}


def test_every_sample_has_an_expectation() -> None:
    for name in names():
        meta = json.loads((SAMPLES / name / "meta.json").read_text())
        assert meta.get("toolchain") and meta.get("expect"), name
    assert set(PRIMARY) <= set(names())


@pytest.mark.parametrize("case", sorted(PRIMARY))
def test_primary_frame_of_real_output(case: str, tmp_path: Path) -> None:
    output, cwd, workspace = load_sample(case, tmp_path)
    frames = parse_output(output, cwd=cwd, workspace=workspace)
    primary = primary_frame(frames)
    path, line, column, message = PRIMARY[case]
    assert primary is not None, frames
    assert (primary.resolved, primary.line) == (path, line), [f.model_dump() for f in frames]
    if column is not None:
        assert primary.column == column
    assert message in primary.message
    assert primary.severity == "error"
    assert not primary.library
    assert Path(primary.path) == workspace / path


def frames_of(case: str, tmp_path: Path) -> list[Frame]:
    output, cwd, workspace = load_sample(case, tmp_path)
    return parse_output(output, cwd=cwd, workspace=workspace)


def test_python_frames_are_outermost_first_with_functions(tmp_path: Path) -> None:
    frames = frames_of("python_name_error", tmp_path)
    assert [(f.resolved, f.line, f.function) for f in frames] == [
        ("main.py", 8, "<module>"),
        ("main.py", 5, "report"),
        ("pkg/calc.py", 13, "mean"),
    ]
    assert [f.severity for f in frames] == ["info", "info", "error"]
    assert {f.message for f in frames} == {"NameError: name 'totl' is not defined. Did you mean: 'total'?"}


def test_python_chain_keeps_both_tracebacks_in_one_trace(tmp_path: Path) -> None:
    frames = frames_of("python_chained", tmp_path)
    assert len({f.trace for f in frames}) == 1
    cause = frames[0]
    assert (cause.line, cause.severity) == (7, "error")
    assert cause.message.startswith("ValueError: invalid literal for int()")
    assert frames[-1].message == "app.config.ConfigError: bad port 'eighty'"


def test_site_packages_frames_are_library(tmp_path: Path) -> None:
    frames = frames_of("python_library", tmp_path)
    lib = [f for f in frames if "site-packages" in f.path]
    assert lib and all(f.library and f.resolved is None for f in lib)
    # The innermost frame is in the library: an error, but not the primary one.
    assert frames[-1].library and frames[-1].severity == "error"


def test_pytest_long_reports_every_failed_test(tmp_path: Path) -> None:
    frames = frames_of("pytest_long", tmp_path)
    located = [(f.resolved, f.line, f.function, f.trace) for f in frames if f.resolved]
    divide_trace, add_trace = next(f.trace for f in frames if f.resolved), frames[-1].trace
    assert located == [
        ("tests/test_calc.py", 5, "test_divide", divide_trace),
        ("calc.py", 6, "divide", divide_trace),
        ("tests/test_calc.py", 9, "test_add", add_trace),
    ]
    assert frames[-1].message == "AssertionError: assert 3 == 4"
    # The pytest-asyncio warning at the top is a library warning, not a user location.
    assert any(f.library and f.severity == "warning" for f in frames)


def test_pytest_short_second_failure(tmp_path: Path) -> None:
    frames = frames_of("pytest_short", tmp_path)
    second = [f for f in frames if f.trace == frames[-1].trace]
    assert [(f.resolved, f.line, f.function) for f in second] == [
        ("tests/test_calc.py", 9, "test_divide"),
        ("calc.py", 6, "divide"),
    ]
    assert second[-1].message == "ZeroDivisionError: division by zero"


def test_ruff_warning_and_error_severities(tmp_path: Path) -> None:
    frames = frames_of("ruff", tmp_path)
    assert [(f.line, f.severity) for f in frames] == [(1, "warning"), (5, "error")]
    assert frames[0].message.startswith("F401")


def test_node_internal_frames_are_library(tmp_path: Path) -> None:
    frames = frames_of("node", tmp_path)
    assert [f.resolved for f in frames if not f.library] == ["index.js", "lib/user.js"]
    assert frames[-1].function == "displayName"
    assert all(f.library for f in frames if f.path.startswith("node:"))


def test_rust_backtrace_frames(tmp_path: Path) -> None:
    frames = frames_of("rust_backtrace", tmp_path)
    user = [(f.resolved, f.line, f.function) for f in frames if f.resolved]
    assert user == [("src/main.rs", 6, "demo::main"), ("src/main.rs", 2, "demo::parse")]
    assert all(f.library for f in frames if f.path.startswith("/rustc/"))


def test_go_panic_frames(tmp_path: Path) -> None:
    frames = frames_of("go_panic", tmp_path)
    assert [(f.resolved, f.line, f.function) for f in frames] == [("main.go", 10, "main.main"), ("main.go", 6, "main.pick")]


def test_java_jdk_frames_are_library(tmp_path: Path) -> None:
    frames = frames_of("java_caused_by", tmp_path)
    assert [f.library for f in frames].count(True) == 2
    wrapper = [f for f in frames if f.message.startswith("java.lang.IllegalStateException")]
    assert [(f.line, f.function) for f in wrapper] == [(17, "org.demo.Repo.main"), (12, "org.demo.Repo.get")]


def test_gcc_function_and_notes(tmp_path: Path) -> None:
    frames = frames_of("gcc", tmp_path)
    assert [(f.line, f.severity) for f in frames] == [(8, "error"), (8, "info"), (7, "warning")]
    assert frames[0].function == "main"


def test_make_directory_tracking(tmp_path: Path) -> None:
    frames = frames_of("make_subdir_gcc", tmp_path)
    makefiles = [f.resolved for f in frames if f.resolved and f.resolved.endswith("Makefile")]
    assert makefiles == ["lib/Makefile", "Makefile"]


def test_shell_no_such_file_lines(tmp_path: Path) -> None:
    frames = frames_of("shell_script", tmp_path)
    assert [(f.resolved, f.line) for f in frames] == [("scripts/deploy.sh", 4)]


def test_relative_cwd_and_outside_workspace(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.py").write_text("x\n")
    out = 'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\n    x\nNameError: x\n'
    frames = parse_output(out, cwd=Path("sub"), workspace=tmp_path)
    assert frames[0].resolved == "sub/a.py"
    out2 = 'Traceback (most recent call last):\n  File "/elsewhere/b.py", line 3, in f\nKeyError: 1\n'
    frames2 = parse_output(out2, cwd=tmp_path, workspace=tmp_path)
    assert frames2[0].resolved is None and not frames2[0].library
    assert primary_frame(frames2) is None


def test_no_frames_in_plain_text(tmp_path: Path) -> None:
    text = "Compiling...\nDone at 12:30:45\nhttp://localhost:8000: ready\nok: 3 passed\n"
    assert parse_output(text, cwd=tmp_path, workspace=tmp_path) == []
    assert primary_frame([]) is None


def test_strip_ansi() -> None:
    coloured = "\x1b[1m\x1b[91merror[E0308]\x1b[0m: x\n\x1b]8;;file:///a\x07link\x1b]8;;\x07\nprogress 10%\rprogress 100%\n"
    assert strip_ansi(coloured) == "error[E0308]: x\nlink\nprogress 100%\n"


def test_truncate_keeps_head_tail_and_failure() -> None:
    lines = [f"line {i}" for i in range(10_000)]
    lines[3000] = "Traceback (most recent call last):"
    lines[3001] = '  File "app.py", line 3, in <module>'
    lines[3002] = "ValueError: boom"
    text = "\n".join(lines)
    out = truncate_output(text, max_lines=100)
    kept = out.split("\n")
    assert len(kept) <= 104
    assert kept[0] == "line 0" and kept[-1] == "line 9999"
    assert "ValueError: boom" in kept and any("lines omitted" in k for k in kept)
    assert truncate_output("short\ntext") == "short\ntext"


def test_truncate_caps_long_lines() -> None:
    out = truncate_output("x" * 50_000, max_lines=10, max_line_chars=100)
    assert len(out) < 120
