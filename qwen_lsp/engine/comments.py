"""AI comments: instructions written in the code (`# qwen: make this async`).

    find_marked(text, path, markers)   the marked comments of a file (tree-sitter comment nodes only:
                                       a marker inside a string or a docstring is not an instruction)
    comment_task(path, chosen, others) the engine's instruction task for some of them
    strip_comments(change, comments)   the change with the instruction comments taken out

A marked comment is repository content like any other: finding one runs nothing; the front ends
offer an action and the engine runs only when the user picks it. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from qwen_lsp.context import treesitter
from qwen_lsp.engine.edits import unified_diff
from qwen_lsp.types import FileChange, Task, TaskKind

if TYPE_CHECKING:
    from tree_sitter import Node, Tree

DEFAULT_MARKERS = ("qwen:", "qwen!")
DOC_PREFIXES = ("///", "//!", "/**", "/*!")  # Rust/JSDoc documentation comments: documentation, not requests
MAX_COMMENT_CHARS = 2_000  # a longer "instruction" is a block of prose, not a request
NEAR_LINES = 10  # the focus of a comment attached to no definition: the lines after it
_OPENERS = re.compile(r"^\s*(?:#+|//+!?|/\*+!?|--+|;+|<!--|\*)\s?")
_CLOSERS = re.compile(r"\s*(?:\*+/|-->)\s*$")
_ATTACHED = re.compile(r"^\s*(?:$|@|#\[|#|//|/\*|\*)")  # blank, decorators, attributes, more comments


@dataclass(frozen=True)
class MarkedComment:
    """One instruction comment. Lines 1-based; characters are code points into their line."""

    path: str
    line: int
    end_line: int
    start_char: int
    end_char: int
    text: str  # the comment as written
    instruction: str  # what it asks: the marker and the comment delimiters taken off
    focus_start: int  # the enclosing code (a function, a class, or the lines after the comment)
    focus_end: int


def find_marked(text: str, path: str, markers: Sequence[str] = DEFAULT_MARKERS, *,
                focus: bool = True) -> list[MarkedComment]:
    """The comments of `text` (the file at workspace-relative `path`) that carry a marker right after
    their delimiter, in source order. Languages tree-sitter does not know have none. `focus=False`
    (a diagnostic needs no more) skips reading the definitions: focus_start/end are the comment's lines."""
    wanted = [m.lower() for m in markers if m.strip()]
    lowered = text.lower()
    if not wanted or not any(m in lowered for m in wanted):
        return []  # the common case: no parse
    lang = treesitter.language_for(path)
    tree = treesitter.parse(text, lang) if lang else None
    if tree is None or lang is None:
        return []
    source = text.encode("utf-8", "replace")
    lines = text.splitlines()
    defs = treesitter.definitions(text, lang) if focus and treesitter.has_definitions(lang) else []
    found = []
    for node in _marked_nodes(tree, text, lowered, wanted):
        raw = treesitter.node_str(node, source).rstrip("\r\n")
        if len(raw) > MAX_COMMENT_CHARS or raw.lstrip().startswith(DOC_PREFIXES):
            continue
        instruction = _instruction(raw, wanted)
        if instruction is None:
            continue
        line, end_line = node.start_point[0] + 1, node.start_point[0] + 1 + raw.count("\n")
        start_char = len(source[node.start_byte - node.start_point[1]:node.start_byte].decode("utf-8", "replace"))
        last = raw.rsplit("\n", 1)[-1]
        end_char = (start_char + len(last)) if line == end_line else len(last)
        trailing = bool(lines[line - 1][:start_char].strip())  # after code on its line: about that code
        focus_start, focus_end = _focus(lines, defs, line, end_line, trailing) if focus else (line, end_line)
        found.append(MarkedComment(path, line, end_line, start_char, end_char, raw, instruction, focus_start, focus_end))
    return found


def _marked_nodes(tree: Tree, text: str, lowered: str, markers: list[str]) -> list[Node]:
    """The comment nodes holding an occurrence of a marker, in source order, each once."""
    starts = sorted({m.start() for marker in markers for m in re.finditer(re.escape(marker), lowered)})
    nodes: dict[int, Node] = {}
    done, byte = 0, 0
    for start in starts:  # character offsets -> byte offsets, walking forward once
        byte += len(text[done:start].encode("utf-8", "replace"))
        done = start
        node = treesitter.comment_at(tree, byte)
        if node is not None:
            nodes.setdefault(node.start_byte, node)
    return [nodes[k] for k in sorted(nodes)]


