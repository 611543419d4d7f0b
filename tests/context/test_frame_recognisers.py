"""One test group per recogniser module of qwen_lsp.context.frames, on the captured real outputs
(tests/context/samples) where a tool produced them, on small strings for the pure text helpers."""

from __future__ import annotations

import sys
from pathlib import Path

from qwen_lsp.context.frames import Frame, parse_output, primary_frame
from qwen_lsp.context.frames.locate import find_locations
from qwen_lsp.context.frames.text import strip_prefixes, unwrap_terminal

SAMPLES = Path(__file__).parent / "samples"
sys.path.insert(0, str(SAMPLES / "corpus"))
from corpus_layout import lay_out


def frames_of(name: str, tmp_path: Path) -> list[Frame]:
    s = lay_out(name, tmp_path)
    return parse_output(s.output, cwd=s.cwd, workspace=s.workspace)


def located(frames: list[Frame]) -> list[tuple[str | None, int, str]]:
    return [(f.resolved, f.line, f.severity) for f in frames if f.resolved]


# --------------------------------------------------------------------------- python.py


def test_exception_group_members_are_one_failure(tmp_path: Path) -> None:
    frames = frames_of("py_except_star", tmp_path)
    assert len({f.trace for f in frames}) == 1
    assert [f.message for f in frames if f.resolved == "batch.py" and f.line == 3] == [
        "KeyError: 'row without id: {}'", "KeyError: \"row without id: {'x': 2}\"",
    ]
    assert primary_frame(frames).message.startswith("KeyError")


def test_pytest_native_traceback_keeps_its_file_frames(tmp_path: Path) -> None:
    frames = frames_of("pytest_native_exception", tmp_path)
    assert [(f.resolved, f.line) for f in frames if f.resolved] == [("tests/test_parse.py", 9), ("parse.py", 2)]
    assert any(f.library and "_pytest" in f.path for f in frames)
    assert primary_frame(frames).message == "ValueError: invalid literal for int() with base 10: 'x'"


def test_prefixed_traceback_is_read_as_python(tmp_path: Path) -> None:
    frames = frames_of("py_compose_prefix", tmp_path)
    assert [(f.resolved, f.line, f.function) for f in frames] == [("serve.py", 4, "<module>"), ("app/views.py", 2, "item")]
    assert frames[-1].message == "IndexError: list index out of range"


def test_wrapped_traceback_read_back_from_a_terminal(tmp_path: Path) -> None:
    frames = frames_of("py_tmux_wrapped", tmp_path)
    path = "services/billing/invoices/generate_monthly_statements.py"
    assert [(f.resolved, f.line) for f in frames] == [(path, 5), (path, 2)]
    assert frames[-1].message == "ZeroDivisionError: division by zero"


def test_windows_paths_on_a_linux_host(tmp_path: Path) -> None:
    frames = frames_of("py_windows_paths", tmp_path)
    lib = [f for f in frames if "site-packages" in f.path]
    assert lib and all(f.library and f.resolved is None for f in lib)
    assert primary_frame(frames).resolved == "app/service.py"


# --------------------------------------------------------------------------- node.py


def test_node_syntax_error_header_is_the_location(tmp_path: Path) -> None:
    frames = frames_of("node_esm_syntax", tmp_path)
    primary = primary_frame(frames)
    assert (primary.resolved, primary.line, primary.message) == ("src/math.js", 5, "SyntaxError: Unexpected token '}'")
    assert all(f.library for f in frames if f.path.startswith("node:"))


def test_node_test_tap_stack_without_at(tmp_path: Path) -> None:
    frames = frames_of("node_test_tap_throw", tmp_path)
    assert located(frames) == [("test/slug.test.js", 6, "info"), ("lib/slug.js", 1, "error")]
    assert frames[-1].message == "TypeError: Cannot read properties of null (reading 'toLowerCase')"


# --------------------------------------------------------------------------- ruby.py, php.py


