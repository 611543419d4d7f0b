"""Repo map: definition/reference tags across the workspace, ranked with
PageRank personalised on the files of the request, rendered as signatures
within a hard token budget.

Tags are cached on disk per file, keyed by mtime and size, so a warm map of a
large repository only stats its files. `.gitignore` files (nested ones too)
are honoured; binaries, huge files and files without a grammar are skipped."""

from __future__ import annotations

import builtins
import dataclasses
import hashlib
import logging
import math
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pathspec

from qwen_lsp.files import inside
from qwen_lsp.context.treesitter import CONTAINER_KINDS, Definition, definitions, has_definitions, imports, language_for, parse, references
from qwen_lsp.llm.tokens import count_tokens

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 512_000  # bigger source files are generated or vendored
MAX_FILES = 50_000
MAX_DEFINERS = 20  # a name defined in more files than this is too generic to rank by
CACHE_VERSION = 2
# Never worth mapping, whatever .gitignore says (or when there is none).
ALWAYS_SKIP = {
    ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".eggs", "site-packages", ".idea", ".vscode", "vendor", "third_party",
}


@dataclass
class FileTags:
    defs: list[Definition]
    refs: Counter[str]


@dataclass
class TagIndex:
    files: dict[str, FileTags] = field(default_factory=dict)
    defined_in: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # name -> files

    def lookup(self, name: str) -> list[tuple[str, Definition]]:
        """Where `name` is defined: (path, definition), for source context."""
        return [(p, d) for p in sorted(self.defined_in.get(name, ())) for d in self.files[p].defs if d.name == name]


# --------------------------------------------------------------------------- files


def list_files(workspace: Path, *, max_files: int = MAX_FILES) -> list[str]:
    """Workspace-relative POSIX paths of source files with a grammar, honouring .gitignore files."""
    out: list[str] = []
    # (directory relative to the workspace, its compiled .gitignore), innermost last
    specs: list[tuple[str, pathspec.PathSpec]] = []
    root = Path(workspace)

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

    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        specs[:] = [(b, s) for b, s in specs if not b or rel_dir == b or rel_dir.startswith(b + "/")]
        if ".gitignore" in filenames:
            try:
                lines = (Path(dirpath) / ".gitignore").read_text(errors="replace").splitlines()
                specs.append((rel_dir, pathspec.GitIgnoreSpec.from_lines(lines)))
            except (OSError, ValueError):
                pass
        def join(name: str, prefix: str = rel_dir) -> str:
            return f"{prefix}/{name}" if prefix else name

        dirnames[:] = sorted(d for d in dirnames if d not in ALWAYS_SKIP and not ignored(join(d), True))
        for name in sorted(filenames):
            lang = language_for(name)
            if lang is None or not has_definitions(lang):
                continue
            rel = join(name)
            if not ignored(rel, False):
                out.append(rel)
                if len(out) >= max_files:
                    return out
    return out


# --------------------------------------------------------------------------- tags


def extract_tags(text: str, lang: str) -> FileTags | None:
    tree = parse(text, lang)
    if tree is None:
        return None
    defs = definitions(text, lang, tree)
    return FileTags(defs=defs, refs=Counter(references(tree, lang)))


def _open_cache(cache_dir: Path | None):  # -> diskcache.Cache | None
    if cache_dir is None:
        return None
    try:
        import diskcache

        return diskcache.Cache(str(Path(cache_dir) / f"repomap-tags-v{CACHE_VERSION}"), size_limit=2**30)
    except Exception:  # unwritable cache dir: run uncached
        log.debug("repo-map cache at %s unavailable; running uncached", cache_dir, exc_info=True)
        return None


def _encode(tags: FileTags) -> tuple:
    return ([(d.name, d.kind, d.line, d.end_line, d.signature, d.depth) for d in tags.defs], dict(tags.refs))


def _decode(raw: tuple) -> FileTags:
    defs, refs = raw
    return FileTags(defs=[Definition(*d) for d in defs], refs=Counter(refs))


