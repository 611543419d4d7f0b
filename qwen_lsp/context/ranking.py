"""Ranking the repo map's definitions: files are nodes, a file that references a name links to the
files defining it, and a personalised PageRank restarts at the request's focus files. What does not
depend on the request (the reference graph) is built once per index version and can be updated
file by file; the walk itself is vectorised with numpy.

A one-shot process (qfix, qwen-review) reads the graph back from next to the workspace snapshot
(`stored_graph`) instead of building it: it is stored under the snapshot's content key (exactly the
tags it was built from) and this module's own graph settings, so it is the very graph
`build_graph` would give; a missing, damaged or stale file is rebuilt and rewritten."""

from __future__ import annotations

import builtins
import dataclasses
import hashlib
import logging
import math
import re
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import repeat

import numpy as np

from qwen_lsp.context import snapshot
from qwen_lsp.context.repomap import MAX_DEFINERS, FileTags, TagIndex
from qwen_lsp.context.treesitter import Definition, imports, language_for

log = logging.getLogger(__name__)

# Names that every codebase calls through builtins or the methods of builtin types: a call to
# `x.join()` or `dict()` says nothing about which of the workspace's `join`s or `dict`s is meant.
GENERIC_NAMES = frozenset(
    {n for n in dir(builtins) if not n.startswith("_")}
    | {n for t in (str, bytes, list, dict, set, tuple, int, float, object) for n in dir(t) if not n.startswith("_")}
    | {"get", "set", "update", "append", "add", "remove", "close", "open", "read", "write", "run", "call", "main",
       "init", "new", "push", "pop", "map", "filter", "then", "catch", "log", "error", "next", "apply", "test"}
)
GENERIC_DISCOUNT = 0.05
# Bump when build_graph's result changes for the same tags: stored graphs of the old kind are then rebuilt.
GRAPH_FORMAT = 1
# Everything besides the tags that a stored graph depends on.
_GRAPH_CONFIG = hashlib.blake2b(repr((GRAPH_FORMAT, MAX_DEFINERS, GENERIC_DISCOUNT, sorted(GENERIC_NAMES))).encode(),
                                digest_size=12).hexdigest()


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
    # Per name (aligned with `names`): its weight per reference, and the files defining it,
    # definers[definer_start[i] : definer_start[i + 1]]. Packed: as a dict of tuples and lists of
    # int objects, the ~140k names of a 25,000-file tree were ~18 MB.
    name_weight: array  # "d"
    definer_start: array  # "q"
    definers: array  # "q"


def build_graph(index: TagIndex) -> RefGraph:
    """The reference graph of `index`: a file that references a name links to the files defining it,
    weighted by how telling the name is (inverse document frequency, definers, visibility)."""
    files = sorted(index.files)  # the same arrays, so the same floating-point sums, in every process
    file_pos = {f: i for i, f in enumerate(files)}
    n_files = max(1, len(files))
    # Every file's reference counts read once, as columns: (file, name's number here, count).
    seen = _Numbering()
    ref_file, ref_name, ref_count = array("i"), array("i"), array("d")
    for u, referrer in enumerate(files):
        refs = index.files[referrer].ref_counts()
        ref_file.extend(repeat(u, len(refs)))
        ref_name.extend(map(seen.__getitem__, refs))
        ref_count.extend(refs.values())
    # Inverse document frequency: a name every file uses ("django", "value") says little.
    referrers = np.bincount(np.frombuffer(ref_name, dtype=np.int32), minlength=len(seen)).tolist()
    top_level = {name for tags in index.files.values() for name, _kind, depth in tags.outline() if depth == 0}
    methods_only = index.defined_in.keys() - top_level
    factor: dict[str, tuple[float, list[int]]] = {}
    for name, definers in index.defined_in.items():
        df = referrers[j] if (j := seen.get(name)) is not None else 0
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
    del top_level, methods_only, referrers
    name_pos = {n: i for i, n in enumerate(names)}
    name_weight, definer_start, definers = array("d"), array("q", [0]), array("q")
    for name in names:
        w, targets = factor.pop(name)
        name_weight.append(w)
        definers.extend(targets)
        definer_start.append(len(definers))
    graph = RefGraph(
        files=files, file_pos=file_pos, names=names, name_pos=name_pos, src=_EMPTY_INT, dst=_EMPTY_INT,
        name=_EMPTY_INT, weight=np.zeros(0), generic=np.asarray([n in GENERIC_NAMES for n in names], dtype=bool),
        short=np.asarray([len(n) < 3 for n in names], dtype=bool),
        name_weight=name_weight, definer_start=definer_start, definers=definers,
    )
    numbered = np.full(len(seen), -1, dtype=np.int32)  # a name's number here -> its index in `names`
    for name, i in name_pos.items():
        if (j := seen.get(name)) is not None:
            numbered[j] = i
    del seen
    graph.src, graph.dst, graph.name, graph.weight = _all_rows(graph, ref_file, numbered, ref_name, ref_count)
    return graph


