"""Repo map: definition/reference tags across the workspace, ranked with
PageRank personalised on the files of the request, rendered as signatures
within a hard token budget.

Tags are cached on disk per file, keyed by mtime and size, so a warm map of a
large repository only stats its files. `.gitignore` files (nested ones too)
are honoured; binaries, huge files and files without a grammar are skipped."""

from __future__ import annotations

import math
import os
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx
import pathspec

from qwen_lsp.context.treesitter import CONTAINER_KINDS, Definition, definitions, identifiers, language_for, parse
from qwen_lsp.tokens import count_tokens

MAX_FILE_BYTES = 512_000  # bigger source files are generated or vendored
MAX_FILES = 50_000
CACHE_VERSION = 1
# Never worth mapping, whatever .gitignore says (or when there is none).
ALWAYS_SKIP = {
    ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".eggs", "site-packages", ".idea", ".vscode",
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
        join = (lambda n: f"{rel_dir}/{n}") if rel_dir else (lambda n: n)
        dirnames[:] = sorted(d for d in dirnames if d not in ALWAYS_SKIP and not ignored(join(d), True))
        for name in sorted(filenames):
            if language_for(name) is None:
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
    refs = Counter(name for name, _ in identifiers(tree, lang))
    # A definition's own name is not a reference to it.
    for d in defs:
        if refs.get(d.name):
            refs[d.name] -= 1
            if refs[d.name] <= 0:
                del refs[d.name]
    return FileTags(defs=defs, refs=refs)


def _open_cache(cache_dir: Path | None):  # -> diskcache.Cache | None
    if cache_dir is None:
        return None
    try:
        import diskcache

        return diskcache.Cache(str(Path(cache_dir) / f"repomap-tags-v{CACHE_VERSION}"), size_limit=2**30)
    except Exception:  # unwritable cache dir: run uncached
        return None


def _encode(tags: FileTags) -> tuple:
    return ([(d.name, d.kind, d.line, d.end_line, d.signature, d.depth) for d in tags.defs], dict(tags.refs))


def _decode(raw: tuple) -> FileTags:
    defs, refs = raw
    return FileTags(defs=[Definition(*d) for d in defs], refs=Counter(refs))


def build_index(workspace: Path, *, cache_dir: Path | None = None, files: Iterable[str] | None = None) -> TagIndex:
    """Tags of every source file; unchanged files (same mtime and size) come from the disk cache."""
    workspace = Path(workspace)
    cache = _open_cache(cache_dir)
    index = TagIndex()
    try:
        for rel in files if files is not None else list_files(workspace):
            abs_path = workspace / rel
            try:
                st = abs_path.stat()
            except OSError:
                continue
            if st.st_size > MAX_FILE_BYTES or st.st_size == 0:
                continue
            key = f"{os.path.abspath(abs_path)}\x00{st.st_mtime_ns}\x00{st.st_size}"
            tags = None
            if cache is not None:
                try:
                    raw = cache.get(key)
                    tags = _decode(raw) if raw is not None else None
                except Exception:
                    tags = None
            if tags is None:
                try:
                    data = abs_path.read_bytes()
                except OSError:
                    continue
                if b"\x00" in data[:8192]:
                    continue
                lang = language_for(rel)
                tags = extract_tags(data.decode("utf-8", "replace"), lang) if lang else None
                if tags is None:
                    continue
                if cache is not None:
                    try:
                        cache.set(key, _encode(tags))
                    except Exception:
                        pass
            index.files[rel] = tags
            for d in tags.defs:
                if d.kind != "impl":
                    index.defined_in[d.name].add(rel)
    finally:
        if cache is not None:
            cache.close()
    return index


# --------------------------------------------------------------------------- ranking


def _pagerank(graph: nx.DiGraph, personalization: dict[str, float], alpha: float = 0.85, iters: int = 100) -> dict[str, float]:
    """Weighted, personalised PageRank by power iteration.

    networkx.pagerank needs scipy; the graph has one node per file, so plain
    Python iterations take milliseconds even for a large repository."""
    nodes = list(graph.nodes)
    if not nodes:
        return {}
    total = sum(personalization.get(n, 0.0) for n in nodes)
    pers = {n: personalization.get(n, 0.0) / total for n in nodes} if total > 0 else {n: 1 / len(nodes) for n in nodes}
    out_weight = {n: sum(d.get("weight", 1.0) for _, _, d in graph.out_edges(n, data=True)) for n in nodes}
    rank = dict(pers)
    for _ in range(iters):
        dangling = sum(rank[n] for n in nodes if out_weight[n] == 0)
        new = {n: (1 - alpha) * pers[n] + alpha * dangling * pers[n] for n in nodes}
        for u, v, d in graph.edges(data=True):
            new[v] += alpha * rank[u] * d.get("weight", 1.0) / out_weight[u]
        delta = sum(abs(new[n] - rank[n]) for n in nodes)
        rank = new
        if delta < 1e-9 * len(nodes):
            break
    return rank


def rank_definitions(
    index: TagIndex, *, focus_files: Iterable[str] = (), mentioned: Iterable[str] = ()
) -> list[tuple[str, Definition, float]]:
    """(path, definition, score), best first."""
    focus = [f for f in dict.fromkeys(focus_files)]
    mentioned_set = set(mentioned)
    graph = nx.DiGraph()
    graph.add_nodes_from(index.files)
    n_files = max(1, len(index.files))
    edges: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)  # (referrer, definer) -> name -> weight
    for referrer, tags in index.files.items():
        for name, count in tags.refs.items():
            definers = index.defined_in.get(name)
            if not definers:
                continue
            # Names defined everywhere (get, run, __init__) say little about which file matters.
            mult = 1.0
            if name in mentioned_set:
                mult *= 10
            if name.startswith("_"):
                mult *= 0.1
            if len(definers) > 5:
                mult *= 0.1
            if len(name) < 3:
                mult *= 0.1
            w = mult * math.sqrt(count) / len(definers)
            for definer in definers:
                if definer != referrer:
                    edges[(referrer, definer)][name] = w
    for (u, v), names in edges.items():
        graph.add_edge(u, v, weight=sum(names.values()), names=names)
    personalization = {f: 100.0 / len(focus) for f in focus if f in index.files}
    for f in index.files:
        personalization.setdefault(f, 1.0 / n_files)
    rank = _pagerank(graph, personalization)
    # A file's rank flows to the definitions its references point at.
    scores: dict[tuple[str, str], float] = defaultdict(float)
    for u, v, d in graph.edges(data=True):
        out_w = sum(dd["weight"] for _, _, dd in graph.out_edges(u, data=True))
        for name, w in d["names"].items():
            scores[(v, name)] += rank[u] * w / out_w
    for name in mentioned_set:
        for f in index.defined_in.get(name, ()):
            scores[(f, name)] += 1.0  # named in the failure: always worth a line
    for f in focus:  # the focus files' own definitions, for orientation
        for d in index.files.get(f, FileTags([], Counter())).defs:
            scores[(f, d.name)] += rank.get(f, 0) * 0.01
    ranked = []
    for (f, name), s in scores.items():
        for d in index.files[f].defs:
            if d.name == name and d.kind != "impl":
                ranked.append((f, d, s))
    ranked.sort(key=lambda t: (-t[2], t[0], t[1].line))
    return ranked