def test_ruby_backtrace_innermost_last(tmp_path: Path) -> None:
    frames = frames_of("ruby_no_method", tmp_path)
    assert [(f.resolved, f.line, f.function) for f in frames] == [("main.rb", 3, "<main>"), ("lib/cart.rb", 7, "total"), ("lib/cart.rb", 7, "sum")]
    assert frames[-1].message == "NoMethodError: undefined method `price' for 1:Integer"


def test_rspec_and_minitest(tmp_path: Path) -> None:
    rspec = primary_frame(frames_of("rspec_error_in_code", tmp_path / "a"))
    assert (rspec.resolved, rspec.line, rspec.message) == ("lib/user.rb", 7, "KeyError: key not found: :email")
    mini = primary_frame(frames_of("minitest_failure", tmp_path / "b"))
    assert (mini.resolved, mini.line) == ("test/test_math.rb", 5) and "Expected: 6" in mini.message


def test_php_type_error_points_at_the_caller(tmp_path: Path) -> None:
    frames = frames_of("php_type_error", tmp_path)
    assert (primary_frame(frames).line, primary_frame(frames).message.startswith("PHP Fatal error:  Uncaught TypeError".replace("  ", " "))) == (8, True)


def test_php_warning_loses_to_the_later_fatal_error(tmp_path: Path) -> None:
    frames = frames_of("php_warning_then_fatal", tmp_path)
    assert ("w.php", 3, "warning") in located(frames)
    assert primary_frame(frames).line == 5


# --------------------------------------------------------------------------- native.py


def test_asan_allocation_stacks_are_related_not_primary(tmp_path: Path) -> None:
    frames = frames_of("asan_use_after_free", tmp_path)
    assert primary_frame(frames).line == 8
    assert primary_frame(frames).message == "AddressSanitizer: heap-use-after-free"
    # "freed by" (uaf.c:7) and "previously allocated by" (uaf.c:12): context only.
    assert {(f.line, f.severity) for f in frames if f.resolved and f.line in (7, 12)} == {(7, "info"), (12, "info")}


def test_valgrind_record(tmp_path: Path) -> None:
    frames = frames_of("valgrind_invalid_read", tmp_path)
    assert primary_frame(frames).message == "valgrind: Invalid read of size 4"
    assert [f.function for f in frames if f.resolved and f.severity != "info"] == ["last"]


def test_glibc_assert(tmp_path: Path) -> None:
    primary = primary_frame(frames_of("glibc_assert", tmp_path))
    assert (primary.resolved, primary.line, primary.function) == ("q.c", 4, "pop")


# --------------------------------------------------------------------------- go.py, jvm.py


def test_go_race_previous_access_is_related(tmp_path: Path) -> None:
    frames = frames_of("go_race", tmp_path)
    errors = [f for f in frames if f.severity == "error" and f.resolved]
    assert [(f.resolved, f.line) for f in errors] == [("counter.go", 12)]
    assert errors[0].message.startswith("data race: Read at")


def test_go_test_path_relative_to_its_package(tmp_path: Path) -> None:
    frames = frames_of("go_test_subpackage", tmp_path)
    assert located(frames) == [("internal/calc/calc_test.go", 7, "error")]


def test_go_frames_indented_with_spaces(tmp_path: Path) -> None:
    frames = frames_of("go_panic_tmux", tmp_path)
    assert [(f.resolved, f.line, f.function) for f in frames] == [("main.go", 8, "main.main"), ("main.go", 4, "main.divide")]


def test_gopath_project_is_user_code(tmp_path: Path) -> None:
    frames = frames_of("go_gopath_test", tmp_path)
    assert "/go/src/github.com/you/project/" in primary_frame(frames).path
    assert all(f.library for f in frames if "/usr/lib/go-" in f.path)


def test_java_suppressed_is_not_the_cause(tmp_path: Path) -> None:
    frames = frames_of("java_suppressed", tmp_path)
    close = [f for f in frames if f.function == "io.Res.close"]
    assert close and close[0].severity == "info"
    assert (primary_frame(frames).line, primary_frame(frames).message) == (10, "java.lang.RuntimeException: work failed")


# --------------------------------------------------------------------------- lint.py, cmake.py, generic.py


