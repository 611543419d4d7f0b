"""Repo map: definition/reference tags across the workspace, ranked with
PageRank personalised on the files of the request, rendered as signatures
within a hard token budget.

Tags are cached on disk per file, keyed by mtime and size, and the whole index
of a workspace in one snapshot file (snapshot.py), so a warm map of a large
repository only stats its files and folders. `.gitignore` files (nested ones too)
are honoured; binaries, huge files and files without a grammar are skipped."""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from qwen_lsp.files import inside
from qwen_lsp.context import snapshot, tagpool
from qwen_lsp.context.snapshot import DefinedIn, Listing, Snapshot, add_definer, definers_table
from qwen_lsp.context.tagpool import RawTags
from qwen_lsp.context.treesitter import (
    CONTAINER_KINDS, EXTENSIONS, Definition, definitions, has_definitions, language_for, parse, parse_uncached, references,
    tags,
)
from qwen_lsp.llm.tokens import count_tokens

if TYPE_CHECKING:
    import pathspec

    from qwen_lsp.context.ranking import RefGraph

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 512_000  # bigger source files are generated or vendored
MAX_FILES = 50_000
MAX_DEFINERS = 20  # a name defined in more files than this is too generic to rank by
CACHE_VERSION = 2
# A build that parsed this many files (a first build) reads its tags back from the snapshot it
# wrote, and leaves them out of the per-file cache: they are all in the snapshot (build_index).
READ_BACK_MIN = 200
# Never worth mapping, whatever .gitignore says (or when there is none).
ALWAYS_SKIP = {
    ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".eggs", "site-packages", ".idea", ".vscode", "vendor", "third_party",
}


class FileTags:
    """A file's definitions and reference counts. Tags from a workspace snapshot are built from its
    columns when first read, so loading a snapshot does not construct ~40k Definitions up front."""

    def __init__(self, defs: list[Definition], refs: Counter[str]) -> None:
        self._defs: list[Definition] | None = defs
        self._refs: Counter[str] | None = refs
        self._snap: Snapshot | None = None
        self._pos = -1
        self._named: dict[str, list[Definition]] = {}  # definitions decoded by name from the snapshot

    @classmethod
    def _lazy(cls, snap: Snapshot, pos: int) -> FileTags:
        tags = cls.__new__(cls)
        tags._defs = tags._refs = None
        tags._snap, tags._pos = snap, pos
        tags._named = {}
        return tags

    @property
    def defs(self) -> list[Definition]:
        if self._defs is None:
            assert self._snap is not None
            self._defs = self._snap.defs(self._pos)  # two threads may both build it: the same list
        return self._defs

    @defs.setter
    def defs(self, value: list[Definition]) -> None:
        self._defs = value

    @property
    def refs(self) -> Counter[str]:
        if self._refs is None:
            assert self._snap is not None
            self._refs = self._snap.refs(self._pos)
        return self._refs

    @refs.setter
    def refs(self, value: Counter[str]) -> None:
        self._refs = value

    def ref_counts(self) -> Mapping[str, int]:
        """`refs` to read once: from a snapshot not yet read, decoded but not kept (the reference
        graph reads every file's; keeping them all was ~14 MB on a 25,000-file tree)."""
        if self._refs is None and self._snap is not None:
            return self._snap.raw_refs(self._pos)
        return self.refs

    def _raw(self) -> tuple[list[tuple], dict[str, int]]:
        """Plain tuples for the caches, straight from the snapshot when nothing was built yet."""
        if self._snap is not None and self._defs is None and self._refs is None:
            return self._snap.raw_defs(self._pos), self._snap.raw_refs(self._pos)
        return [(d.name, d.kind, d.line, d.end_line, d.signature, d.depth) for d in self.defs], dict(self.refs)

    def outline(self) -> Iterable[tuple[str, str, int]]:
        """(name, kind, depth) of each definition, without building them (what indexing and the
        reference graph need: a one-shot process never builds the ~40k Definitions of a big repo)."""
        if self._snap is not None and self._defs is None:
            return self._snap.names(self._pos)
        return [(d.name, d.kind, d.depth) for d in self.defs]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FileTags):
            return NotImplemented
        return self.defs == other.defs and self.refs == other.refs

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass it replaces

    def __repr__(self) -> str:
        return f"FileTags(defs={self.defs!r}, refs={self.refs!r})"

    def named(self, wanted: set[str] | frozenset[str]) -> dict[str, list[Definition]]:
        """`by_name` for the `wanted` names only: from a snapshot not yet read, only those
        definitions are built (ranking a big repository looks up a few names in many files), and
        kept for the next ranking (the language server ranks the same tags again and again)."""
        if self._snap is not None and self._defs is None and "by_name" not in self.__dict__:
            known = self._named
            missing = {name for name in wanted if name not in known}
            if missing:  # two threads may both decode a name: the same definitions
                found = self._snap.defs_named(self._pos, missing)
                known.update({name: found.get(name, []) for name in missing})
            return {name: known[name] for name in wanted if known[name]}
        by_name = self.by_name
        return {name: by_name[name] for name in wanted if name in by_name}

    @cached_property
    def by_name(self) -> dict[str, list[Definition]]:
        """Definitions (impl blocks left out) by name. Built once: a FileTags is replaced, never
        changed, when its file changes, so ranking a live index only pays for files that changed."""
        out: dict[str, list[Definition]] = defaultdict(list)
        for d in self.defs:
            if d.kind != "impl":
                out[d.name].append(d)
        return dict(out)


