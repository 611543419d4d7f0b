"""The live index's repo map across index versions: every keystroke is a new version, but most
keystrokes change nothing the map shows.

A map is `repomap.repo_map` in two steps, each kept with what it read, so that a later version
reuses it when those inputs are unchanged:

- the ranking (the PageRank over the reference graph): it reads the graph, the files defining the
  names the failure mentions and the definition names of the focus files. An edit inside a body
  leaves the graph's edges as they were (the index's graph is then equal, if not the same object).
- the fitted text (the binary search on how many definitions fit the budget): it reads the
  definitions it tried and their files' tags (containers around methods). A FileTags object is
  replaced, never changed, when its file changes (repomap.FileTags.by_name), so an unchanged file
  is the same object.

The result is byte-identical to `repomap.repo_map` on the same index (the tests compare); only the
work is skipped. Pure computation over the index's objects, no I/O."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from qwen_lsp.context.ranking import RefGraph, rank_definitions
from qwen_lsp.context.repomap import FileTags, TagIndex, fit_bound, fit_map
from qwen_lsp.context.treesitter import Definition

MAX_ENTRIES = 64  # per step: a few focus files and budgets at a time


@dataclass
class _Listed:
    tags: dict[str, FileTags]  # the files listed, their tags then
    items: list[tuple[float, str, int, int, Definition]]  # (-score, file, line, order in the file, definition), sorted
    ranked: list[tuple[str, Definition]]  # (file, definition) of each item


@dataclass
class _Ranking:
    graph: RefGraph
    inputs: tuple  # the definers of the mentioned names, the focus files' definition names
    by_file: dict[str, dict[str, float]]  # file -> name -> score, as rank_definitions scored them
    listed: dict[frozenset[str], _Listed] = field(default_factory=dict)  # by the files left out

    def ranked(self, index: TagIndex, excluded: frozenset[str]) -> list[tuple[str, Definition]]:
        """rank_definitions' list for today's definitions (the scores are per file and name), without
        the `excluded` files. Only the files whose tags changed since the last call are listed again."""
        before = self.listed.get(excluded)
        now = {f: tags for f in self.by_file if f not in excluded and (tags := index.files.get(f)) is not None}
        if before is not None and before.tags.keys() == now.keys():
            changed = {f for f, tags in now.items() if before.tags[f] is not tags}
            if not changed:
                return before.ranked
            items = [t for t in before.items if t[1] not in changed]
        else:
            changed, items = set(now), []
        for f in changed:
            # rank_definitions sorts by (-score, file, line), stably: ties keep the order of the file's names
            order = 0
            for name, score in self.by_file[f].items():
                for d in now[f].by_name.get(name, ()):
                    items.append((-score, f, d.line, order, d))
                    order += 1
        items.sort()  # no two items compare equal up to the order: definitions are never compared
        listed = _Listed(now, items, [(f, d) for _, f, _, _, d in items])
        if len(self.listed) >= MAX_ENTRIES:
            self.listed.pop(next(iter(self.listed)))
        self.listed[excluded] = listed
        return listed.ranked


@dataclass
class _Fitted:
    ranking: _Ranking
    tried: list[tuple[str, Definition]]  # the definitions the fit looked at, best first
    tags: dict[str, FileTags]  # their files' tags then
    text: str
    shown: int  # how many of them the text shows


class MapMemo:
    """Rankings and fitted maps of one live index (one request at a time: a lock)."""

    def __init__(self) -> None:
        self._rankings: dict[tuple, _Ranking] = {}
        self._fitted: dict[tuple, _Fitted] = {}
        self._lock = threading.Lock()  # a prefetch and a fix may assemble at once, on two threads

    def repo_map(
        self, index: TagIndex, graph: RefGraph, budget: int, *, focus_files: Iterable[str] = (),
        mentioned: Iterable[str] = (), exclude: Iterable[str] = (), imported: Iterable[str] = (),
    ) -> str:
        """What `repomap.repo_map(..., index=index, graph=graph)` returns, from memory when its inputs
        are unchanged."""
        if budget <= 0:
            return ""
        with self._lock:
            return self._repo_map(index, graph, budget, focus_files, mentioned, exclude, imported)

    def _repo_map(self, index: TagIndex, graph: RefGraph, budget: int, focus_files: Iterable[str],
                  mentioned: Iterable[str], exclude: Iterable[str], imported: Iterable[str]) -> str:
        focus = tuple(dict.fromkeys(focus_files))
        names = tuple(sorted(set(mentioned)))
        imports = tuple(sorted(set(imported)))
        limit = max(200, budget)
        ranking = self._ranking(index, graph, focus, names, imports, limit)
        excluded = frozenset(exclude)
        ranked = ranking.ranked(index, excluded)
        if not ranked:
            return ""
        hi = fit_bound(ranked, budget)
        tried = ranked[:hi]
        key = (focus, names, imports, limit, budget, tuple(sorted(excluded)))
        fitted = self._fitted.get(key)
        if (fitted is None or fitted.ranking is not ranking or fitted.tried != tried
                or any(index.files.get(f) is not tags for f, tags in fitted.tags.items())):
            tags = {f: index.files[f] for f, _ in tried}
            text, shown = fit_map(index, ranked, hi, budget, fitted.shown if fitted is not None else 0)
            fitted = _Fitted(ranking, tried, tags, text, shown)
            _put(self._fitted, key, fitted)
        return fitted.text

    def _ranking(self, index: TagIndex, graph: RefGraph, focus: tuple[str, ...], names: tuple[str, ...],
                 imports: tuple[str, ...], limit: int) -> _Ranking:
        inputs = (
            tuple(tuple(sorted(index.defined_in.get(n, ()))) for n in names),
            tuple(tuple(d.name for d in index.files[f].defs) if f in graph.file_pos else None for f in focus),
        )
        key = (focus, names, imports, limit)
        hit = self._rankings.get(key)
        if hit is not None and hit.inputs == inputs and _same_graph(hit.graph, graph):
            if hit.graph is not graph:  # equal: keep the new one, so the next check is by identity
                hit = _Ranking(graph, inputs, hit.by_file, hit.listed)
                _put(self._rankings, key, hit)
            return hit
        by_file: dict[str, dict[str, float]] = {}
        for f, d, score in rank_definitions(index, focus_files=focus, mentioned=names, imported=imports, graph=graph,
                                            limit=limit):
            by_file.setdefault(f, {})[d.name] = score  # one score per (file, name)
        hit = _Ranking(graph, inputs, by_file)
        _put(self._rankings, key, hit)
        return hit


def _same_graph(a: RefGraph, b: RefGraph) -> bool:
    """Whether two reference graphs rank alike: the same files, names and weighted edges."""
    if a is b:
        return True
    return (a.files == b.files and a.names == b.names and all(
        np.array_equal(x, y) for x, y in ((a.src, b.src), (a.dst, b.dst), (a.name, b.name), (a.weight, b.weight),
                                          (a.generic, b.generic), (a.short, b.short))))


def _put(memo: dict, key: tuple, value: object) -> None:
    memo.pop(key, None)
    while len(memo) >= MAX_ENTRIES:
        memo.pop(next(iter(memo)))
    memo[key] = value
