"""One file per workspace holding its whole tag index, for one-shot processes (qfix, qwen-review,
the language server's first load) to start warm in a few tens of milliseconds.

The snapshot is columnar: every definition's fields in flat lists and packed integer arrays,
every file's references as ids into one name table. `marshal` loads that in a few milliseconds
(no per-definition objects); a file's `Definition`s and reference `Counter` are built only when
something reads them (see `repomap.FileTags`). It is validated by stat stamps, never trusted
blindly:

- per file, (mtime_ns, size): a changed file falls back to the per-file tag cache or a re-parse;
- per walked folder and per `.gitignore`, the same stamps: when none changed, neither did the
  file listing (a folder's mtime changes whenever an entry is added, removed or renamed);
- a stamp no older than the build that recorded it, minus `RACY_NS`, is not trusted (as git does
  with its index): a file written in the same clock tick as the snapshot might change unseen.

A snapshot that is corrupt, truncated, from another format or Python version, or for another
workspace is ignored (and then rewritten). Writes go to a temporary file and `os.replace`, so
two processes building at once each leave a whole snapshot.

Next to it, a `.graph` file may hold the reference graph ranking builds from these tags
(ranking.stored_graph): stored under the snapshot's `content_key`, a digest of exactly what the
graph depends on (the tagged files, their definitions' names, kinds and depths, their reference
counts), so a graph is only ever read back for the same tags; same checksum, same atomic write."""

from __future__ import annotations

import gc
import hashlib
import logging
import marshal
import os
import sys
import time
import zlib
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

from qwen_lsp.context.treesitter import Definition

log = logging.getLogger(__name__)

FORMAT = 6  # 6: defined_in's files as sorted tuples (sets were ~4x the memory)
MAGIC = b"QWENSNAP"
GRAPH_MAGIC = b"QWENGRPH"
# marshal's format may change between Python versions: a snapshot is only read by the one that wrote it.
_VERSION = f" {FORMAT} {sys.version_info[0]}.{sys.version_info[1]} {marshal.version}\n".encode()
_HEADER = MAGIC + _VERSION
_GRAPH_HEADER = GRAPH_MAGIC + _VERSION
RACY_NS = 2_000_000_000  # covers file systems with 1-2 s timestamps
MAX_SNAPSHOTS = 32  # workspaces kept; the least recently written go first (each is rebuilt on demand)
ABANDONED_SECONDS = 3600  # a temporary file this old is no write in progress

Stamp = tuple[int, int]  # (st_mtime_ns, st_size)
RawDef = tuple[str, str, int, int, str, int]  # Definition's fields in order
# name -> the files defining it, sorted: a tuple of one file is a quarter of a set's memory, and
# ~90% of a big repository's ~230k names have one definer (~40 MB less on a 25,000-file tree).
DefinedIn = dict[str, tuple[str, ...]]