@dataclass
class TagIndex:
    files: dict[str, FileTags] = field(default_factory=dict)
    defined_in: DefinedIn = field(default_factory=dict)  # name -> the files defining it (impl blocks left out), sorted
    # Set by build_index: where the reference graph of exactly these tags is stored, and the content
    # key of the snapshot holding them (see ranking.stored_graph). Whoever changes `files` clears it.
    stored_graph: tuple[Path, str] | None = None

    def lookup(self, name: str) -> list[tuple[str, Definition]]:
        """Where `name` is defined: (path, definition), for source context."""
        return [(p, d) for p in sorted(self.defined_in.get(name, ())) for d in self.files[p].defs if d.name == name]


# --------------------------------------------------------------------------- files


def list_files(workspace: Path, *, max_files: int = MAX_FILES) -> list[str]:
    """Workspace-relative POSIX paths of source files with a grammar, honouring .gitignore files."""
    return _walk(workspace, max_files=max_files).files


def _walk(workspace: Path, *, max_files: int = MAX_FILES) -> Listing:
    """`list_files`, with the stamps of every folder walked and .gitignore read (see snapshot.py)."""
    import pathspec  # only for a walk: a warm load from the snapshot does without its import

    out: list[str] = []
    watched: list[str] = []
    stamps: list[snapshot.Stamp] = []
    listing = Listing(out, watched, stamps)
    # (directory relative to the workspace, its compiled .gitignore), innermost last
    specs: list[tuple[str, pathspec.PathSpec]] = []
    root = Path(workspace)

    def watch(rel: str, path: str) -> None:
        st = snapshot.stamp(path)
        watched.append(rel)
        stamps.append(st if st is not None else (-1, -1))

    def ignored(rel: str, is_dir: bool) -> bool:
        verdict = False
        for base, spec in specs:
            if base and not rel.startswith(base + "/"):
                continue
            sub = rel[len(base) + 1 :] if base else rel
            result = spec.check_file(sub + ("/" if is_dir else ""))
            if result.include is not None:
                verdict = result.include  # deeper .gitignore files override shallower ones
        return verdict

    top = os.fspath(root)
    for dirpath, dirnames, filenames in os.walk(top):
        rel_dir = "" if dirpath == top else dirpath[len(os.path.join(top, "")):].replace(os.sep, "/")
        watch(rel_dir, dirpath)  # after os.walk listed it: a change in between is newer than the build start
        specs[:] = [(b, s) for b, s in specs if not b or rel_dir == b or rel_dir.startswith(b + "/")]
        def join(name: str, prefix: str = rel_dir) -> str:
            return f"{prefix}/{name}" if prefix else name

        if ".gitignore" in filenames:
            watch(join(".gitignore"), os.path.join(dirpath, ".gitignore"))
            try:
                lines = (Path(dirpath) / ".gitignore").read_text(errors="replace").splitlines()
                specs.append((rel_dir, pathspec.GitIgnoreSpec.from_lines(lines)))
            except (OSError, ValueError):
                pass

        dirnames[:] = sorted(d for d in dirnames if d not in ALWAYS_SKIP and not ignored(join(d), True))
        for name in sorted(filenames):
            lang = language_for(name)
            if lang is None or not has_definitions(lang):
                continue
            rel = join(name)
            if not ignored(rel, False):
                out.append(rel)
                if len(out) >= max_files:
                    return listing
    return listing