# --------------------------------------------------------------------------- rendering


def render(index: TagIndex, chosen: list[tuple[str, Definition]]) -> str:
    """Signatures grouped by file (sorted, so equal selections render byte-identically)."""
    by_file: dict[str, set[Definition]] = defaultdict(set)
    for f, d in chosen:
        by_file[f].add(d)
        # Keep the class around a method: "def save(self)" alone does not say whose.
        for c in index.files[f].defs:
            if c.kind in CONTAINER_KINDS and c.depth < d.depth and c.line < d.line <= c.end_line:
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
) -> str:
    """The highest-ranked definitions that fit in `budget` tokens (never more)."""
    if budget <= 0:
        return ""
    index = index if index is not None else build_index(workspace, cache_dir=cache_dir)
    excluded = set(exclude)
    ranked = [(f, d) for f, d, _ in rank_definitions(index, focus_files=focus_files, mentioned=mentioned) if f not in excluded]
    if not ranked:
        return ""
    # Binary search on how many definitions to show; tokens grow with the count.
    lo, hi, best = 1, min(len(ranked), budget), ""
    while lo <= hi:
        mid = (lo + hi) // 2
        text = render(index, ranked[:mid])
        if count_tokens(text) <= budget:
            best, lo = text, mid + 1
        else:
            hi = mid - 1
    return best