def test_eslint_stylish_severities(tmp_path: Path) -> None:
    frames = frames_of("eslint_stylish_two_files", tmp_path)
    assert located(frames) == [("src/a.js", 1, "warning"), ("src/pick.js", 1, "warning"), ("src/pick.js", 2, "warning"), ("src/pick.js", 3, "error")]
    assert frames[-1].message == "'kye' is not defined (no-undef)" and frames[-1].column == 14


def test_eslint_unix_tag_gives_the_severity(tmp_path: Path) -> None:
    frames = frames_of("eslint_unix_two", tmp_path)
    assert [f.severity for f in frames] == ["warning", "warning", "warning", "error"]


def test_ruff_grouped_rows(tmp_path: Path) -> None:
    frames = frames_of("ruff_grouped", tmp_path)
    assert located(frames) == [("pkg/util.py", 1, "warning"), ("pkg/util.py", 2, "warning"), ("pkg/util.py", 6, "error")]


def test_pylint_e_codes_are_errors(tmp_path: Path) -> None:
    frames = frames_of("pylint_e_no_member", tmp_path)
    assert {f.message.split(":")[0]: f.severity for f in frames} == {"W0613": "warning", "E1101": "error"}


def test_shellcheck_caret_column_and_severity(tmp_path: Path) -> None:
    frames = frames_of("shellcheck_tty", tmp_path)
    first = frames[0]
    assert (first.line, first.column, first.severity, first.message.split(":")[0]) == (2, 10, "error", "SC2045")


def test_cmake_error_message_and_call_site(tmp_path: Path) -> None:
    primary = primary_frame(frames_of("cmake_error_subdir", tmp_path))
    assert (primary.resolved, primary.line, primary.function) == ("lib/CMakeLists.txt", 3, "find_package")
    assert primary.message.startswith("CMake Error: By not providing")


# --------------------------------------------------------------------------- text.py


def test_prefixes_that_repeat_are_stripped_keeping_indentation() -> None:
    lines = ["web-1  | Traceback (most recent call last):", 'web-1  |   File "a.py", line 1, in <module>', "web-1  | KeyError: 1"]
    assert strip_prefixes(lines) == ["Traceback (most recent call last):", '  File "a.py", line 1, in <module>', "KeyError: 1"]
    logged = ["2026-12-03T07:44:48.120Z [worker-3] INFO   File \"x.py\", line 2", "2026-12-03T07:44:49Z [worker-3] INFO done"]
    assert strip_prefixes(logged) == ['  File "x.py", line 2', "done"]


def test_a_lone_bracket_or_level_is_not_a_prefix() -> None:
    lines = ["[1/3] Building C object", "main.c:3:5: error: x", "ok", "done", "more", "text"]
    assert strip_prefixes(lines) == lines
    assert strip_prefixes(["ERROR: boom", "INFO: fine"]) == ["ERROR: boom", "INFO: fine"]


def test_unwrap_joins_only_a_location_split_by_the_terminal() -> None:
    wrapped = ["    at render (/home/dev/project/src/components/dashboard/WeeklySumm", "ary.js:12:7)", "next line"]
    assert unwrap_terminal(wrapped) == ["    at render (/home/dev/project/src/components/dashboard/WeeklySummary.js:12:7)", "next line"]
    prose = ["This sentence is long enough to be wrapped by a terminal (it says", "nothing about files)"]
    assert unwrap_terminal(prose) == prose


# --------------------------------------------------------------------------- locate.py (the generic location finder)

FILES = {"src/calc.ml": 10, "main.f90": 8}


def fake_lookup(path: str) -> tuple[str, int] | None:
    key = path.removeprefix("./")
    return (f"/ws/{key}", FILES[key]) if key in FILES else None


def test_finder_keeps_only_real_files_with_that_line() -> None:
    lines = [
        'File "src/calc.ml", line 4, characters 2-9:',
        'File "src/calc.ml", line 40, characters 2-9:',  # past the end of the file
        'File "src/gone.ml", line 4, characters 2-9:',  # no such file
    ]
    traces = find_locations(lines, set(), fake_lookup)
    assert [(t.frames[0].path, t.frames[0].line) for t in traces] == [("src/calc.ml", 4)]
    assert all(t.guessed for t in traces)