def build_index(workspace: Path, *, cache_dir: Path | None = None, files: Iterable[str] | None = None) -> TagIndex:
    """Tags of every source file. Unchanged files (same mtime and size) come from the
    disk cache; an unchanged workspace comes back whole from one cache entry."""
    workspace = Path(workspace)
    entries: list[tuple[str, int, int]] = []
    listed = files is None
    for rel in list_files(workspace) if listed else files:
        # The workspace rule (files.inside), cheaply for walked files: the walk never enters a
        # linked folder, so only a linked file can lead out of the workspace (or be a second name).
        if os.path.islink(workspace / rel) if listed else inside(workspace, rel) != rel:
            continue
        try:
            st = (workspace / rel).stat()
        except OSError:
            continue
        if 0 < st.st_size <= MAX_FILE_BYTES:
            entries.append((rel, st.st_mtime_ns, st.st_size))
    fingerprint = hashlib.sha1(repr(entries).encode("utf-8", "surrogateescape")).hexdigest()
    snapshot_key = f"snapshot\x00{os.path.abspath(workspace)}"
    cache = _open_cache(cache_dir)
    try:
        if cache is not None:
            try:
                snap = cache.get(snapshot_key)
                if snap is not None and snap[0] == fingerprint:
                    return _index_from({rel: _decode(raw) for rel, raw in snap[1].items()})
            except Exception:
                log.debug("repo-map snapshot unreadable; rebuilding", exc_info=True)
                pass
        tagged: dict[str, FileTags] = {}
        for rel, mtime_ns, size in entries:
            tags = _file_tags(workspace, rel, f"{os.path.abspath(workspace / rel)}\x00{mtime_ns}\x00{size}", cache)
            if tags is not None:
                tagged[rel] = tags
        if cache is not None:
            try:
                cache.set(snapshot_key, (fingerprint, {rel: _encode(t) for rel, t in tagged.items()}))
            except Exception:
                log.debug("repo-map snapshot not stored", exc_info=True)
                pass
        return _index_from(tagged)
    finally:
        if cache is not None:
            cache.close()


def _file_tags(workspace: Path, rel: str, key: str, cache) -> FileTags | None:
    if cache is not None:
        try:
            raw = cache.get(key)
            if raw is not None:
                return _decode(raw)
        except Exception:
            log.debug("repo-map tags cache entry unreadable for %s", rel, exc_info=True)
            pass
    try:
        data = (workspace / rel).read_bytes()
    except OSError:
        return None
    if b"\x00" in data[:8192]:
        return None
    lang = language_for(rel)
    tags = extract_tags(data.decode("utf-8", "replace"), lang) if lang else None
    if tags is not None and cache is not None:
        try:
            cache.set(key, _encode(tags))
        except Exception:
            log.debug("repo-map tags not cached for %s", rel, exc_info=True)
            pass
    return tags


def _index_from(tagged: dict[str, FileTags]) -> TagIndex:
    index = TagIndex(files=tagged)
    for rel, tags in tagged.items():
        for d in tags.defs:
            if d.kind != "impl":
                index.defined_in[d.name].add(rel)
    return index


# --------------------------------------------------------------------------- ranking

# Names that every codebase calls through builtins or the methods of builtin types: a call to
# `x.join()` or `dict()` says nothing about which of the workspace's `join`s or `dict`s is meant.
GENERIC_NAMES = frozenset(
    {n for n in dir(builtins) if not n.startswith("_")}
    | {n for t in (str, bytes, list, dict, set, tuple, int, float, object) for n in dir(t) if not n.startswith("_")}
    | {"get", "set", "update", "append", "add", "remove", "close", "open", "read", "write", "run", "call", "main",
       "init", "new", "push", "pop", "map", "filter", "then", "catch", "log", "error", "next", "apply", "test"}
)
GENERIC_DISCOUNT = 0.05


