"""Source context for one location: the enclosing definition, the file's
outline and imports, and where the symbols used on the failing line are defined.

Reading is the only I/O (`read_source`); the rest works on text. Without a
grammar for the file every function degrades to a window of lines."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from pydantic import BaseModel, Field

from qwen_lsp.files import BINARY_SNIFF_BYTES, inside, read_text
from qwen_lsp.context.callsites import elide_docstrings
from qwen_lsp.context.treesitter import CONTAINER_KINDS, Definition, definitions, identifiers, imports, language_for, parse

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 2_000_000  # bigger files are generated or data; never put them in a prompt

ReadFile = Callable[[str], str | None]
# name -> [(workspace-relative path, definition)], e.g. from the repo map's tags.
Lookup = Callable[[str], list[tuple[str, Definition]]]


class Snippet(BaseModel):
    path: str
    start_line: int  # 1-based, inclusive
    end_line: int
    title: str  # "def load(path)", "lines 10-40"
    text: str


@dataclass(frozen=True)
class Focus:
    """The failing lines of one file, with what one parse of that file found."""

    relpath: str
    text: str
    lang: str | None  # None when the file has no grammar or did not parse
    defs: list[Definition]
    line: int  # 1-based, inside the file
    end_line: int


class SourceContext(BaseModel):
    path: str
    language: str | None
    line: int | None
    total_lines: int
    imports: list[str] = Field(default_factory=list)
    outline: str = ""
    focus: Snippet | None = None
    related: list[Snippet] = Field(default_factory=list)


def read_source(workspace: Path, relpath: str, read_file: ReadFile | None = None) -> str | None:
    """Text of a workspace file: the editor's buffer when it has one, else disk.

    None for a missing, unreadable, binary or huge file, and for anything outside the
    workspace once symlinks are resolved (the same rule as the tools). A file that is not
    UTF-8 comes decoded with replacement characters."""
    rel = inside(workspace, relpath)
    if rel is None:
        return None
    if read_file is not None:
        try:
            text = read_file(rel)
        except Exception:
            log.debug("the buffer reader failed for %s; reading disk", relpath, exc_info=True)
            text = None
        if text is not None:  # a buffer gets the limit a file on disk gets
            return text if "\x00" not in text[:BINARY_SNIFF_BYTES] and len(text) <= MAX_FILE_BYTES else None
    found = read_text(Path(workspace) / rel, max_bytes=MAX_FILE_BYTES)
    return found.text if found is not None else None


def outline(defs: Iterable[Definition]) -> str:
    """Signatures only, indented by nesting, each with its line number."""
    return "\n".join(f"{d.line:>5}: {'    ' * d.depth}{d.signature}" for d in defs)


def enclosing(defs: list[Definition], line: int, *, max_lines: int | None = None) -> Definition | None:
    """The innermost definition around `line` (no longer than max_lines if given)."""
    best = None
    for d in defs:
        if d.line <= line <= d.end_line and (max_lines is None or d.end_line - d.line + 1 <= max_lines):
            if best is None or (d.end_line - d.line) <= (best.end_line - best.line):
                best = d
    return best


def line_window(text: str, line: int, radius: int = 20) -> Snippet:
    lines = text.splitlines()
    line = min(max(1, line), max(1, len(lines)))
    start, end = max(1, line - radius), min(len(lines), line + radius)
    return Snippet(path="", start_line=start, end_line=end, title=f"lines {start}-{end}", text="\n".join(lines[start - 1 : end]))


def _slice(text: str, start: int, end: int) -> str:
    return "\n".join(text.splitlines()[start - 1 : end])


def focus(text: str, lang: str | None, line: int, *, defs: list[Definition] | None = None, max_lines: int = 150) -> Snippet:
    """The enclosing function/class when it is short enough, else a window around the line."""
    if lang is not None:
        defs = defs if defs is not None else definitions(text, lang)
        d = enclosing(defs, line, max_lines=max_lines)
        if d is not None:
            # Docstrings cut to their first line: the body is what matters (unless the failure is in one).
            body = elide_docstrings(text.splitlines(), parse(text, lang), lang, d.line, d.end_line, keep=line)
            return Snippet(path="", start_line=d.line, end_line=d.end_line, title=d.signature, text=body)
    return line_window(text, line, radius=min(40, max_lines // 2))


# Words every language uses that are never worth looking up.
_NOISE = {
    "self", "this", "cls", "super", "true", "false", "null", "nil", "none", "None", "True", "False", "len", "str", "int",
    "print", "range", "new", "return", "err", "ok", "Ok", "Err", "Some", "i", "j", "k", "x", "y", "_",
}


def referenced_names(text: str, lang: str | None, start_line: int, end_line: int | None = None) -> list[str]:
    """Identifiers used on the given lines, in order of first use."""
    end_line = end_line or start_line
    names: list[str] = []
    if lang is not None and (tree := parse(text, lang)) is not None:
        found = [n for n, ln in identifiers(tree, lang, start_line, end_line) if start_line <= ln <= end_line]
    else:
        import re

        found = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", _slice(text, start_line, end_line))
    for n in found:
        if n not in names and n not in _NOISE and len(n) > 1:
            names.append(n)
    return names


def source_context(
    workspace: Path,
    relpath: str,
    line: int | None,
    *,
    end_line: int | None = None,
    read_file: ReadFile | None = None,
    lookup: Lookup | None = None,
    max_related: int = 6,
    related_max_lines: int = 40,
) -> SourceContext | None:
    """Everything worth knowing around `relpath:line`; None when the file cannot be read."""
    text = read_source(workspace, relpath, read_file)
    if text is None:
        return None
    lang = language_for(relpath)
    total = len(text.splitlines())
    tree = parse(text, lang) if lang else None
    defs = definitions(text, lang, tree) if lang and tree is not None else []
    ctx = SourceContext(
        path=relpath, language=lang if tree is not None else None, line=line, total_lines=total,
        imports=imports(text, lang, tree) if lang and tree is not None else [],
        outline=outline(defs),
    )
    if line is None:
        return ctx
    line = min(max(1, line), max(1, total))
    where = Focus(relpath, text, ctx.language, defs, line, end_line or line)
    snip = focus(text, ctx.language, line, defs=defs)
    ctx.focus = snip.model_copy(update={"path": relpath})
    read: ReadFile = partial(read_source, workspace, read_file=read_file)
    ctx.related = _related(where, ctx.focus, lookup, read, max_related, related_max_lines)
    return ctx


def _related(
    where: Focus, shown: Snippet, lookup: Lookup | None, read: ReadFile, max_related: int, max_lines: int
) -> list[Snippet]:
    """Definitions of the names used on the failing lines: same file first, then the workspace
    (`read` gives a workspace file's text). `shown` is already in the prompt: not repeated."""
    out: list[Snippet] = []
    seen: set[tuple[str, int]] = set()

    def covered(path: str, d: Definition) -> bool:
        return path == where.relpath and shown.start_line <= d.line <= shown.end_line

    texts: dict[str, str | None] = {where.relpath: where.text}
    for name in referenced_names(where.text, where.lang, where.line, where.end_line):
        if len(out) >= max_related:
            break
        candidates = [(where.relpath, d) for d in where.defs if d.name == name]
        if not candidates and lookup is not None:
            try:
                candidates = lookup(name)[:3]
            except Exception:
                log.debug("definition lookup failed for %s", name, exc_info=True)
                candidates = []
        for path, d in candidates:
            if (path, d.line) in seen or covered(path, d) or len(out) >= max_related:
                continue
            seen.add((path, d.line))
            if path not in texts:
                texts[path] = read(path)
            body = texts[path]
            if body is None:
                continue
            end = min(d.end_line, d.line + max_lines - 1)
            if d.kind in CONTAINER_KINDS and d.end_line - d.line + 1 > max_lines:
                # A big class: its header and member signatures say more than its first lines.
                member_sigs = "\n".join(
                    f"    {m.signature}" for m in definitions(body, language_for(path) or "") if d.line < m.line <= d.end_line and m.depth == d.depth + 1
                )
                snippet_text = d.signature + "\n" + member_sigs
            else:
                snippet_text = _slice(body, d.line, end) + ("\n    ..." if end < d.end_line else "")
            out.append(Snippet(path=path, start_line=d.line, end_line=end, title=d.signature, text=snippet_text))
    return out


def fence_language(relpath: str) -> str:
    lang = language_for(relpath)
    return {"cpp": "cpp", "tsx": "tsx", "typescript": "ts", "javascript": "js"}.get(lang or "", lang or "")


def render_snippet(s: Snippet, *, heading: str = "####") -> str:
    return f"{heading} {s.path} lines {s.start_line}-{s.end_line}: {s.title}\n```{fence_language(s.path)}\n{s.text}\n```"


def render_context(ctx: SourceContext) -> str:
    """Markdown for the files section when the whole file does not fit.

    Most specific first (the failing definition, what it uses, imports), the
    outline last: a budget cut then only shortens the outline."""
    parts = [f"### {ctx.path} ({ctx.total_lines} lines, excerpt)"]
    if ctx.focus is not None:
        parts.append(render_snippet(ctx.focus))
    if ctx.related:
        parts.append("Definitions used there:\n" + "\n".join(render_snippet(s) for s in ctx.related))
    if ctx.imports:
        parts.append("Imports:\n```" + fence_language(ctx.path) + "\n" + "\n".join(ctx.imports) + "\n```")
    if ctx.outline:
        parts.append("Outline (line: signature):\n```\n" + ctx.outline + "\n```")
    return "\n\n".join(parts)