def snapshot_path(cache_dir: Path, workspace: Path, version: int) -> Path:
    key = hashlib.sha256(os.path.abspath(workspace).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return Path(cache_dir) / f"repomap-snapshot-v{version}" / f"{key}.snap"


def graph_path(snapshot: Path) -> Path:
    """Where the reference graph of the snapshot at `snapshot` is stored."""
    return Path(snapshot).with_suffix(".graph")


def stamp(path: str) -> Stamp | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


@dataclass
class Listing:
    """The files a walk found, with the stamps of what it read to find them (folders, .gitignores)."""

    files: list[str]
    watched: list[str]  # workspace-relative folders ("" is the root) and .gitignore files
    stamps: list[Stamp]


class Snapshot:
    """A loaded snapshot. Per-file accessors take the file's position in `files`."""

    def __init__(self, body: tuple) -> None:
        (self.key, self.content_key, self.started_ns, listing, files, stamps, tagged, def_counts, sep, names, name_offs,
         kind_table, kinds, lines, ends, sigs, sig_offs, depths, ref_table, ref_counts, ref_ids, ref_n, defined_in) = body
        self.files: list[str] = files
        self.stamps = _ints(stamps)
        self.tagged: bytes = tagged
        self._def_start = [0, *accumulate(_ints(def_counts))]
        # Names and signatures as one string each (every one followed by `sep`, a character none of
        # them contains), split per file when read: no 80k str objects at load.
        self._sep: str = sep
        self._names: str = names
        self._name_offs = _ints(name_offs)
        self.defined_in: DefinedIn = defined_in  # as the TagIndex has it
        self._kind_table: list[str] = kind_table
        self._kinds = _ints(kinds)
        self._lines, self._ends, self._depths = _ints(lines), _ints(ends), _ints(depths)
        self._sigs: str = sigs
        self._sig_offs = _ints(sig_offs)
        self._ref_table: list[str] = ref_table
        self._ref_start = [0, *accumulate(_ints(ref_counts))]
        self._ref_ids, self._ref_n = _ints(ref_ids), _ints(ref_n)
        self.listing: Listing | None = None
        if listing is not None:
            listed, watched, watched_stamps = listing
            w = _ints(watched_stamps)
            self.listing = Listing(listed, watched, list(zip(w[0::2], w[1::2])))
        n, n_defs, n_refs = len(files), len(self._lines), len(self._ref_ids)
        # A snapshot that passed its checksum is ours; these checks catch a writer bug, not an attacker.
        if not (len(self.stamps) == 2 * n and len(tagged) == n and len(self._def_start) == n + 1
                and self._def_start[-1] == n_defs == len(self._kinds) == len(self._lines) == len(self._ends)
                == len(self._depths) and len(self._ref_start) == n + 1
                and self._ref_start[-1] == n_refs == len(self._ref_n)
                and len(self._name_offs) == len(self._sig_offs) == n + 1 and len(sep) == 1
                and self._name_offs[-1] == len(names) and self._sig_offs[-1] == len(sigs)
                and names.count(sep) == sigs.count(sep) == n_defs
                and (not n_defs or max(self._kinds) < len(kind_table))
                and isinstance(defined_in, dict) and (not n_refs or max(self._ref_ids) < len(ref_table))
                and isinstance(self.content_key, str)):
            raise ValueError("inconsistent snapshot")

    def stamp(self, i: int) -> Stamp:
        return (self.stamps[2 * i], self.stamps[2 * i + 1])

    def trusted(self, current: Stamp | None, recorded: Stamp) -> bool:
        """Whether a path stamped `current` now is as it was when the snapshot recorded it."""
        return current == recorded and recorded[0] < self.started_ns - RACY_NS

    def _cut(self, text: str, offs: array, i: int) -> list[str]:
        a, b = offs[i], offs[i + 1]
        return text[a : b - 1].split(self._sep) if a < b else []

    def raw_defs(self, i: int) -> list[RawDef]:
        a, b = self._def_start[i], self._def_start[i + 1]
        kt = self._kind_table
        return list(zip(self._cut(self._names, self._name_offs, i), map(kt.__getitem__, self._kinds[a:b]),
                        self._lines[a:b], self._ends[a:b], self._cut(self._sigs, self._sig_offs, i), self._depths[a:b]))

    def defs(self, i: int) -> list[Definition]:
        return [Definition(*d) for d in self.raw_defs(i)]

    def names(self, i: int) -> Iterable[tuple[str, str, int]]:
        """(name, kind, depth) of file i's definitions, without building them."""
        a, b = self._def_start[i], self._def_start[i + 1]
        kt = self._kind_table
        return zip(self._cut(self._names, self._name_offs, i), map(kt.__getitem__, self._kinds[a:b]), self._depths[a:b])

    def defs_named(self, i: int, wanted: set[str] | frozenset[str]) -> dict[str, list[Definition]]:
        """File i's definitions named in `wanted` (impl blocks left out), in file order, by name:
        only those are built (ranking needs a few names of each file, not all of its definitions)."""
        a = self._def_start[i]
        kt, kinds = self._kind_table, self._kinds
        out: dict[str, list[Definition]] = {}
        sigs: list[str] | None = None
        for k, name in enumerate(self._cut(self._names, self._name_offs, i)):
            if name not in wanted or (kind := kt[kinds[a + k]]) == "impl":
                continue
            if sigs is None:
                sigs = self._cut(self._sigs, self._sig_offs, i)
            out.setdefault(name, []).append(
                Definition(name, kind, self._lines[a + k], self._ends[a + k], sigs[k], self._depths[a + k]))
        return out

    def raw_refs(self, i: int) -> dict[str, int]:
        a, b = self._ref_start[i], self._ref_start[i + 1]
        return dict(zip(map(self._ref_table.__getitem__, self._ref_ids[a:b]), self._ref_n[a:b]))

    def refs(self, i: int) -> Counter[str]:
        out: Counter[str] = Counter()
        dict.update(out, self.raw_refs(i))  # Counter(mapping) would add the counts one by one
        return out


def add_definer(found: dict[str, list[str]], name: str, rel: str) -> None:
    """Note in `found` that file `rel` defines `name` (a file's definitions come together: each
    file is noted once per name)."""
    definers = found.setdefault(name, [])
    if not definers or definers[-1] != rel:
        definers.append(rel)


def definers_table(found: dict[str, list[str]]) -> DefinedIn:
    """`found` (name -> the files defining it, perhaps unsorted) as a DefinedIn."""
    return {name: tuple(sorted(files)) if len(files) > 1 else tuple(files) for name, files in found.items()}


def _ints(data: bytes) -> array:
    out = array("q")
    out.frombytes(data)
    return out


def _packed(values: Iterable[int]) -> bytes:
    return array("q", values).tobytes()


def load(path: Path, key: str) -> Snapshot | None:
    """The snapshot at `path` if it is whole, in this format and for `key`; else None."""
    try:
        parts = _read(path, _HEADER)
        snap = None
        if parts is not None:
            (key_, content_key, started_ns, listing, files, defined_in), *columns = parts
            snap = Snapshot((key_, content_key, started_ns, listing, files, *columns, defined_in))
        return snap if snap is not None and snap.key == key else None
    except Exception:  # anything unexpected in a cache file: rebuild rather than fail
        log.debug("repo-map snapshot %s unreadable; ignored", path, exc_info=True)
        return None


def load_graph(path: Path, key: str) -> tuple | None:
    """The graph body stored at `path` if it is whole, in this format and stored under `key`; else None."""
    try:
        parts = _read(path, _GRAPH_HEADER)
        raw = parts[0] if parts is not None and len(parts) == 1 else None
    except Exception:  # anything unexpected in a cache file: rebuild rather than fail
        log.debug("reference graph %s unreadable; ignored", path, exc_info=True)
        return None
    if not isinstance(raw, tuple) or len(raw) != 2 or raw[0] != key or not isinstance(raw[1], tuple):
        return None
    return raw[1]


def write_graph(path: Path, key: str, body: tuple) -> None:
    """Store a graph body under `key` atomically; failure to write is logged, never raised."""
    _write(path, _GRAPH_HEADER, [marshal.dumps((key, body))], evict=False)


def _read(path: Path, header: bytes) -> list | None:
    """The marshalled parts of the file at `path` if it has `header` and its checksum holds."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    if not data.startswith(header) or len(data) < len(header) + 4:
        return None
    body = memoryview(data)[len(header) + 4 :]
    if zlib.crc32(body) != int.from_bytes(data[len(header) : len(header) + 4], "little"):
        return None
    # Tens of thousands of new containers at once would set off the cyclic GC several times over
    # (up to half the load time in a new process); marshal makes no cycles to collect.
    enabled = gc.isenabled()
    gc.disable()
    try:
        parts, at = [], 0
        while at < len(body):
            size = int.from_bytes(body[at : at + 8], "little")
            if at + 8 + size > len(body):
                raise ValueError("a part runs past the end")
            parts.append(marshal.loads(body[at + 8 : at + 8 + size]))
            at += 8 + size
        return parts
    finally:
        if enabled:
            gc.enable()


def write(
    path: Path, key: str, started_ns: int, listing: Listing | None,
    entries: Iterable[tuple[str, Stamp, Sequence[RawDef] | None, dict[str, int] | None]],
    defined_in: DefinedIn | None,
) -> str | None:
    """Store `entries` (path, stamp, definitions and reference counts, or None for a file without
    tags) atomically at `path`; the snapshot's content key, or None if it was not written.
    `defined_in` (name -> files defining it, impl blocks left out): None to have it made from
    `entries` as they are read. Failure to write is logged, never raised: it only costs speed."""
    found_in: dict[str, list[str]] | None = {} if defined_in is None else None
    kind_pos: dict[str, int] = {}
    ref_pos: dict[str, int] = {}
    files: list[str] = []
    names: list[str] = []
    sigs: list[str] = []
    tagged = bytearray()
    # Integer columns go straight into packed arrays: a list would hold an int object per value
    # (a 25,000-file build: ~100 MB more at the moment the snapshot is written).
    stamps, def_counts, kinds, lines, ends, depths = (array("q") for _ in range(6))
    name_offs, sig_offs, ref_counts, ref_ids, ref_n = array("q", [0]), array("q", [0]), array("q"), array("q"), array("q")
    for rel, st, defs, refs in entries:
        files.append(rel)
        stamps.extend(st)
        tagged.append(defs is not None)
        defs, refs = defs or (), refs or {}
        def_counts.append(len(defs))
        name_len = sig_len = 0
        for name, kind, line, end, sig, depth in defs:
            if found_in is not None and kind != "impl":
                add_definer(found_in, name, rel)
            names.append(name)
            kinds.append(kind_pos.setdefault(kind, len(kind_pos)))
            lines.append(line)
            ends.append(end)
            sigs.append(sig)
            depths.append(depth)
            name_len += len(name) + 1
            sig_len += len(sig) + 1
        name_offs.append(name_offs[-1] + name_len)
        sig_offs.append(sig_offs[-1] + sig_len)
        ref_counts.append(len(refs))
        for name, n in refs.items():
            ref_ids.append(ref_pos.setdefault(name, len(ref_pos)))
            ref_n.append(n)
    # A separator no name or signature contains (a NUL in a signature is rare, but possible).
    probe = "".join(names) + "".join(sigs)
    sep = next((c for c in "\x00\x01\x02\x03\x1f" if c not in probe), None)
    del probe
    if sep is None:
        log.debug("repo-map snapshot not written: no free separator")
        return None
    listing_body = None
    if listing is not None:
        listing_body = (listing.files, listing.watched, _packed(v for s in listing.stamps for v in s))
    names_text, kind_table = sep.join(names) + sep if names else "", list(kind_pos)
    del names
    sigs_text = sep.join(sigs) + sep if sigs else ""
    del sigs
    kinds_packed, depths_packed = kinds.tobytes(), depths.tobytes()
    ref_table, ref_parts = list(ref_pos), (ref_counts.tobytes(), ref_ids.tobytes(), ref_n.tobytes())
    content_key = _content_key(files, bytes(tagged), def_counts.tobytes(), sep, names_text, kind_table, kinds_packed,
                               depths_packed, ref_table, *ref_parts)
    # In parts, each marshalled as it is written (a 25,000-file snapshot is ~60 MB: the whole body
    # at once was the peak of the build's memory). The first holds what shares the file names.
    if found_in is not None:
        defined_in = definers_table(found_in)
        del found_in
    assert defined_in is not None
    # marshal takes no dict subclass
    head = (key, content_key, started_ns, listing_body, files, defined_in if type(defined_in) is dict else dict(defined_in))
    columns = [head, stamps, bytes(tagged), def_counts, sep, names_text, name_offs, kind_table, kinds_packed, lines, ends,
               sigs_text, sig_offs, depths_packed, ref_table, *ref_parts]
    del names_text, sigs_text, ref_table, ref_parts, kinds_packed, depths_packed, head

    def parts() -> Iterator[bytes]:
        while columns:
            column = columns.pop(0)
            yield marshal.dumps(column.tobytes() if isinstance(column, array) else column)
    return content_key if _write(path, _HEADER, parts(), evict=True) else None


def _content_key(files: list[str], tagged: bytes, def_counts: bytes, sep: str, names: str, kind_table: list[str],
                 kinds: bytes, depths: bytes, ref_table: list[str], ref_counts: bytes, ref_ids: bytes,
                 ref_n: bytes) -> str:
    """A digest of what the reference graph depends on: which files have tags, their definitions'
    names, kinds and depths, their references and counts (not lines, signatures or stamps)."""
    digest = hashlib.blake2b(digest_size=20)
    for part in (files, tagged, def_counts, sep, names, kind_table, kinds, depths, ref_table, ref_counts, ref_ids, ref_n):
        if isinstance(part, list):
            part = "\x00".join(part)  # paths and identifiers hold no NUL
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def _write(path: Path, header: bytes, parts: Iterable[bytes], *, evict: bool) -> bool:
    """`header`, checksum and `parts` (each after its length) to `path` through a temporary file
    and `os.replace`."""
    import tempfile  # only when writing: its import costs a tenth of a warm load

    tmp = None
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=Path(path).parent, prefix=".snap-")
        with os.fdopen(fd, "wb") as out:
            out.write(header + bytes(4))  # the checksum once the parts are written
            crc = 0
            for part in parts:
                size = len(part).to_bytes(8, "little")
                crc = zlib.crc32(part, zlib.crc32(size, crc))
                out.write(size)
                out.write(part)
                del part  # before the next one is made
            out.seek(len(header))
            out.write(crc.to_bytes(4, "little"))
        os.replace(tmp, path)
        tmp = None
        if evict:
            _evict(Path(path).parent, keep=Path(path).name)
        return True
    except OSError:
        log.debug("%s not written", path, exc_info=True)
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _evict(folder: Path, keep: str) -> None:
    """Delete the least recently written snapshots beyond MAX_SNAPSHOTS, with their graphs, and
    temporary files a process left when it ended mid-write (a preload's thread dies with qfix)."""
    try:
        found = [(p.stat().st_mtime_ns, p) for p in folder.glob("*.snap") if p.name != keep]
        abandoned = [p for p in folder.glob(".snap-*") if p.stat().st_mtime < time.time() - ABANDONED_SECONDS]
    except OSError:
        return
    for _, old in sorted(found)[: max(0, len(found) + 1 - MAX_SNAPSHOTS)]:
        abandoned += [old, graph_path(old)]
    for stale in abandoned:
        try:
            stale.unlink()
        except OSError:  # another process got there first, or there is no graph
            pass
