"""Tagging many files at once on every core: the first index build of a large workspace.

Parsing and querying a file is ~2 ms of CPU, nearly all of it in tree-sitter with the GIL held, so
a 25,000-file repository is most of a minute on one core however it is threaded. When a build has
more than PARALLEL_MIN files to tag, `tag_files` runs it in a few worker processes (this module run
as a program, one per core, up to MAX_WORKERS) fed chunks of file names; each answers with the
files' tags as plain tuples, the form the snapshot stores (repomap.FileTags._raw), so the process
that builds keeps no tree and no per-definition object of them.

The workers are plain subprocesses of this interpreter reading length-prefixed marshal frames on
stdin and writing them on stdout. A worker ignores Ctrl-C (its parent decides) and ends when its
stdin closes, so one whose parent died or was interrupted goes too; one that fails or dies has its
chunk tagged in-process. They import only this package's own code (`-P`, the package's folder put
first): a workspace's files are never on their import path.
"""

from __future__ import annotations

import logging
import marshal
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

PARALLEL_MIN = 400  # fewer files: tagged in-process (a worker takes ~0.3 s to start)
MAX_WORKERS = 4
CHUNK = 64  # files per request: small enough to share the work out evenly and report progress often

RawTags = tuple[list[tuple], dict[str, int]]  # (definitions as tuples, reference counts)
Packed = bytes  # a file's RawTags, marshalled: how a big build holds them until its snapshot is written
Progress = Callable[[int, int], None]  # (files tagged so far, files to tag)
_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding this `qwen_lsp`


def tag_file(path: str, rel: str, *, whole: bool = False) -> RawTags | None:
    """The tags of the file at `path` (named `rel` in its workspace), or None when it has none: too
    big, binary, unreadable, or of a language without a grammar. The one rule, in-process or not
    (`whole`: a worker's, see treesitter.tags; the same tags)."""
    from qwen_lsp.context.repomap import MAX_FILE_BYTES, raw_tags
    from qwen_lsp.context.treesitter import language_for

    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    if len(data) > MAX_FILE_BYTES or b"\x00" in data[:8192]:
        return None
    lang = language_for(rel)
    return raw_tags(data.decode("utf-8", "replace"), lang, whole=whole) if lang else None


def workers_for(n_files: int) -> int:
    """How many worker processes tagging `n_files` is worth (0: tag them in-process)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if n_files < PARALLEL_MIN or cores < 2:
        return 0
    return min(cores, MAX_WORKERS)


def tag_files(workspace: str, rels: Sequence[str], progress: Progress | None = None,
              workers: int | None = None, packed: bool = False) -> dict[str, RawTags | Packed | None]:
    """The tags of every file of `rels` (workspace-relative), on `workers` processes (default:
    `workers_for`), calling `progress(done, total)` after each chunk. Never raises for a worker:
    what a worker did not answer is tagged here. With `packed`, each file's tags come marshalled
    (`unpack` reads them): a third of the memory of the tuples until they are written."""
    total = len(rels)
    workers = workers_for(total) if workers is None else workers
    prefix = os.path.join(workspace, "")
    out: dict[str, RawTags | Packed | None] = {}
    lock = threading.Lock()
    chunks = [list(rels[i : i + CHUNK]) for i in range(0, total, CHUNK)]
    chunks.reverse()  # popped from the end: in order

    if progress is not None and total:
        progress(0, total)

    def done(found: dict[str, Packed | None]) -> None:
        if not packed:
            found = {rel: unpack(tags) for rel, tags in found.items()}
        with lock:
            out.update(found)
            n = len(out)
        if progress is not None:
            progress(n, total)

    def next_chunk() -> list[str] | None:
        with lock:
            return chunks.pop() if chunks else None

    def in_process() -> None:
        while (chunk := next_chunk()) is not None:
            done({rel: _pack(tag_file(prefix + rel, rel)) for rel in chunk})

    def feed(proc: subprocess.Popen[bytes]) -> None:
        chunk = None
        try:
            while (chunk := next_chunk()) is not None:
                _send(proc.stdin, (workspace, chunk))
                answer = _receive(proc.stdout)
                if (not isinstance(answer, dict) or set(answer) != set(chunk)
                        or not all(v is None or isinstance(v, bytes) for v in answer.values())):
                    raise OSError("a tag worker answered something else")
                done(answer)
                chunk = None
        except (OSError, EOFError, ValueError, TypeError):
            log.debug("a tag worker failed; tagging its files here", exc_info=True)
            if chunk is not None:
                done({rel: _pack(tag_file(prefix + rel, rel)) for rel in chunk})
            in_process()  # whatever is left, alongside the other workers

    procs = [p for p in (_start() for _ in range(workers)) if p is not None]
    if not procs:
        in_process()
        return out
    threads = [threading.Thread(target=feed, args=(p,), name="qwen-tag-feed", daemon=True) for p in procs]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for p in procs:
            _stop(p)
    return out


def _pack(tags: RawTags | None) -> Packed | None:
    return marshal.dumps(tags) if tags is not None else None


def unpack(tags: RawTags | Packed | None) -> RawTags | None:
    """A file's tags as `tag_files` gave them, as tuples."""
    return marshal.loads(tags) if isinstance(tags, bytes) else tags


def _start() -> subprocess.Popen[bytes] | None:
    code = f"import sys; sys.path.insert(0, {_ROOT!r}); from qwen_lsp.context.tagpool import serve; serve()"
    try:
        return subprocess.Popen([sys.executable, "-P", "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, cwd=_ROOT, close_fds=True)
    except OSError:
        log.debug("no tag worker started", exc_info=True)
        return None


def _stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        assert proc.stdin is not None
        proc.stdin.close()  # the worker's signal to end
    except OSError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def _send(stream, value: object) -> None:
    body = marshal.dumps(value)
    stream.write(len(body).to_bytes(8, "little") + body)
    stream.flush()


def _receive(stream) -> object:
    head = stream.read(8)
    if len(head) != 8:
        raise EOFError("the stream ended")
    size = int.from_bytes(head, "little")
    body = stream.read(size)
    if len(body) != size:
        raise EOFError("the stream ended mid-frame")
    return marshal.loads(body)


def serve() -> None:
    """A worker: tag each chunk of files asked for on stdin, answer on stdout, until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the parent; closing stdin ends us
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            workspace, chunk = _receive(stdin)
        except EOFError:
            return
        prefix = os.path.join(workspace, "")
        try:
            _send(stdout, {rel: _pack(tag_file(prefix + rel, rel, whole=True)) for rel in chunk})
        except BrokenPipeError:
            return
