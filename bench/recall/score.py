"""Is a function's code in a prompt? (pure; the recall bench's scoring rule)

The function counts as shown when the prompt holds a run of its code lines, in order, that
includes the mutated line and either starts at its `def` line or is at least MIN_RUN lines long
(the whole function when it is shorter). Code lines are the function's non-blank lines without
comments and docstrings, compared stripped. Prompt lines are compared stripped too, also without a
line-number gutter (`12 | x`, `12: x`), a diff marker (`+x`, `-x`) or a blame prefix (`… | x`), and
a run may skip up to MAX_GAP prompt lines between two of its lines (a diff's removed line, a
`...` marker), besides blank lines and the function's own docstring and comment lines. So a
repo-map signature, a traceback line or a lone `return x` somewhere does not count; the function's
body around the bug, or a diff hunk of it with its context lines, does; so does a diff hunk whose `@@ … @@` header is the function's `def` line (git
names the enclosing top-level function there) and which adds or keeps the mutated line.
"""

from __future__ import annotations

import ast
import re

MIN_RUN = 6
MAX_GAP = 8
_GUTTER = re.compile(r"^\s*\d+\s*[|:│]\s?(.*)$")


def code_lines(source: str, def_line: int, end_line: int) -> list[tuple[int, str]]:
    """(line number, stripped text) of the function's code from its `def` line: no blank lines,
    comments or docstrings (its own and those of what it nests)."""
    return function_lines(source, def_line, end_line)[0]


def function_lines(source: str, def_line: int, end_line: int) -> tuple[list[tuple[int, str]], frozenset[str]]:
    """code_lines(), and the stripped text of the function's other lines (docstrings, comments): a
    prompt may show them between two code lines."""
    lines = source.splitlines()
    skip: set[int] = set()
    try:
        tree = ast.parse(source)
    except SyntaxError:  # JavaScript (bench/recall/jsbuild.py): only its comments are skipped
        tree = ast.Module(body=[], type_ignores=[])
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str) and def_line <= body[0].lineno <= end_line:
            skip.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    out = []
    other: set[str] = set()
    for n in range(def_line, min(end_line, len(lines)) + 1):
        text = lines[n - 1].strip()
        if text and not text.startswith(("#", "//", "/*", "* ", "*/")) and text != "*" and n not in skip:
            out.append((n, text))
        elif text:
            other.add(text)
    return out, frozenset(other)


def forms(line: str) -> set[str]:
    """The ways a prompt line may show a code line."""
    text = line.strip()
    out = {text}
    if m := _GUTTER.match(line):
        out.add(m.group(1).strip())
    if text[:1] in "+-" and not text.startswith(("+++", "---")):
        out.add(text[1:].strip())
    if " | " in text:
        out.add(text.split(" | ", 1)[1].strip())
    out.discard("")
    return out


def shown(prompt: str, function: list[tuple[int, str]], mutated_line: int, other: frozenset[str] = frozenset()) -> bool:
    """Whether `prompt` shows `function` (from code_lines) around `mutated_line`, per the module rule.
    Blank prompt lines, and lines showing one of the function's `other` lines (function_lines: its
    docstrings and comments), are passed over without counting as a gap."""
    if not function:
        return False
    texts = [t for _, t in function]
    where: dict[str, list[int]] = {}
    for j, t in enumerate(texts):
        where.setdefault(t, []).append(j)
    try:
        m = next(j for j, (n, _) in enumerate(function) if n == mutated_line)
    except StopIteration:
        return False
    need = min(MIN_RUN, len(texts))
    # chains[i] = {j: (start j of the run, prompt index)} for runs ending at code line j on prompt line i
    ends: dict[int, dict[int, int]] = {}
    if _in_named_hunk(prompt, texts[0], texts[m]):
        return True
    code = set(texts)
    plines = [line for line in prompt.splitlines()
              if (f := forms(line)) and (f & code or not f & other)]
    for i, line in enumerate(plines):
        here: dict[int, int] = {}
        for form in forms(line):
            for j in where.get(form, ()):
                start = j
                for back in range(max(0, i - MAX_GAP - 1), i):
                    prev = ends.get(back, {}).get(j - 1)
                    if prev is not None:
                        start = min(start, prev)
                here[j] = min(here.get(j, j), start)
                if start <= m <= j and (start == 0 or j - start + 1 >= need):
                    return True
        if here:
            ends[i] = here
    return False


def _in_named_hunk(prompt: str, def_text: str, mutated: str) -> bool:
    """A diff hunk whose `@@ … @@` header is the function's `def` line (git's function context) and
    which adds or keeps the mutated line."""
    named = False
    for line in prompt.splitlines():
        text = line.strip()
        if text.startswith("@@"):
            header = text.split("@@", 2)[2].strip() if text.count("@@") >= 2 else ""
            named = bool(header) and (header == def_text or len(header) >= 20 and def_text.startswith(header))
        elif text.startswith("diff --git") or text.startswith("```"):
            named = False
        elif named and not text.startswith("-") and mutated in forms(line):
            return True
    return False
