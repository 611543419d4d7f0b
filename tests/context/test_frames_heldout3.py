"""Issue 27: held-out batch 3 (tests/context/samples/heldout3, real outputs of toolchains no other
sample has) and one test group per miss class: location shapes, structured logs, severity, which
failure comes first (and the signalled thread), prefixes that change on every line."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from qwen_lsp.context.frames import Frame, parse_output, primary_frame, truncate_output
from qwen_lsp.context.frames.severity import line_severity
from qwen_lsp.context.frames.structured import decode_structured
from qwen_lsp.context.frames.text import strip_changing_prefixes, strip_prefixes

SAMPLES = Path(__file__).parent / "samples"
sys.path.insert(0, str(SAMPLES / "corpus"))
from corpus_layout import heldout_names, lay_out, names

HELDOUT = heldout_names(("heldout3",))
META = {n: json.loads((SAMPLES / n / "meta.json").read_text()) for n in HELDOUT}


def parsed(name: str, tmp_path: Path) -> tuple[list[Frame], Frame | None]:
    s = lay_out(name, tmp_path)
    frames = parse_output(s.output, cwd=s.cwd, workspace=s.workspace)
    return frames, primary_frame(frames)


def where(frame: Frame | None) -> tuple[str | None, int, int | None] | None:
    return (frame.resolved, frame.line, frame.column) if frame else None


def test_batch_size_and_novelty() -> None:
    assert len(HELDOUT) >= 60
    toolchains = {m["toolchain"] for m in META.values()}
    assert len(toolchains) >= 20
    earlier = {json.loads((SAMPLES / n / "meta.json").read_text())["toolchain"] for n in names()}
    assert len(toolchains - earlier) >= 20  # formats no earlier sample has
    classes = Counter(c for m in META.values() for c in m.get("classes", []))
    wanted = {"loc_bracket", "loc_paren_space", "loc_after_message", "loc_space_lc", "loc_keyvalue", "loc_rows", "loc_table",
              "loc_prose", "json", "severity", "first_failure", "threads", "excerpt", "prefix_changing"}
    assert {c for c in wanted if classes[c] < 2} == set()


@pytest.mark.parametrize("name", HELDOUT)
def test_heldout_primary_location(name: str, tmp_path: Path) -> None:
    s = lay_out(name, tmp_path)
    frames = parse_output(s.output, cwd=s.cwd, workspace=s.workspace)
    primary = primary_frame(frames)
    assert primary is not None and (primary.resolved, primary.line) == s.expect, [f.model_dump() for f in frames]
    for f in frames:  # the file system is the arbiter: a resolved frame names a real file that has that line
        if f.resolved is not None:
            target = s.workspace / f.resolved
            assert target.is_file() and f.line <= len(target.read_bytes().split(b"\n")), f
    for p in sorted(s.workspace.rglob("*"), reverse=True):  # without the sources: no location at all, not a made-up one
        if p.is_file():
            p.unlink()
    assert primary_frame(parse_output(s.output, cwd=s.cwd, workspace=s.workspace)) is None


@pytest.mark.parametrize("name", [n for n in HELDOUT if {"json", "prefix_changing"} & set(META[n].get("classes", []))])
def test_prompt_path_keeps_structured_and_prefixed_failures(name: str, tmp_path: Path) -> None:
    """The prompt truncates long lines to 1000 characters first: a cut JSON line still yields its traceback."""
    s = lay_out(name, tmp_path)
    primary = primary_frame(parse_output(truncate_output(s.output, max_lines=5000), cwd=s.cwd, workspace=s.workspace))
    assert primary is not None and (primary.resolved, primary.line) == s.expect


# --------------------------------------------------------------------------- location shapes (locate.py)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("heldout3/h3_maven_compile", ("src/main/java/demo/App.java", 7, 17)),  # App.java:[7,17]
        ("heldout3/h3_tslint_verbose", ("src/util.ts", 2, 3)),  # util.ts[2, 3]
        ("heldout3/h3_rollup_parse", ("src/main.js", 3, None)),  # main.js (3:0), a 0-based column
        ("heldout3/h3_babel_syntax", ("src/app.js", 3, 12)),  # app.js: Unexpected token (3:12)
        ("heldout3/h3_prettier_css", ("styles/site.css", 5, 1)),
        ("heldout3/h3_sass_in_partial", ("scss/_mixins.scss", 2, 12)),  # _mixins.scss 2:12  pad()
        ("heldout3/h3_gha_echo_annotation", ("src/main.c", 4, 5)),  # ::error file=src/main.c,line=4,col=5
        ("heldout3/h3_structlog_kv", ("svc/app.py", 10, None)),  # filename='app.py' lineno=10
        ("heldout3/h3_stylelint", ("css/a.css", 4, 10)),  # header, then "  4:10  ✖" rows
        ("heldout3/h3_htmlhint", ("public/index.html", 5, None)),  # header, then "L5 |" rows
        ("heldout3/h3_sqlfluff", ("models/orders.sql", 5, 4)),  # "L:   5 | P:   4 |" table
        ("heldout3/h3_bats", ("test/add.bats", 5, None)),  # (in test file test/add.bats, line 5)
        ("heldout3/h3_lessc", ("less/site.less", 4, 11)),  # in site.less on line 4, column 11
        ("heldout3/h3_jshint_two", ("lib/a.js", 3, 10)),  # a.js: line 3, col 10
    ],
)
def test_location_shapes(name: str, expected: tuple[str, int, int | None], tmp_path: Path) -> None:
    _frames, primary = parsed(name, tmp_path)
    assert where(primary) == expected


def test_shapes_never_name_a_file_that_is_not_there(tmp_path: Path) -> None:
    (tmp_path / "real.js").write_text("a\nb\nc\n")
    out = "SyntaxError: ghost.js: Unexpected token (2:1)\nreal.js (9:1)\n::error file=ghost.c,line=1::x\nin ghost.less on line 1, column 2:\n"
    assert [f for f in parse_output(out, cwd=tmp_path, workspace=tmp_path) if f.resolved] == []  # real.js has 3 lines


# --------------------------------------------------------------------------- structured logs (structured.py)


def test_escaped_traceback_in_a_json_line_becomes_a_python_trace(tmp_path: Path) -> None:
    s = lay_out("heldout3/h3_structlog_json_exc", tmp_path)
    decoded = decode_structured(s.output.split("\n"))
    assert "error: job failed" in decoded and "Traceback (most recent call last):" in decoded
    frames = parse_output(s.output, cwd=s.cwd, workspace=s.workspace)
    primary = primary_frame(frames)
    assert (primary.resolved, primary.line, primary.function) == ("svc/worker.py", 8, "handle") and not primary.guessed
    assert primary.message.startswith("AttributeError")


def test_frames_as_json_objects_are_a_stack_deepest_last(tmp_path: Path) -> None:
    frames, primary = parsed("heldout3/h3_structlog_dict_tb", tmp_path)
    assert [(f.resolved, f.line, f.severity) for f in frames if f.resolved] == [("main.py", 7, "info"), ("svc/calc.py", 2, "error")]
    assert primary.message.startswith("ZeroDivisionError")
    _frames, pretty = parsed("heldout3/h3_python_json_frames", tmp_path / "pretty")  # an indented JSON document
    assert where(pretty) == ("core/rules.py", 2, None)


def test_pino_err_stack_and_a_cut_json_line(tmp_path: Path) -> None:
    s = lay_out("heldout3/h3_pino_err", tmp_path)
    cut = "\n".join(ln[:400] for ln in s.output.split("\n"))  # no longer valid JSON
    for text in (s.output, cut):
        primary = primary_frame(parse_output(text, cwd=s.cwd, workspace=s.workspace))
        assert (primary.resolved, primary.line, primary.column) == ("lib/store.js", 2, 20)


def test_plain_lines_pass_through_unchanged() -> None:
    lines = ["int main() {", '  printf("%d\\n", x);', "{not json}", '{"a": 1'] 
    assert decode_structured(lines) == lines


# --------------------------------------------------------------------------- severity (severity.py)


@pytest.mark.parametrize(
    ("line", "severity"),
    [
        ("data/a.xml:3: namespace warning : xmlns: URI rel/ns is not absolute", "warning"),
        ("data/a.xml:4: parser error : Entity 'y' not defined", "error"),
        ("▲ [WARNING] Duplicate key \"x\" in object literal [duplicate-object-key]", "warning"),
        ("✘ [ERROR] No matching export in \"src/util.js\" for import \"nope\"", "error"),
        ("  1:4   ⚠  Empty block               block-no-empty", "warning"),
        ("  4:10  ✖  Invalid hex color \"#ggg\"  color-no-invalid-hex", "error"),
        ("src/a.c:3:11: style: Same expression on both sides of '=='. [duplicateExpression]", "warning"),
        ("src/b.js: line 1, col 10, Missing semicolon. (W033)", "warning"),
        ("src/b.js: line 3, col 10, Expected an identifier and instead saw ';'. (E030)", "error"),
        ("::warning file=src/a.py,line=1,col=1::unused import", "warning"),
        ("(node:18030) DeprecationWarning: old config format", "warning"),
        ("  The original key \"x\" is here:", "info"),
        ("\t[C]: in function 'error'", None),  # a quoted name is not a verdict
        ("event='config missing' key='db' filename='app.py' lineno=10", "error"),
    ],
)
def test_one_severity_vocabulary(line: str, severity: str | None) -> None:
    assert line_severity(line) == severity


@pytest.mark.parametrize(
    ("name", "demoted"),
    [
        ("heldout3/h3_esbuild_warning_then_error", ("src/main.js", 1)),  # ▲ [WARNING] before ✘ [ERROR]
        ("heldout3/h3_cppcheck_two", ("src/a.c", 3)),  # style: before error:
        ("heldout3/h3_xmllint_warning_then_error", ("data/a.xml", 3)),
        ("heldout3/h3_ant_javac", ("build.xml", 4)),  # BUILD FAILED build.xml:4: Compile failed
        ("heldout3/h3_node_warning_then_error", ("main.js", 2)),  # a DeprecationWarning's stack
    ],
)
def test_a_warning_or_a_wrapper_does_not_win_over_the_error(name: str, demoted: tuple[str, int], tmp_path: Path) -> None:
    frames, primary = parsed(name, tmp_path)
    s = lay_out(name, tmp_path / "again")
    assert (primary.resolved, primary.line) == s.expect and primary.severity == "error"
    assert {f.severity for f in frames if (f.resolved, f.line) == demoted} <= {"warning", "info"}


# --------------------------------------------------------------------------- which failure comes first


@pytest.mark.parametrize(
    ("name", "later"),
    [
        ("heldout3/h3_prove_two_failures", ("t/basic.t", 7)),
        ("heldout3/h3_bats_two_failures", ("test/t.bats", 6)),
        ("heldout3/h3_jest_two_failures", ("test/sum.test.js", 8)),
        ("heldout3/h3_mocha_two_failures", ("test/math.test.js", 9)),
        ("heldout3/h3_unittest_two_failures", ("tests/test_a.py", 9)),
    ],
)
def test_the_first_failing_assertion_wins(name: str, later: tuple[str, int], tmp_path: Path) -> None:
    frames, primary = parsed(name, tmp_path)
    assert later in {(f.resolved, f.line) for f in frames}
    assert (primary.resolved, primary.line) != later


def test_the_signalled_thread_wins_over_the_main_thread_printed_last(tmp_path: Path) -> None:
    frames, primary = parsed("heldout3/h3_gdb_threads", tmp_path)
    assert ("crash.c", 25) in {(f.resolved, f.line) for f in frames}  # main, in pthread_join, printed last
    assert (primary.resolved, primary.line) == ("crash.c", 16)
    _frames, current = parsed("heldout3/h3_faulthandler_threads", tmp_path / "fh")  # "Current thread" first, main after
    assert (current.resolved, current.line) == ("native/peek.py", 5)


def test_code_excerpts_between_frames_keep_one_stack(tmp_path: Path) -> None:
    frames, primary = parsed("heldout3/h3_loguru_diagnose", tmp_path)  # loguru's variable annotations between frames
    assert (primary.resolved, primary.line) == ("jobs/parse.py", 4)
    assert len({f.trace for f in frames if f.resolved}) == 1


# --------------------------------------------------------------------------- prefixes that change on every line (text.py)


@pytest.mark.parametrize(
    ("name", "prefix"),
    [
        ("heldout3/h3_ts_moreutils", "Dec 04 14:53:27.425281 "),
        ("heldout3/h3_buildkit_steps", "#7 0.237 "),
        ("heldout3/h3_journal_prefix", "Dec 04 10:12:02 host myapp[4242]: "),
        ("heldout3/h3_step_counter", "[step 2/9] "),
        ("heldout3/h3_elapsed_prefix", "   0.274s "),
    ],
)
def test_changing_prefix_is_cut_and_the_traceback_stays_whole(name: str, prefix: str, tmp_path: Path) -> None:
    s = lay_out(name, tmp_path)
    lines = s.output.split("\n")
    assert any(ln.startswith(prefix + "  File ") for ln in lines)
    assert any(ln.startswith('  File "') for ln in strip_prefixes(lines))  # indentation kept after the cut
    frames = parse_output(s.output, cwd=s.cwd, workspace=s.workspace)
    trace = primary_frame(frames).trace
    assert len([f for f in frames if f.trace == trace and f.resolved]) == 2  # one traceback, not one per line


@pytest.mark.parametrize("name", ["asan_heap_overflow", "eslint_stylish", "gcc", "valgrind_invalid_read", "rust_backtrace"])
def test_frame_numbers_and_position_rows_are_not_prefixes(name: str, tmp_path: Path) -> None:
    lines = lay_out(name, tmp_path).output.split("\n")
    assert strip_changing_prefixes(lines) == lines