@dataclass
class RefGraph:
    """What ranking needs that does not depend on the request, built once per index version.

    One row per (referrer file, defining file, name): the edge arrays of the file graph, with the
    name each edge comes from, so that a request can re-weight names (those named in the failure,
    those its files import) without rebuilding anything."""

    files: list[str]
    file_pos: dict[str, int]
    names: list[str]
    name_pos: dict[str, int]
    src: np.ndarray  # int32 file index of the referrer
    dst: np.ndarray  # int32 file index of the definer
    name: np.ndarray  # int32 name index
    weight: np.ndarray  # float64 base weight
    generic: np.ndarray  # bool per name: discounted as GENERIC_NAMES
    short: np.ndarray  # bool per name: discounted for having fewer than 3 characters
    factor: dict[str, tuple[float, list[int]]]  # name -> (weight per reference, defining files)


def build_graph(index: TagIndex) -> RefGraph:
    """The reference graph of `index`: a file that references a name links to the files defining it,
    weighted by how telling the name is (inverse document frequency, definers, visibility)."""
    files = sorted(index.files)  # the same arrays, so the same floating-point sums, in every process
    file_pos = {f: i for i, f in enumerate(files)}
    n_files = max(1, len(files))
    # Inverse document frequency: a name every file uses ("django", "value") says little.
    referrers: Counter[str] = Counter()
    for tags in index.files.values():
        referrers.update(tags.refs.keys())
    top_level = {d.name for tags in index.files.values() for d in tags.defs if d.depth == 0}
    methods_only = index.defined_in.keys() - top_level
    factor: dict[str, tuple[float, list[int]]] = {}
    for name, definers in index.defined_in.items():
        df = referrers.get(name, 0)
        # Dunders and names defined in dozens of files link everything to everything.
        if not df or len(definers) > MAX_DEFINERS or (name.startswith("__") and name.endswith("__")):
            continue
        mult = 1.0
        if name.startswith("_"):
            mult *= 0.1
        if len(definers) > 5 or len(name) < 3:
            mult *= 0.1
        if name in methods_only:
            mult *= 0.25  # reached through attributes (x.value): which class is meant is a guess
        if name in GENERIC_NAMES:
            mult *= GENERIC_DISCOUNT
        factor[name] = (mult * math.log((n_files + 1) / df) / len(definers), sorted(file_pos[f] for f in definers))
    names = sorted(factor)
    name_pos = {n: i for i, n in enumerate(names)}
    rows: tuple[list[int], list[int], list[int], list[float]] = ([], [], [], [])
    for u, referrer in enumerate(files):
        _add_rows(rows, u, index.files[referrer], factor, name_pos)
    src, dst, nid, weight = _arrays(rows)
    return RefGraph(
        files=files, file_pos=file_pos, names=names, name_pos=name_pos, src=src, dst=dst, name=nid, weight=weight,
        generic=np.asarray([n in GENERIC_NAMES for n in names], dtype=bool),
        short=np.asarray([len(n) < 3 for n in names], dtype=bool),
        factor=factor,
    )


def _add_rows(rows: tuple[list[int], list[int], list[int], list[float]], u: int, tags: FileTags,
              factor: dict[str, tuple[float, list[int]]], name_pos: dict[str, int]) -> None:
    """The edges out of file `u`: one per (name it references, file defining that name)."""
    src, dst, nid, weight = rows
    for name in sorted(tags.refs.keys() & factor.keys()):
        base, targets = factor[name]
        w = base * math.sqrt(tags.refs[name])
        if w <= 0:
            continue
        i = name_pos[name]
        for v in targets:
            if v != u:
                src.append(u)
                dst.append(v)
                nid.append(i)
                weight.append(w)


def _arrays(rows: tuple[list[int], list[int], list[int], list[float]]) -> tuple[np.ndarray, ...]:
    src, dst, nid, weight = rows
    return (np.asarray(src, dtype=np.int32), np.asarray(dst, dtype=np.int32), np.asarray(nid, dtype=np.int32),
            np.asarray(weight, dtype=np.float64))