# --------------------------------------------------------------------------- tags


def extract_tags(text: str, lang: str) -> FileTags | None:
    """A text's tags (an open buffer's, a changed file's). Its tree and definitions stay cached for
    the next reader of the same text (source context reads the same buffer's)."""
    tree = parse(text, lang)
    if tree is None:
        return None
    return FileTags(defs=definitions(text, lang, tree), refs=Counter(references(tree, lang)))


def raw_tags(text: str, lang: str, *, whole: bool = False) -> RawTags | None:
    """`extract_tags` as plain tuples (what the snapshot stores) from one pass over the tree, nothing
    kept: what an index build does for every file. `whole`: see treesitter.tags."""
    source = text.encode("utf-8", "replace")
    tree = parse_uncached(source, lang)
    return tags(tree, source, lang, whole=whole) if tree is not None else None


def _open_cache(cache_dir: Path | None):  # -> diskcache.Cache | None
    if cache_dir is None:
        return None
    try:
        import diskcache

        return diskcache.Cache(str(Path(cache_dir) / f"repomap-tags-v{CACHE_VERSION}"), size_limit=2**30)
    except Exception:  # unwritable cache dir: run uncached
        log.debug("repo-map cache at %s unavailable; running uncached", cache_dir, exc_info=True)
        return None


def _decode(raw: tuple) -> FileTags:
    defs, refs = raw
    return FileTags(defs=[Definition(*d) for d in defs], refs=Counter(refs))