def _all_rows(graph: RefGraph, ref_file: array, numbered: np.ndarray, ref_name: array,
              ref_count: array) -> tuple[np.ndarray, ...]:
    """The rows (src, dst, name, weight) of reference counts given as columns: file, the name's
    number (`numbered` maps it to its index in `graph.names`, -1 for a name not there), count. One
    per (file, name it references, another file defining that name), by file then name: ~800k rows
    of a 25,000-file tree, with numpy."""
    nid = numbered[np.frombuffer(ref_name, dtype=np.int32)]
    keep = nid >= 0
    u, nid, count = np.frombuffer(ref_file, dtype=np.int32)[keep], nid[keep], np.frombuffer(ref_count)[keep]
    order = np.lexsort((nid, u))  # by file, then by name (`names` is sorted)
    u, nid, count = u[order], nid[order], count[order]
    w = np.frombuffer(graph.name_weight)[nid] * np.sqrt(count)
    keep = w > 0
    u, nid, w = u[keep], nid[keep], w[keep]
    start = np.frombuffer(graph.definer_start, dtype=np.int64)
    first, n = start[nid], start[nid + 1] - start[nid]
    # Each (file, name) once per file defining the name, in the order of its definers.
    at = np.arange(int(n.sum()), dtype=np.int64) - np.repeat(np.cumsum(n) - n, n) + np.repeat(first, n)
    dst = np.frombuffer(graph.definers, dtype=np.int64)[at].astype(np.int32)
    src = np.repeat(u, n)
    keep = dst != src  # no edge from a file to itself
    return src[keep], dst[keep], np.repeat(nid, n)[keep], np.repeat(w, n)[keep]


class _Numbering(dict):
    """Each key's number, in the order keys are first looked up."""

    def __missing__(self, key: str) -> int:
        self[key] = n = len(self)
        return n


_EMPTY_INT = np.zeros(0, dtype=np.int32)


def stored_graph(index: TagIndex) -> RefGraph:
    """`build_graph(index)`, read back from where build_index said the graph of these very tags is
    stored (`index.stored_graph`) when it is there and whole; else built, and stored for next time."""
    if index.stored_graph is None:
        return build_graph(index)
    path, content_key = index.stored_graph
    key = f"{content_key}:{_GRAPH_CONFIG}"
    body = snapshot.load_graph(path, key)
    if body is not None:
        try:
            graph = _from_body(body)
            if graph.files == sorted(index.files):  # the content key says so; a cheap check all the same
                return graph
        except Exception:  # a cache file we cannot make sense of: rebuild rather than fail
            log.debug("stored reference graph %s unusable; rebuilt", path, exc_info=True)
    graph = build_graph(index)
    snapshot.write_graph(path, key, _to_body(graph))
    return graph


def _to_body(graph: RefGraph) -> tuple:
    """The graph as plain lists and bytes for marshal."""
    return (graph.files, graph.names, graph.src.tobytes(), graph.dst.tobytes(), graph.name.tobytes(),
            graph.weight.tobytes(), graph.generic.tobytes(), graph.short.tobytes(), graph.name_weight.tobytes(),
            graph.definer_start.tobytes(), graph.definers.tobytes())