def tags_shape(tags: FileTags) -> tuple[frozenset, frozenset]:
    """What of a file's tags the graph's weights depend on beyond its own reference counts."""
    return frozenset(tags.refs), frozenset((d.name, d.depth == 0, d.kind == "impl") for d in tags.defs)


def update_graph(graph: RefGraph, index: TagIndex, changed: Iterable[str]) -> RefGraph:
    """`graph` with the edges out of the `changed` files recomputed from `index`.

    Exact only when the changed files' `tags_shape` is what it was when `graph` was built (an edit
    inside a body: the same names referenced and defined, other counts): then no name's weight, no
    definer and no file changes, and only those files' own rows do. The caller checks that."""
    changed_pos = [graph.file_pos[rel] for rel in changed]
    keep = ~np.isin(graph.src, changed_pos)
    rows: tuple[list[int], list[int], list[int], list[float]] = ([], [], [], [])
    for rel, u in zip(changed, changed_pos):
        _add_rows(rows, u, index.files[rel], graph.factor, graph.name_pos)
    new = _arrays(rows)
    order = np.argsort(np.concatenate([graph.src[keep], new[0]]), kind="stable")
    src, dst, nid, weight = (np.concatenate([old[keep], add])[order] for old, add in
                             zip((graph.src, graph.dst, graph.name, graph.weight), new))
    return dataclasses.replace(graph, src=src, dst=dst, name=nid, weight=weight)


def _pagerank(n: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray, pers: np.ndarray,
              *, alpha: float = 0.85, max_iter: int = 50, tol: float = 1e-5) -> np.ndarray:
    """Weighted personalised PageRank by power iteration over an edge list (parallel edges add up)."""
    out = np.bincount(src, weights=weight, minlength=n)
    prob = weight / np.where(out[src] > 0, out[src], 1.0)
    dangling = out == 0
    rank = pers.copy()
    for _ in range(max_iter):
        new = (1 - alpha + alpha * rank[dangling].sum()) * pers + alpha * np.bincount(dst, weights=rank[src] * prob, minlength=n)
        delta = np.abs(new - rank).sum()
        rank = new
        if delta < tol:
            break
    return rank


def pagerank(
    nodes: list[str], weights: dict[str, dict[str, float]], personalization: dict[str, float],
    *, alpha: float = 0.85, max_iter: int = 50, tol: float = 1e-5,
) -> dict[str, float]:
    """Weighted, personalised PageRank over `weights[u][v]` (a dict front end to `_pagerank`)."""
    if not nodes:
        return {}
    pos = {n: i for i, n in enumerate(nodes)}
    edges = [(pos[u], pos[v], w) for u, out in weights.items() for v, w in out.items() if w > 0]
    src, dst, w = (np.asarray(col) for col in zip(*edges)) if edges else (np.zeros(0, int), np.zeros(0, int), np.zeros(0))
    pers = np.asarray([personalization.get(n, 0.0) for n in nodes], dtype=np.float64)
    pers = pers / pers.sum() if pers.sum() > 0 else np.full(len(nodes), 1 / len(nodes))
    rank = _pagerank(len(nodes), src.astype(np.int64), dst.astype(np.int64), w.astype(np.float64), pers,
                     alpha=alpha, max_iter=max_iter, tol=tol)
    return dict(zip(nodes, rank.tolist()))