def build_index(workspace: Path, *, cache_dir: Path | None = None, files: Iterable[str] | None = None,
                progress: Callable[[int, int], None] | None = None, read_back: bool = True) -> TagIndex:
    """Tags of every source file (`files`, or those `list_files` finds).

    With a `cache_dir`, the workspace's snapshot (snapshot.py) gives back the listing and every
    unchanged file's tags (same mtime and size) without reading them; a changed file comes from the
    per-file disk cache or is parsed again, and the snapshot is then rewritten. Many files to parse
    are parsed on every core (tagpool.py); `progress(done, total)` hears how many of them are done.
    After a build that parsed many, the index reads its tags back from the snapshot just written:
    columns, not tens of thousands of objects (see FileTags)."""
    workspace = Path(workspace)
    started_ns = time.time_ns()
    ws = os.path.abspath(workspace)
    key = _snapshot_key(ws)
    path = snapshot.snapshot_path(cache_dir, workspace, CACHE_VERSION) if cache_dir is not None else None
    snap = snapshot.load(path, key) if path is not None else None
    if files is None and snap is not None and path is not None and (whole := index_if_unchanged(ws, snap, path)):
        return whole
    walked = False
    if files is None:
        listing = _listing_if_unchanged(ws, snap)
        if listing is None:
            # The workspace rule (files.inside), cheaply for walked files: the walk never enters a
            # linked folder, so only a linked file can lead out of the workspace (or be a second name).
            listing, walked = _walk(workspace), True
            listing.files = [rel for rel in listing.files if not os.path.islink(os.path.join(ws, rel))]
        rels = listing.files
    else:
        listing = None
        files = list(files)  # read again if the build has to be redone
        rels = [rel for rel in files if inside(workspace, rel) == rel]

    known = {rel: i for i, rel in enumerate(snap.files)} if snap is not None else {}
    # Per file: its tags (FileTags, or plain tuples as the snapshot stores them), or None.
    found: dict[str, FileTags | RawTags | None] = {}
    stamps: dict[str, snapshot.Stamp] = {}
    to_parse: dict[str, str] = {}  # rel -> its per-file cache key
    hits, cache, cache_opened = 0, None, False
    try:
        prefix = os.path.join(ws, "")
        for rel in rels:
            st = snapshot.stamp(prefix + rel)
            if st is None or not 0 < st[1] <= MAX_FILE_BYTES:
                continue
            stamps[rel] = st
            i = known.get(rel)
            if snap is not None and i is not None and snap.trusted(st, snap.stamp(i)):
                found[rel] = FileTags._lazy(snap, i) if snap.tagged[i] else None
                hits += 1
                continue
            if not cache_opened:
                cache, cache_opened = _open_cache(cache_dir), True
            cache_key = f"{prefix}{rel}\x00{st[0]}\x00{st[1]}"
            raw = _cached_tags(cache, cache_key, rel)
            if raw is not None:
                found[rel] = raw
            else:
                found[rel], to_parse[rel] = None, cache_key
        if to_parse:
            parsed = tagpool.tag_files(ws, list(to_parse), progress, packed=True)
            found.update(parsed)
            if len(to_parse) < READ_BACK_MIN:  # a first build's tags are all in its snapshot: not again per file
                _cache_tags(cache, [(to_parse[rel], _raw(raw)) for rel, raw in parsed.items() if raw is not None])
            del parsed  # only `found` holds them now: a first build clears it before reading its snapshot back
    finally:
        if cache is not None:
            cache.close()
    unchanged = snap is not None and hits == len(found) == len(snap.files)
    if unchanged:  # the same files with the same tags: the snapshot's name table is this index's
        assert snap is not None and path is not None
        tagged = {rel: tags for rel, tags in found.items() if isinstance(tags, FileTags)}
        index = TagIndex(files=tagged, defined_in=snap.defined_in,
                         stored_graph=(snapshot.graph_path(path), snap.content_key))
        if walked:  # the same files, but a folder's stamp changed: renew the listing's stamps
            entries = [(rel, stamps[rel], *(_raw(t) if t is not None else (None, None))) for rel, t in found.items()]
            if (content_key := snapshot.write(path, key, started_ns, listing, entries, index.defined_in)) is not None:
                index.stored_graph = (snapshot.graph_path(path), content_key)
        return index
    if path is not None:
        if listing is None:  # files named by the caller: keep the listing the snapshot had, if still true
            listing = _listing_if_unchanged(ws, snap)
        # One file's tags unpacked at a time, as the snapshot's columns take them.
        entries = ((rel, stamps[rel], *(_raw(t) if t is not None else (None, None))) for rel, t in found.items())
        content_key = snapshot.write(path, key, started_ns, listing, entries, None)
        if content_key is not None:
            if len(to_parse) >= READ_BACK_MIN and read_back:
                # The tags as parsed go before the snapshot is read: both at once were most of the peak.
                found.clear()
                index = _read_back(path, key, started_ns, content_key)
                if index is not None:
                    return index
                # Another process replaced the snapshot meanwhile (rare): build again, keeping the tags.
                return build_index(workspace, cache_dir=cache_dir, files=files, progress=progress, read_back=False)
            index = index_from(_tags_of(found))
            index.stored_graph = (snapshot.graph_path(path), content_key)
            return index
    return index_from(_tags_of(found))


def _raw(tags: FileTags | RawTags | tagpool.Packed) -> RawTags:
    if isinstance(tags, FileTags):
        return tags._raw()
    raw = tagpool.unpack(tags)
    assert raw is not None
    return raw


def _tags_of(found: dict[str, FileTags | RawTags | tagpool.Packed | None]) -> dict[str, FileTags]:
    return {rel: tags if isinstance(tags, FileTags) else _decode(_raw(tags)) for rel, tags in found.items()
            if tags is not None}