def _from_body(body: tuple) -> RefGraph:
    files, names, src, dst, nid, weight, generic, short, factor_w, offsets, definers = body
    src, dst, nid = (np.frombuffer(b, dtype=np.int32) for b in (src, dst, nid))
    weight = np.frombuffer(weight, dtype=np.float64)
    generic, short = np.frombuffer(generic, dtype=bool), np.frombuffer(short, dtype=bool)
    w, off, targets = array("d", factor_w), array("q", offsets), array("q", definers)
    n_files, n_names = len(files), len(names)
    if not (len(src) == len(dst) == len(nid) == len(weight) and len(generic) == len(short) == len(w) == n_names
            and len(off) == n_names + 1 and off[-1] == len(targets)
            and (not len(src) or (max(src.max(), dst.max()) < n_files and min(src.min(), dst.min()) >= 0
                                  and 0 <= nid.min() and nid.max() < n_names))):
        raise ValueError("inconsistent stored graph")
    return RefGraph(
        files=files, file_pos={f: i for i, f in enumerate(files)}, names=names,
        name_pos={n: i for i, n in enumerate(names)}, src=src, dst=dst, name=nid, weight=weight,
        generic=generic, short=short, name_weight=w, definer_start=off, definers=targets,
    )


def _file_rows(graph: RefGraph, u: int, tags: FileTags) -> tuple[np.ndarray, ...]:
    """The rows out of file `u` alone, as build_graph makes them (update_graph's)."""
    known = [(i, count) for name, count in tags.ref_counts().items() if (i := graph.name_pos.get(name)) is not None]
    return _all_rows(graph, array("i", repeat(u, len(known))), np.arange(len(graph.names), dtype=np.int32),
                     array("i", (i for i, _ in known)), array("d", (count for _, count in known)))


def tags_shape(tags: FileTags) -> tuple[frozenset, frozenset]:
    """What of a file's tags the graph's weights depend on beyond its own reference counts."""
    return frozenset(tags.refs), frozenset((d.name, d.depth == 0, d.kind == "impl") for d in tags.defs)


def update_graph(graph: RefGraph, index: TagIndex, changed: Iterable[str]) -> RefGraph:
    """`graph` with the edges out of the `changed` files recomputed from `index`.

    Exact only when the changed files' `tags_shape` is what it was when `graph` was built (an edit
    inside a body: the same names referenced and defined, other counts): then no name's weight, no
    definer and no file changes, and only those files' own rows do. The caller checks that."""
    # The rows are sorted by referrer (stably): a file's rows are one run, replaced by its new rows
    # in place. No sort of the ~800k rows of a 25,000-file graph on every edit.
    columns = (graph.src, graph.dst, graph.name, graph.weight)
    pieces: list[tuple[np.ndarray, ...]] = []
    at = 0
    for u in sorted({graph.file_pos[rel] for rel in changed}):
        start, end = np.searchsorted(graph.src, [u, u + 1], side="left")
        pieces += [tuple(c[at:start] for c in columns), _file_rows(graph, u, index.files[graph.files[u]])]
        at = end
    pieces.append(tuple(c[at:] for c in columns))
    src, dst, nid, weight = (np.concatenate([p[k] for p in pieces]) for k in range(4))
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


def focus_imports(focus: Iterable[str], read: Callable[[str], str | None]) -> frozenset[str]:
    """Names the focus files import, read through `read` (buffers first): what they really use."""
    names: set[str] = set()
    for rel in focus:
        lang = language_for(rel)
        text = read(rel) if lang is not None else None
        if text:
            names |= imported_names(text, lang)
    return frozenset(names)


def rank_definitions(
    index: TagIndex, *, focus_files: Iterable[str] = (), mentioned: Iterable[str] = (),
    imported: Iterable[str] = (), graph: RefGraph | None = None, limit: int | None = None,
) -> list[tuple[str, Definition, float]]:
    """(path, definition, score), best first.

    Files are nodes; a file that references a name links to the files defining it. The random
    walk restarts at the focus files (current file, traceback frames), so what they use, and what
    that uses, ranks first. Names named in the failure weigh 10x; names the focus files import
    are what they really use, so the generic and short-name discounts do not apply to them."""
    graph = graph if graph is not None else stored_graph(index)
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
        for name, _kind, _depth in index.files[f].outline():
            scores[(f, name)] += r * 0.01
    # Only the definitions ranked are built, not every one of each ranked file.
    wanted: dict[str, set[str]] = defaultdict(set)
    for f, name in scores:
        wanted[f].add(name)
    found = {f: index.files[f].named(names) for f, names in wanted.items()}
    ranked = [(f, d, s) for (f, name), s in scores.items() for d in found[f].get(name, ())]
    ranked.sort(key=lambda t: (-t[2], t[0], t[1].line))
    return ranked


