"""The live index of one workspace, for a long-lived process (the language server).

The one-shot path (`repomap.build_index`) re-lists and re-stats the workspace and turns the disk
snapshot back into objects on every request. Here the tags stay in memory and are updated file by
file as the editor reports changes (open buffers on didChange/didSave, files on disk from
workspace/didChangeWatchedFiles or an mtime rescan). What does not depend on the request is built
once per index version: the reference graph. The rendered map is memoised per focus and version,
and git histories per HEAD and file state. A warm request then costs ranking of one focus, not a
rebuild of the workspace.

Thread-safety: the server's event loop reports changes while the engine thread reads; one lock
guards the state, and buffer texts are tagged lazily (at the next read), so a keystroke costs a
dict assignment, not a parse.

Buffers get the same size limit as files on disk (repomap.MAX_FILE_BYTES): a bigger one is not
tagged at all, and `not_indexed` names it so the prompt can say so. Parsing and queries are
bounded per file (treesitter.PARSE_BUDGET_SECONDS, QUERY_SLICE_BYTES), so the thread that tags
never holds the GIL long enough to stall the server's event loop."""

from __future__ import annotations

import gc
import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from qwen_lsp.context.callees import ParseCache
from qwen_lsp.context.git_context import GitCache
from qwen_lsp.context.mapmemo import MapMemo
from qwen_lsp.context.ranking import RefGraph, build_graph, focus_imports, tags_shape, update_graph
from qwen_lsp.context.repomap import (
    MAX_FILE_BYTES, FileTags, TagIndex, build_index, extract_tags, index_from, list_files,
)
from qwen_lsp.context.treesitter import language_for
from qwen_lsp.heap import release_free_memory


log = logging.getLogger(__name__)


@dataclass
class _State:
    tags: dict[str, FileTags] = field(default_factory=dict)
    stamps: dict[str, tuple[int, int]] = field(default_factory=dict)  # rel -> (mtime_ns, size) of the disk version
    pending: dict[str, str | None] = field(default_factory=dict)  # rel -> buffer text, or None to re-read disk
    version: int = 0
    # Files whose tags changed since the graph was built, with their tags then (None: they were absent).
    dirty: dict[str, FileTags | None] = field(default_factory=dict)