def test_finder_first_candidate_of_the_last_failure_block_is_the_error() -> None:
    lines = [
        "note: see ./src/calc.ml:2 for the definition",
        "",
        "",
        "",
        "",
        "At line 6 of file main.f90",
        "Fortran runtime error: Index '5' above upper bound",
        "#3 0x55 in MAIN__ at main.f90:6",
        "#4 0x55 in main at main.f90:8",
    ]
    traces = find_locations(lines, set(), fake_lookup)
    assert [(t.frames[0].path, t.frames[0].line, t.frames[0].severity) for t in traces] == [
        ("./src/calc.ml", 2, "info"), ("main.f90", 6, "error"), ("main.f90", 6, "info"), ("main.f90", 8, "info"),
    ]


def test_recognised_frames_outrank_guessed_ones(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x = 1\ny = 2\n")
    (tmp_path / "notes.txt").write_text("a\nb\nc\n")
    out = 'fatal: see notes.txt:3\nTraceback (most recent call last):\n  File "app.py", line 2, in <module>\nNameError: y\n'
    frames = parse_output(out, cwd=tmp_path, workspace=tmp_path)
    assert [(f.resolved, f.guessed) for f in frames] == [("notes.txt", True), ("app.py", False)]
    assert primary_frame(frames).resolved == "app.py"


# --------------------------------------------------------------------------- resolve.py


def test_a_path_from_another_machine_is_found_by_suffix_only_if_the_line_exists(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "views.py").write_text("a = 1\nb = 2\nc = 3\n")
    out = 'Traceback (most recent call last):\n  File "/srv/app/views.py", line 3, in <module>\nNameError: c\n'
    assert primary_frame(parse_output(out, cwd=tmp_path, workspace=tmp_path)).resolved == "app/views.py"
    past_end = out.replace("line 3", "line 30")
    frames = parse_output(past_end, cwd=tmp_path, workspace=tmp_path)
    assert frames[0].resolved is None and primary_frame(frames) is None


# --------------------------------------------------------------------------- embedded reports (issue 19)


def test_a_traceback_quoted_in_a_go_test_message_is_the_cause(tmp_path: Path) -> None:
    frames = frames_of("embedded_go_python", tmp_path)
    assert ("gen_test.go", 11) in [(f.resolved, f.line) for f in frames]  # the report is still there
    primary = primary_frame(frames)
    assert (primary.resolved, primary.line, primary.message) == ("scripts/gen.py", 6, "KeyError: 'name'")


def test_doctest_report_and_the_example_traceback(tmp_path: Path) -> None:
    frames = frames_of("embedded_doctest", tmp_path)
    report = [f for f in frames if f.message.startswith("doctest failed")]
    assert [(f.resolved, f.line) for f in report] == [("mathx.py", 3)]
    assert primary_frame(frames).message == "ZeroDivisionError: division by zero"


# --------------------------------------------------------------------------- found by held-out batch 2


def test_a_go_internal_directory_is_user_code(tmp_path: Path) -> None:
    primary = primary_frame(frames_of("h2_go_vet_subpkg", tmp_path))
    assert (primary.resolved, primary.line) == ("internal/log/log.go", 6)


def test_lua_traceback_lines_are_not_diagnostics(tmp_path: Path) -> None:
    frames = frames_of("h2_lua_error_table", tmp_path)
    primary = primary_frame(frames)
    assert (primary.resolved, primary.line, primary.guessed) == ("calc.lua", 8, True)
    assert all(f.guessed for f in frames)


def test_ruby_wrong_number_of_arguments_points_at_the_call(tmp_path: Path) -> None:
    frames = frames_of("h2_ruby_argument", tmp_path)
    assert [(f.resolved, f.line) for f in frames] == [("main.rb", 2)]
    assert "wrong number of arguments (given 1, expected 2)" in frames[0].message