def _instruction(raw: str, markers: list[str]) -> str | None:
    """The request a comment makes when its first words are a marker; else None."""
    body = [_CLOSERS.sub("", _OPENERS.sub("", ln, count=1)).strip() for ln in raw.splitlines()]
    body = [b for b in body if b]
    if not body:
        return None
    first = body[0].lower()
    for marker in markers:
        if first.startswith(marker):
            rest = " ".join([body[0][len(marker):].strip(), *body[1:]]).strip()
            return rest or None
    return None


def _focus(lines: list[str], defs: list[treesitter.Definition], line: int, end_line: int,
           trailing: bool = False) -> tuple[int, int]:
    """The code a comment is about: the definition right below it (only blank lines, decorators and
    comments between), else the innermost one holding it, else the lines after it."""
    below = next((d for d in defs if d.line > end_line), None)
    if below is not None and not trailing and all(_ATTACHED.match(lines[n - 1]) for n in range(end_line + 1, below.line)):
        return line, below.end_line
    holding = [d for d in defs if d.line <= line and end_line <= d.end_line]
    if holding:
        inner = max(holding, key=lambda d: (d.depth, d.line))
        return inner.line, inner.end_line
    return line, min(max(len(lines), end_line), end_line + NEAR_LINES)


def comment_task(path: str, chosen: Sequence[MarkedComment], others: Sequence[MarkedComment] = (),
                 marker: str = DEFAULT_MARKERS[0]) -> Task:
    """The instruction task for `chosen` (one file's), with the file's `others` as context only."""
    if not chosen:
        raise ValueError("no instruction comment chosen")
    rows = [f"Do what the instruction comment{'s' if len(chosen) > 1 else ''} in {path} ask{'' if len(chosen) > 1 else 's'}:"]
    rows += [f"- line {c.line} (the code at lines {c.focus_start}-{c.focus_end}): {c.instruction}" for c in chosen]
    rows.append(f"Leave the `{marker}` instruction comments themselves as they are: they are removed for you.")
    rest = [c for c in others if c not in chosen]
    if rest:
        rows.append("Other instruction comments in the file, for context only (not to be done now):")
        rows += [f"- line {c.line}: {c.instruction}" for c in rest]
    return Task(kind=TaskKind.instruction, description="\n".join(rows), path=path,
                start_line=min(c.focus_start for c in chosen), end_line=max(c.focus_end for c in chosen))


def strip_comments(change: FileChange, comments: Sequence[MarkedComment]) -> FileChange:
    """`change` with each of `comments` (of its file) removed from the updated text: the comment and
    the spaces before it, and its line when nothing else is left on it. A comment not found as
    written (the model changed it), or whose removal would break the syntax, stays."""
    if change.created or change.updated == change.original:
        return change  # nothing was done: the instruction stays
    text = change.updated
    lang = treesitter.language_for(change.path)
    for comment in sorted(comments, key=lambda c: -c.line):
        if comment.path != change.path:
            continue
        cut = _without(text, comment)
        if cut is not None and (lang is None or _parses(cut, lang) or not _parses(text, lang)):
            text = cut
    if text == change.updated:
        return change
    return change.model_copy(update={"updated": text, "diff": unified_diff(change.path, change.original, text)})


def _without(text: str, comment: MarkedComment) -> str | None:
    """`text` without the occurrence of the comment nearest its original line, or None."""
    starts = [m.start() for m in re.finditer(re.escape(comment.text), text)]
    if not starts:
        return None
    at = min(starts, key=lambda s: abs(text.count("\n", 0, s) + 1 - comment.line))
    end = at + len(comment.text)
    line_start = text.rfind("\n", 0, at) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    before, after = text[line_start:at], text[end:line_end]
    if not before.strip() and not after.strip():  # alone on its line(s): the line goes
        return text[:line_start] + text[min(len(text), line_end + 1):]
    return text[:line_start] + before.rstrip() + after + text[line_end:] if not after.strip() else \
        text[:at] + text[end:].lstrip(" \t")


def _parses(text: str, lang: str) -> bool:
    tree = treesitter.parse(text, lang)
    return tree is None or not tree.root_node.has_error
