"""Terminal output (tracebacks, compiler and linter output) -> structured frames.

Each recogniser (one module per output family) is a function over the list of
lines that claims the lines it understands and returns "traces": a stack trace
(several frames, outermost first) or a single diagnostic. Recognisers run from
the most specific to the generic `path:line[:col]: message`, so a line is read
once by the parser that knows its format best. Paths are resolved against the
workspace at the end; `rank` decides which frame is the one to fix.
"""

from __future__ import annotations

from pathlib import Path

from .arrow import parse_arrow
from .generic import parse_generic
from .go import parse_go_panic
from .jvm import parse_jvm
from .make_shell import parse_make_shell
from .model import Frame, Parser, Severity, Trace
from .node import parse_node
from .pytest import parse_pytest
from .python import parse_python
from .rank import primary_frame, stack_severities
from .resolve import Resolver, column_of, make_dirs
from .rust import parse_rust_panic
from .text import strip_ansi, truncate_output
from .tsc import parse_tsc_kotlin

__all__ = ["Frame", "Severity", "parse_output", "primary_frame", "strip_ansi", "truncate_output"]

# Most specific first: a generic "path:line:" would otherwise eat pytest's location lines.
PARSERS: tuple[Parser, ...] = (
    parse_pytest,
    parse_python,
    parse_rust_panic,
    parse_arrow,
    parse_go_panic,
    parse_jvm,
    parse_node,
    parse_tsc_kotlin,
    parse_make_shell,
    parse_generic,
)


def parse_output(text: str, *, cwd: Path, workspace: Path) -> list[Frame]:
    """Frames of every traceback and diagnostic in `text`, in output order.

    Within a stack trace frames go outermost first (as Python prints them), so
    the last frame of a trace is the deepest. The deepest user frame of each
    trace (and its innermost frame) carry severity "error"; callers are "info"."""
    lines = strip_ansi(text).split("\n")
    taken: set[int] = set()
    traces: list[Trace] = []
    for parser in PARSERS:
        try:
            traces.extend(parser(lines, taken))
        except Exception:  # a recogniser bug must not cost the user the other frames
            continue
    traces.sort(key=lambda t: t.start)
    resolver = Resolver(cwd, workspace)
    dirs = make_dirs(lines, resolver.cwd)
    out: list[Frame] = []
    for n, trace in enumerate(traces):
        frames: list[Frame] = []
        for raw in trace.frames:
            path, library, rel = resolver.resolve(raw, dirs[raw.at] if raw.at < len(dirs) else resolver.cwd)
            frames.append(
                Frame(
                    path=path, line=raw.line, column=column_of(raw, path), function=raw.function,
                    message=raw.message, severity=raw.severity, library=library, resolved=rel, trace=n,
                )
            )
        if trace.stack:
            stack_severities(frames, [len(s) for s in trace.sections] or [len(frames)])
        out.extend(frames)
    return out


