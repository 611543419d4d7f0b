"""Terminal output (tracebacks, compiler and linter output) -> structured frames.

Each recogniser (one module per output family) is a function over the list of
lines that claims the lines it understands and returns "traces": a stack trace
(several frames, outermost first) or a single diagnostic. Recognisers run from
the most specific to the generic `path:line[:col]: message`, so a line is read
once by the parser that knows its format best. Paths are resolved against the
workspace at the end; `rank` decides which frame is the one to fix.

Before any recogniser: terminal escapes go, per-line prefixes are stripped (a
fixed `web-1  | ` or a value that changes on every line, a timestamp or a step
counter), and JSON log lines are decoded (`structured`), so an escaped traceback
reads like the one a terminal shows. `severity` is the one vocabulary every
recogniser reads a line's severity with.
"""

from __future__ import annotations

from pathlib import Path

from bisect import bisect_right
from functools import partial

from .arrow import parse_arrow
from .cmake import parse_cmake
from .generic import parse_generic
from .go import parse_go_panic, parse_go_race, parse_go_test
from .jvm import parse_jvm
from .lint import parse_compact, parse_grouped, parse_shellcheck
from .locate import file_name, find_locations
from .make_shell import parse_make_shell
from .model import Frame, Parser, Raw, Severity, Trace
from .native import parse_assert, parse_sanitizer, parse_valgrind
from .node import parse_node, parse_node_tap
from .php import parse_php
from .pytest import parse_pytest
from .python import parse_doctest, parse_python
from .rank import primary_frame, rank_trace
from .resolve import Resolver, column_of, make_dirs
from .ruby import parse_ruby
from .rust import parse_rust_panic
from .structured import decode_structured
from .text import strip_ansi, strip_prefixes, truncate_output, unwrap_terminal
from .tsc import parse_tsc_kotlin

__all__ = ["Frame", "Severity", "parse_output", "primary_frame", "strip_ansi", "truncate_output"]

# Most specific first: a generic "path:line:" would otherwise eat pytest's location lines. The generic
# location finder runs after all of them (it needs the file system, see parse_output).
PARSERS: tuple[Parser, ...] = (
    parse_pytest,
    parse_doctest,
    parse_python,
    parse_rust_panic,
    parse_arrow,
    parse_go_panic,
    parse_go_race,
    parse_jvm,
    parse_node,
    parse_node_tap,
    parse_sanitizer,
    parse_valgrind,
    parse_assert,
    parse_php,
    parse_ruby,
    parse_cmake,
    parse_shellcheck,
    parse_grouped,
    parse_compact,
    parse_go_test,
    parse_tsc_kotlin,
    parse_make_shell,
    parse_generic,
)


# Past this many lines an output is cut around its failure first (head, tail and a window, see
# truncate_output): the work per run stays bounded whatever a build or a log prints.
MAX_LINES = 20_000


def parse_output(
    text: str, *, cwd: Path, workspace: Path, max_lines: int = MAX_LINES, command: str | None = None
) -> list[Frame]:
    """Frames of every traceback and diagnostic in `text`, in output order.

    Within a stack trace frames go outermost first (as Python prints them), so
    the last frame of a trace is the deepest. The deepest user frame of each
    trace (and its innermost frame) carry severity "error"; callers are "info".
    Frames the generic location finder guessed are marked `guessed`."""
    text = strip_ansi(text)
    if text.count("\n") >= max_lines:
        text = truncate_output(text, max_lines=max_lines)
    lines = unwrap_terminal(decode_structured(strip_prefixes(text.split("\n"))))
    taken: set[int] = set()
    traces: list[Trace] = []
    resolver = Resolver(cwd, workspace)
    for parser in PARSERS:
        try:
            traces.extend(parser(lines, taken))
        except Exception:  # a recogniser bug must not cost the user the other frames
            continue
    # The general locator last: where the recognisers were silent, and on their message lines that gave no frame.
    in_ws: dict[str, bool] = {}

    def in_workspace(raw: Raw) -> bool:
        if raw.library_hint:
            return False
        if raw.path not in in_ws:
            in_ws[raw.path] = resolver.lookup(raw.path, resolver.cwd) is not None
        return in_ws[raw.path]

    open_lines: set[int] = set()  # lines of traces with no workspace frame: the locator may read their message
    settled = False
    for t in traces:
        if any(in_workspace(raw) for raw in t.frames):
            settled = True
        elif t.frames:
            open_lines.update(range(max(0, min(t.start, t.frames[0].at) - 2), max(raw.at for raw in t.frames) + 4))
    open_lines -= {raw.at for t in traces for raw in t.frames}
    known = {(file_name(raw.path), raw.line) for t in traces for raw in t.frames}
    try:
        traces.extend(
            find_locations(
                lines, taken, partial(resolver.lookup, cwd=resolver.cwd), command, open_lines, known,
                partial(resolver.source_line, cwd=resolver.cwd), settled,
            )
        )
    except Exception:
        pass
    starts = sorted(t.start for t in traces if t.frames)
    traces.sort(key=lambda t: _order(t, starts))
    dirs = make_dirs(lines, resolver.cwd)
    resolved: dict[tuple[str, Path, str | None, str | None, bool], tuple[str, bool, str | None]] = {}
    out: list[Frame] = []
    for n, trace in enumerate(traces):
        frames: list[Frame] = []
        for raw in trace.frames:
            cwd_here = dirs[raw.at] if raw.at < len(dirs) else resolver.cwd
            key = (raw.path, cwd_here, raw.java_class, raw.dir_hint, raw.library_hint)
            if key not in resolved:
                resolved[key] = resolver.resolve(raw, cwd_here)
            path, library, rel = resolved[key]
            frames.append(
                Frame(
                    path=path, line=raw.line, column=column_of(raw, path), function=raw.function,
                    message=raw.message, severity=raw.severity, library=library, resolved=rel, trace=n,
                    guessed=trace.guessed,
                )
            )
        sizes = [len(s) for s in trace.sections] or [len(frames)]
        rank_trace(frames, sizes, [raw.related for raw in trace.frames], stack=trace.stack, severity=trace.severity)
        out.extend(frames)
    return out


def _order(trace: Trace, starts: list[int]) -> float:
    """Output order, except that a report quoting another failure in its body (a go test message
    holding a child's traceback, a doctest report) goes after it: the quoted failure is the cause."""
    if trace.end is None:
        return trace.start
    k = bisect_right(starts, trace.end) - 1  # the last failure starting inside the body
    return starts[k] + 0.5 if k >= 0 and starts[k] > trace.start else trace.start