class WorkspaceIndex:
    """Tags of a workspace kept current by change events; see the module docstring."""

    def __init__(self, workspace: Path, cache_dir: Path | None = None) -> None:
        self.workspace = Path(workspace)
        self.cache_dir = cache_dir
        self.git = GitCache()
        self.parses = ParseCache()  # the callee walk's parsed files
        self._lock = threading.RLock()
        self._state = _State()
        self._loaded = False
        self._loader: threading.Thread | None = None
        self._index: TagIndex | None = None  # built from _state, per version
        self._index_version = -1
        self._graph: RefGraph | None = None
        self._graph_version = -1
        self._map_memo = MapMemo()  # maps across versions: most edits change nothing a map shows
        self._imports: dict[str, tuple[str | None, frozenset[str]]] = {}  # rel -> (text, names it imports)
        self._too_large: dict[str, int] = {}  # open buffers over the size limit -> their size (characters)

    # -- loading and change events ---------------------------------------------------------

    def load(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Tags of every file (from the disk tag cache where unchanged). Call off the event loop.
        `progress(done, total)` hears of the files parsed, when there are any, and once more
        (done == total) when the index is in place."""
        totals: list[int] = []

        def parsed(done: int, total: int) -> None:
            totals.append(total)
            if progress is not None and done < total:  # the last is said when the index is in place
                progress(done, total)

        # Lists via the snapshot when unchanged.
        index = build_index(self.workspace, cache_dir=self.cache_dir, progress=parsed)
        stamps = {rel: s for rel in index.files if (s := self._stamp(rel)) is not None}
        with self._lock:
            pending = self._state.pending  # changes reported while loading still apply
            self._state = _State(tags=dict(index.files), stamps=stamps, pending=pending, version=self._state.version + 1)
            self._index, self._graph = index, None  # a whole new index: the graph is rebuilt
            self._loaded = True
        # Tens of thousands of long-lived tag objects: keep them out of the collector's full
        # passes, which otherwise add 50-80 ms to whichever request happens to trigger one.
        gc.freeze()
        release_free_memory()  # a first build's temporaries (its tags before the snapshot, the snapshot's parts)
        if progress is not None and totals:
            progress(totals[-1], totals[-1])

    @property
    def loaded(self) -> bool:
        return self._loaded

    def start_loading(self, progress: Callable[[int, int], None] | None = None) -> None:
        """`load` on a background thread (the language server's start-up): the first fix finds the
        index warm. A read before it is done waits for it instead of loading twice."""
        with self._lock:
            if self._loader is not None:
                return
            self._loader = threading.Thread(target=self._load_logged, args=(progress,), name="qwen-index", daemon=True)
        self._loader.start()

    def _load_logged(self, progress: Callable[[int, int], None] | None) -> None:
        try:
            self.load(progress)
        except Exception:  # the next read loads again, synchronously, and its caller copes
            log.warning("indexing %s failed", self.workspace, exc_info=True)

    def set_text(self, rel: str, text: str) -> None:
        """An open buffer's text (didOpen/didChange): tagged at the next read, unless it is over
        the size limit (then it is left out of the index, as a file that size on disk is)."""
        if language_for(rel) is None:
            return
        too_large = buffer_too_large(text)
        with self._lock:
            was_too_large = self._too_large.pop(rel, None) is not None
            if too_large:
                self._too_large[rel] = len(text)
                if was_too_large:
                    return  # still out of the index: nothing to redo on each keystroke
            self._state.pending[rel] = text
            self._state.version += 1

    def not_indexed(self) -> dict[str, int]:
        """Open buffers left out of the index because they are over the size limit, with their size."""
        with self._lock:
            return dict(self._too_large)

    def file_changed(self, rel: str) -> None:
        """A file created, changed or deleted on disk (didSave, didChangeWatchedFiles)."""
        if language_for(rel) is None:
            return
        with self._lock:
            self._too_large.pop(rel, None)  # the disk version now; the disk limit applies to it
            self._state.pending[rel] = None
            self._state.version += 1

    def rescan(self) -> list[str]:
        """For clients without file watching: compare every file's mtime and size with what was
        indexed and queue what differs. Returns the files that changed. Call off the event loop."""
        with self._lock:
            known = dict(self._state.stamps)
        current = {rel for rel in list_files(self.workspace)}
        changed = [rel for rel in current if self._stamp(rel) != known.get(rel)]
        changed += [rel for rel in known if rel not in current]
        for rel in changed:
            self.file_changed(rel)
        return sorted(changed)

    # -- reads -----------------------------------------------------------------------------

    @property
    def version(self) -> int:
        with self._lock:
            return self._state.version

    def tag_index(self) -> TagIndex:
        """The current tags (pending changes applied), rebuilt into a TagIndex once per version."""
        self._ensure_loaded()
        with self._lock:
            self._apply_pending()
            if self._index_version != self._state.version:
                self._index = _next_index(self._index, self._state.tags, self._state.dirty)
                self._index_version = self._state.version
            assert self._index is not None
            return self._index

    def _ensure_loaded(self) -> None:
        # Never called with the lock held: the loader thread takes it to publish what it loaded.
        if not self._loaded:
            loader = self._loader
            if loader is not None and loader is not threading.current_thread():
                loader.join()
            if not self._loaded:
                self.load()

    def graph(self) -> RefGraph:
        """The reference graph of the current tags: rebuilt when a file's shape changed, else only
        the changed files' edges are replaced (see repomap.update_graph)."""
        self._ensure_loaded()
        with self._lock:
            index = self.tag_index()
            if self._graph_version != self._index_version:
                dirty = self._state.dirty
                same_shape = self._graph is not None and all(
                    before is not None and rel in index.files and tags_shape(before) == tags_shape(index.files[rel])
                    for rel, before in dirty.items()
                )
                if same_shape and self._graph is not None:
                    # A file's rows are made of its reference counts only (its shape unchanged): files
                    # referencing as they did (an edit in a comment, a string, a line moved) leave the
                    # graph as it is, the same object, so nothing keeps a copy per keystroke.
                    changed = sorted(rel for rel, before in dirty.items() if before is None or before.refs != index.files[rel].refs)
                    if changed:
                        self._graph = update_graph(self._graph, index, changed)
                else:
                    self._graph = build_graph(index)
                self._state.dirty = {}
                self._graph_version = self._index_version
            assert self._graph is not None
            return self._graph

    def repo_map(
        self, budget: int, *, focus_files: Iterable[str] = (), mentioned: Iterable[str] = (),
        exclude: Iterable[str] = (), read_file=None,
    ) -> str:
        """`repomap.repo_map` over the live index, memoised while what it reads is unchanged (mapmemo.py)."""
        focus = tuple(dict.fromkeys(focus_files))
        self._ensure_loaded()
        with self._lock:
            graph = self.graph()
            index = self.tag_index()
        imported = self._imported(focus, index, read_file)
        return self._map_memo.repo_map(index, graph, budget, focus_files=focus, mentioned=mentioned, exclude=exclude,
                                       imported=imported)

    # -- internals -------------------------------------------------------------------------

    def _imported(self, focus: tuple[str, ...], index: TagIndex, read_file) -> frozenset[str]:
        """Names the focus files import (what they really use), cached per file and text."""
        names: set[str] = set()
        read = read_file if read_file is not None else self._read
        for rel in focus:
            if rel not in index.files:
                continue
            text = read(rel)
            hit = self._imports.get(rel)
            if hit is None or hit[0] != text:
                hit = self._imports[rel] = (text, focus_imports([rel], lambda _rel: text))
            names |= hit[1]
        return frozenset(names)

    def _apply_pending(self) -> None:
        state = self._state
        for rel, text in list(state.pending.items()):
            del state.pending[rel]
            if text is None:  # from disk
                stamp = self._stamp(rel)
                text = self._read(rel) if stamp is not None else None
                if text is None:
                    state.stamps.pop(rel, None)
                else:
                    state.stamps[rel] = stamp  # type: ignore[assignment]
            lang = language_for(rel)
            if rel in self._too_large:
                text = None  # a buffer over the limit: out of the index
            tags = extract_tags(text, lang) if lang and text is not None else None
            old = state.tags.get(rel)
            if tags is None and old is None:
                continue
            if rel not in state.dirty:
                state.dirty[rel] = old
            if tags is None:
                del state.tags[rel]
            else:
                state.tags[rel] = tags

    def _stamp(self, rel: str) -> tuple[int, int] | None:
        try:
            st = (self.workspace / rel).stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size) if 0 < st.st_size <= MAX_FILE_BYTES else None

    def _read(self, rel: str) -> str | None:
        try:
            data = (self.workspace / rel).read_bytes()
        except OSError:
            return None
        if len(data) > MAX_FILE_BYTES or b"\x00" in data[:8192]:
            return None
        return data.decode("utf-8", "replace")


def buffer_too_large(text: str) -> bool:
    """Whether a buffer is over the limit for files (MAX_FILE_BYTES of UTF-8), cheaply: a character
    is 1 to 4 bytes, so only a text near the limit is encoded to tell."""
    if len(text) > MAX_FILE_BYTES:
        return True
    return len(text) * 4 > MAX_FILE_BYTES and len(text.encode("utf-8", "surrogateescape")) > MAX_FILE_BYTES


def _next_index(previous: TagIndex | None, tags: dict[str, FileTags], dirty: dict[str, FileTags | None]) -> TagIndex:
    """A new TagIndex for `tags`. Readers on another thread may still hold `previous`, so nothing
    of it is mutated: its name table is copied and only the names of the `dirty` files are redone."""
    if previous is None:
        return index_from(dict(tags))
    defined_in = dict(previous.defined_in)
    for rel in dirty:
        before = {d.name for d in (previous.files.get(rel) or FileTags([], Counter())).defs if d.kind != "impl"}
        now = {d.name for d in (tags.get(rel) or FileTags([], Counter())).defs if d.kind != "impl"}
        for name in before | now:  # a set lookup per name: a buffer with 9,000 definitions took 20 s
            others = [f for f in defined_in.get(name, ()) if f != rel]
            if name in now:
                others.append(rel)
            if others:
                defined_in[name] = tuple(sorted(others))
            else:
                defined_in.pop(name, None)
    return TagIndex(files=dict(tags), defined_in=defined_in)