def _read_back(path: Path, key: str, started_ns: int, content_key: str) -> TagIndex | None:
    """The index of the snapshot this build just wrote at `path`, read back (its tags as columns),
    if no other process has replaced it meanwhile."""
    snap = snapshot.load(path, key)
    if snap is None or snap.started_ns != started_ns or snap.content_key != content_key:
        return None
    tagged = {rel: FileTags._lazy(snap, i) for i, rel in enumerate(snap.files) if snap.tagged[i]}
    return TagIndex(files=tagged, defined_in=snap.defined_in,
                    stored_graph=(snapshot.graph_path(path), content_key))


def load_snapshot(workspace: Path, cache_dir: Path) -> tuple[Path, Snapshot | None]:
    """The workspace's snapshot file and what it holds (None: missing, damaged or someone else's)."""
    path = snapshot.snapshot_path(cache_dir, workspace, CACHE_VERSION)
    return path, snapshot.load(path, _snapshot_key(os.path.abspath(workspace)))


def snapshot_unchanged(ws: str, snap: Snapshot) -> bool:
    """Whether `build_index` would now find every file and folder as `snap` recorded them (nothing
    to walk, parse or write). Only stats: cheap enough to re-check after a command ran."""
    return _trusted_files(ws, snap) is not None


def index_if_unchanged(ws: str, snap: Snapshot, path: Path) -> TagIndex | None:
    """The index `build_index` gives when `snapshot_unchanged`, straight from `snap` (at `path`)."""
    trusted = _trusted_files(ws, snap)
    if trusted is None:
        return None
    tagged = {snap.files[i]: FileTags._lazy(snap, i) for i in trusted if snap.tagged[i]}
    return TagIndex(files=tagged, defined_in=snap.defined_in,
                    stored_graph=(snapshot.graph_path(path), snap.content_key))


def _trusted_files(ws: str, snap: Snapshot) -> list[int] | None:
    """The snapshot positions of the listed files, in listing order, if every one is trusted and
    the snapshot has no other file (the same test as build_index's); else None."""
    listing = _listing_if_unchanged(ws, snap)
    if listing is None:
        return None
    known = {rel: i for i, rel in enumerate(snap.files)}
    prefix = os.path.join(ws, "")
    out: list[int] = []
    for rel in listing.files:
        st = snapshot.stamp(prefix + rel)
        if st is None or not 0 < st[1] <= MAX_FILE_BYTES:
            continue
        i = known.get(rel)
        if i is None or not snap.trusted(st, snap.stamp(i)):
            return None
        out.append(i)
    return out if len(out) == len(snap.files) else None


def _snapshot_key(ws: str) -> str:
    """The workspace and everything else the listing and tags depend on."""
    config = repr((CACHE_VERSION, MAX_FILE_BYTES, MAX_FILES, sorted(ALWAYS_SKIP), sorted(EXTENSIONS.items())))
    return f"{ws}\x00{hashlib.sha1(config.encode()).hexdigest()}"


def _listing_if_unchanged(ws: str, snap: Snapshot | None) -> Listing | None:
    """The snapshot's file listing when no folder it walked and no .gitignore it read changed."""
    if snap is None or snap.listing is None:
        return None
    prefix = os.path.join(ws, "")
    for rel, recorded in zip(snap.listing.watched, snap.listing.stamps):
        if not snap.trusted(snapshot.stamp(prefix + rel if rel else ws), recorded):
            return None
    return snap.listing


def _cached_tags(cache, key: str, rel: str) -> RawTags | None:
    if cache is None:
        return None
    try:
        return cache.get(key)
    except Exception:
        log.debug("repo-map tags cache entry unreadable for %s", rel, exc_info=True)
        return None


def _cache_tags(cache, items: list[tuple[str, RawTags]]) -> None:
    """Store freshly parsed tags in the per-file cache, in one transaction (one commit, not one per file)."""
    if cache is None or not items:
        return
    try:
        with cache.transact():
            for key, raw in items:
                cache.set(key, raw)
    except Exception:
        log.debug("repo-map tags not cached", exc_info=True)