def imported_names(text: str, lang: str) -> set[str]:
    """Identifiers named in the file's import statements (`from m import Q, F` → m, Q, F)."""
    return {w for stmt in imports(text, lang) for w in _WORD.findall(stmt)}


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def rank_definitions(
    index: TagIndex, *, focus_files: Iterable[str] = (), mentioned: Iterable[str] = (),
    imported: Iterable[str] = (), graph: RefGraph | None = None, limit: int | None = None,
) -> list[tuple[str, Definition, float]]:
    """(path, definition, score), best first.

    Files are nodes; a file that references a name links to the files defining it. The random
    walk restarts at the focus files (current file, traceback frames), so what they use, and what
    that uses, ranks first. Names named in the failure weigh 10x; names the focus files import
    are what they really use, so the generic and short-name discounts do not apply to them."""
    graph = graph if graph is not None else build_graph(index)
    n = len(graph.files)
    if n == 0:
        return []
    focus = [f for f in dict.fromkeys(focus_files) if f in graph.file_pos]
    mentioned_set = set(mentioned)
    boost = np.ones(len(graph.names))
    for name in set(imported):
        i = graph.name_pos.get(name)
        if i is not None:
            boost[i] = (1 / GENERIC_DISCOUNT if graph.generic[i] else 1.0) * (10.0 if graph.short[i] else 1.0)
    for name in mentioned_set:
        i = graph.name_pos.get(name)
        if i is not None:
            boost[i] *= 10.0
    weight = graph.weight * boost[graph.name]
    pers = np.zeros(n)
    for f in focus:
        pers[graph.file_pos[f]] = 1.0
    pers = pers / pers.sum() if pers.sum() > 0 else np.full(n, 1 / n)
    rank = _pagerank(n, graph.src, graph.dst, weight, pers)
    # A file's rank flows to the definitions its references point at.
    out = np.bincount(graph.src, weights=weight, minlength=n)
    share = np.where(out > 0, rank / np.where(out > 0, out, 1.0), 0.0)
    pair = graph.dst.astype(np.int64) * max(1, len(graph.names)) + graph.name
    keys, inverse = np.unique(pair, return_inverse=True)
    totals = np.bincount(inverse, weights=share[graph.src] * weight)
    if limit is not None and len(totals) > limit:
        # Only the best `limit` (file, name) pairs can make it into a map; ties at the cut stay in.
        cut = np.partition(totals, len(totals) - limit)[len(totals) - limit]
        chosen = np.nonzero(totals >= cut)[0]
        keys, totals = keys[chosen], totals[chosen]
    scores: dict[tuple[str, str], float] = defaultdict(float)
    n_names = max(1, len(graph.names))
    for key, total in zip(keys.tolist(), totals.tolist()):
        if total > 0:
            scores[(graph.files[key // n_names], graph.names[key % n_names])] += total
    for name in mentioned_set:
        for f in index.defined_in.get(name, ()):
            scores[(f, name)] += 1.0  # named in the failure: always worth a line
    for f in focus:  # the focus files' own definitions, for orientation
        r = float(rank[graph.file_pos[f]])
        for d in index.files[f].defs:
            scores[(f, d.name)] += r * 0.01
    by_name: dict[tuple[str, str], list[Definition]] = defaultdict(list)
    for f in {f for f, _ in scores}:
        for d in index.files[f].defs:
            if d.kind != "impl":
                by_name[(f, d.name)].append(d)
    ranked = [(f, d, s) for (f, name), s in scores.items() for d in by_name.get((f, name), [])]
    ranked.sort(key=lambda t: (-t[2], t[0], t[1].line))
    return ranked


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
    index = index if index is not None else build_index(workspace, cache_dir=cache_dir)
    excluded = set(exclude)
    # A map shows at most a few hundred definitions: ranking more pairs than the budget has tokens is waste.
    ranked = [(f, d) for f, d, _ in rank_definitions(index, focus_files=focus_files, mentioned=mentioned,
                                                     imported=imported, graph=graph, limit=max(200, budget))
              if f not in excluded]
    if not ranked:
        return ""
    # Binary search on how many definitions to show; tokens grow with the count.
    # Signatures average 3-4 characters per Qwen token, so past 10 characters per
    # token of budget the map is surely over: no need to render more than that.
    chars, hi = 0, 0
    for _, d in ranked:
        chars += len(d.signature) + 8
        hi += 1
        if chars > budget * 10:
            break
    lo, best = 1, ""
    while lo <= hi:
        mid = (lo + hi) // 2
        text = render(index, ranked[:mid])
        if count_tokens(text) <= budget:
            best, lo = text, mid + 1
        else:
            hi = mid - 1
    return best
