"""Repo map: definition/reference tags across the workspace, ranked with
PageRank personalised on the files of the request, rendered as signatures
within a hard token budget.

Tags are cached on disk per file, keyed by mtime and size, so a warm map of a
large repository only stats its files. `.gitignore` files (nested ones too)
are honoured; binaries, huge files and files without a grammar are skipped."""

from __future__ import annotations

import hashlib
import logging
import os
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import pathspec

from qwen_lsp.files import inside
from qwen_lsp.context.treesitter import CONTAINER_KINDS, Definition, definitions, has_definitions, language_for, parse, references
from qwen_lsp.llm.tokens import count_tokens

if TYPE_CHECKING:
    from qwen_lsp.context.ranking import RefGraph

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