def index_from(tagged: dict[str, FileTags]) -> TagIndex:
    """The index of these files' tags (taken, not copied), its name table made from them."""
    found: dict[str, list[str]] = {}
    for rel, tags in tagged.items():
        for name, kind, _depth in tags.outline():
            if kind != "impl":
                add_definer(found, name, rel)
    return TagIndex(files=tagged, defined_in=definers_table(found))


# --------------------------------------------------------------------------- rendering


def render(index: TagIndex, chosen: list[tuple[str, Definition]]) -> str:
    """Signatures grouped by file (sorted, so equal selections render byte-identically)."""
    by_file: dict[str, set[Definition]] = defaultdict(set)
    containers: dict[str, list[Definition]] = {}
    for f, d in chosen:
        by_file[f].add(d)
        if d.depth == 0:
            continue
        # Keep the class around a method: "def save(self)" alone does not say whose.
        if f not in containers:
            containers[f] = [c for c in index.files[f].defs if c.kind in CONTAINER_KINDS]
        for c in containers[f]:
            if c.depth < d.depth and c.line < d.line <= c.end_line:
                by_file[f].add(c)
    parts = []
    for f in sorted(by_file):
        rows = [f"{d.line:>5}│{'    ' * d.depth}{d.signature}" for d in sorted(by_file[f], key=lambda d: d.line)]
        parts.append(f"{f}:\n" + "\n".join(rows))
    return "\n\n".join(parts)


def repo_map(
    workspace: Path,
    budget: int,
    *,
    focus_files: Iterable[str] = (),
    mentioned: Iterable[str] = (),
    exclude: Iterable[str] = (),
    cache_dir: Path | None = None,
    index: TagIndex | None = None,
    imported: Iterable[str] = (),
    graph: RefGraph | None = None,
) -> str:
    """The highest-ranked definitions that fit in `budget` tokens (never more)."""
    if budget <= 0:
        return ""
    from qwen_lsp.context.ranking import rank_definitions  # ranking imports this module's types

    index = index if index is not None else build_index(workspace, cache_dir=cache_dir)
    excluded = set(exclude)
    # A map shows at most a few hundred definitions: ranking more pairs than the budget has tokens is waste.
    ranked = [(f, d) for f, d, _ in rank_definitions(index, focus_files=focus_files, mentioned=mentioned,
                                                     imported=imported, graph=graph, limit=max(200, budget))
              if f not in excluded]
    if not ranked:
        return ""
    return fit_map(index, ranked, fit_bound(ranked, budget), budget)[0]


def fit_bound(ranked: list[tuple[str, Definition]], budget: int) -> int:
    """How many definitions a fit may try: signatures average 3-4 characters per Qwen token, so past
    10 characters per token of budget the map is surely over: no need to render more than that."""
    chars, hi = 0, 0
    for _, d in ranked:
        chars += len(d.signature) + 8
        hi += 1
        if chars > budget * 10:
            break
    return hi


def fit_map(index: TagIndex, ranked: list[tuple[str, Definition]], hi: int, budget: int, guess: int = 0) -> tuple[str, int]:
    """The longest prefix of `ranked[:hi]` whose rendering fits `budget` tokens, and its length: a binary
    search, since tokens grow with the count. `guess`, the length an earlier version of the map showed,
    narrows it: when that many fit and one more does not, that is the answer (two renderings instead
    of a dozen); otherwise the search runs on the side it says."""
    lo, best, shown = 1, "", 0
    for n in (guess, guess + 1) if 0 < guess < hi else ():
        text = render(index, ranked[:n])
        if count_tokens(text) > budget:
            hi = n - 1
            break
        best, shown, lo = text, n, n + 1
    while lo <= hi:
        mid = (lo + hi) // 2
        text = render(index, ranked[:mid])
        if count_tokens(text) <= budget:
            best, shown, lo = text, mid, mid + 1
        else:
            hi = mid - 1
    return best, shown
