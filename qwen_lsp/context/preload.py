"""The part of `prompt.assemble` that does not depend on the failure, done ahead: while the user's
command still runs (qfix's warm-up thread), or in a process that stays up between fixes.

That part is the workspace's tag index, from its snapshot, and the reference graph ranking walks
(snapshot.py, ranking.stored_graph): together most of a warm assembly on a large repository; and
the parser queries of the workspace's main language, compiled once per process. Index and graph
are kept in a small per-process memo, and the next assembly for the same workspace and cache reuses it
only if it is still what `repomap.build_index` would give: every listed file and every walked folder
and .gitignore stats as the snapshot recorded it, with the snapshot's own rule for stamps too recent
to trust. That check is redone after the command ran, so a file the command wrote is seen.

Nothing here reads what the command's own writes could change beyond those stamps (git's working
tree diff, file texts, the traceback): assembly reads those after the failure, as before.

A first index build of a large workspace takes a while (tens of seconds for 25,000 files): `building`
says how far one under way in this process is, and `last_build` how long the last one took, for
qfix to show on a terminal."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from qwen_lsp.context.callsites import call_sites, elide_docstrings
from qwen_lsp.context.ranking import RefGraph, stored_graph
from qwen_lsp.context.repomap import TagIndex, build_index, index_if_unchanged, load_snapshot, snapshot_unchanged
from qwen_lsp.context.snapshot import Snapshot
from qwen_lsp.context.treesitter import definitions, identifiers, imports, language_for, parse
from qwen_lsp.settings import Settings

log = logging.getLogger(__name__)

MAX_WORKSPACES = 4  # a process serving a few workspaces keeps each one's index (a large one is tens of MB)


@dataclass
class _Warm:
    snap: Snapshot  # what `index` came from, whole: its stamps decide whether it still holds
    index: TagIndex
    graph: RefGraph


_Key = tuple[str, str]  # (workspace, cache dir), absolute
_memo: dict[_Key, _Warm] = {}
_locks: dict[_Key, threading.Lock] = {}
_guard = threading.Lock()
_building: dict[_Key, tuple[int, int]] = {}  # builds under way: (files parsed, files to parse)
_built: dict[_Key, tuple[int, float]] = {}  # the last build that parsed files: (files parsed, seconds)


def preload(workspace: Path, settings: Settings) -> None:
    """Load `workspace`'s tag index and reference graph now, for the next `prompt.assemble` of it in
    this process. A snapshot that is missing or out of date is brought up to date first. Never
    raises: whatever fails here, the assembly does again and reports."""
    key = _key(workspace, settings.cache_dir)
    try:
        with _lock(key):
            warm = _memo.get(key)
            if warm is not None and snapshot_unchanged(key[0], warm.snap):
                return
            warm = _load(key)
            if warm is not None:
                index = warm.index
            else:  # changed since the snapshot: build_index re-reads what changed and rewrites it
                index = _build(key)
                warm = _load(key)
                if warm is None:  # a file too recently changed to trust its stamp: nothing to keep, but
                    stored_graph(index)  # the graph of these tags is stored for the assembly to read back
            _remember(key, warm)
            _compile_queries(index)
    except Exception:  # noqa: BLE001 - a head start, not a step the fix depends on
        log.debug("preloading %s failed", workspace, exc_info=True)


def tags_and_graph(workspace: Path, cache_dir: Path) -> tuple[TagIndex, RefGraph | None]:
    """For `prompt.assemble`: the preloaded index and graph of `workspace` if they still hold (a
    preload still running is waited for, not repeated), else the index `build_index` gives now and
    no graph (ranking then reads or builds it)."""
    key = _key(workspace, cache_dir)
    with _lock(key):
        warm = _memo.get(key)
        if warm is not None:
            if snapshot_unchanged(key[0], warm.snap):
                return warm.index, warm.graph
            _remember(key, None)
    return _build(key), None


def building(workspace: Path, cache_dir: Path) -> tuple[int, int] | None:
    """(files parsed, files to parse) of an index build of `workspace` under way in this process
    that has files to parse, else None."""
    with _guard:
        return _building.get(_key(workspace, cache_dir))


def last_build(workspace: Path, cache_dir: Path) -> tuple[int, float] | None:
    """(files parsed, seconds) of this process's last index build of `workspace` that parsed files."""
    with _guard:
        return _built.get(_key(workspace, cache_dir))


def _build(key: _Key) -> TagIndex:
    """`build_index` of the workspace, its progress kept for `building` and `last_build`."""
    started = time.monotonic()
    parsed = [0]

    def progress(done: int, total: int) -> None:
        parsed[0] = total
        with _guard:
            _building[key] = (done, total)

    try:
        return build_index(Path(key[0]), cache_dir=Path(key[1]), progress=progress)
    finally:
        with _guard:
            _building.pop(key, None)
            if parsed[0]:
                _built[key] = (parsed[0], time.monotonic() - started)


def forget() -> None:
    """Drop every preloaded workspace (tests; a process that wants its memory back)."""
    with _guard:
        _memo.clear()


def _key(workspace: Path, cache_dir: Path) -> _Key:
    return os.path.abspath(workspace), os.path.abspath(cache_dir)


def _lock(key: _Key) -> threading.Lock:
    with _guard:
        return _locks.setdefault(key, threading.Lock())


def _load(key: _Key) -> _Warm | None:
    """The index and graph straight from the workspace's snapshot, if every file is as it recorded."""
    path, snap = load_snapshot(Path(key[0]), Path(key[1]))
    index = index_if_unchanged(key[0], snap, path) if snap is not None else None
    return _Warm(snap, index, stored_graph(index)) if snap is not None and index is not None else None


def _compile_queries(index: TagIndex) -> None:
    """Compile the tree-sitter queries an assembly runs on a file of the workspace's most common
    language (definitions, imports, identifiers, call sites, docstrings): each process compiles
    them once, ~40 ms for Python, which would otherwise come after the failure."""
    lang, _n = max(Counter(language_for(rel) for rel in index.files).items(), key=lambda kv: kv[1], default=(None, 0))
    tree = parse(" ", lang) if lang is not None else None
    if lang is None or tree is None:
        return
    definitions(" ", lang, tree)
    imports(" ", lang, tree)
    identifiers(tree, lang)
    call_sites(tree, lang, 1, 1)
    elide_docstrings([" "], tree, lang, 1, 1)


def _remember(key: _Key, warm: _Warm | None) -> None:
    with _guard:
        _memo.pop(key, None)
        if warm is None:
            return
        while len(_memo) >= MAX_WORKSPACES:
            _memo.pop(next(iter(_memo)))  # the least recently preloaded
        _memo[key] = warm
