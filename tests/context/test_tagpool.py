"""Tagging in worker processes (context/tagpool.py): the same tags as in-process, progress per
chunk, a worker that dies costs nothing but time, and a workspace's own modules are never imported."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from qwen_lsp.context import tagpool
from qwen_lsp.context.repomap import build_index, list_files

MODULE = "import os\n\n\ndef f{n}(x):\n    return g{n}(x) + os.sep\n\n\nclass C{n}:\n    def m(self):\n        return f{n}(self)\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    for n in range(150):
        (root / "pkg" / f"mod{n}.py").write_text(MODULE.format(n=n))
    (root / "pkg" / "binary.py").write_bytes(b"\x00\x01 not text")
    (root / "app.js").write_text("function hello(name) { return greet(name); }\n")
    return root


def test_workers_give_the_tags_tagging_in_process_gives(workspace):
    rels = list_files(workspace)
    seen: list[tuple[int, int]] = []
    pooled = tagpool.tag_files(str(workspace), rels, progress=lambda done, total: seen.append((done, total)), workers=2)
    assert pooled == tagpool.tag_files(str(workspace), rels, workers=0)
    assert pooled["pkg/binary.py"] is None and pooled["pkg/mod7.py"] is not None
    assert [name for name, *_ in pooled["pkg/mod7.py"][0]] == ["f7", "C7", "m"]
    assert seen[0] == (0, len(rels)) and seen[-1] == (len(rels), len(rels))
    assert len(seen) == 1 + -(-len(rels) // tagpool.CHUNK)  # one report per chunk, after the first


def test_a_worker_that_dies_has_its_files_tagged_in_process(workspace, monkeypatch):
    rels = list_files(workspace)
    expected = tagpool.tag_files(str(workspace), rels, workers=0)
    real_start = tagpool._start

    def dying():
        proc = real_start()
        assert proc is not None
        proc.kill()  # gone before its first chunk
        proc.wait()
        return proc

    monkeypatch.setattr(tagpool, "_start", dying)
    assert tagpool.tag_files(str(workspace), rels, workers=2) == expected


def test_workers_do_not_import_the_workspaces_modules(workspace, tmp_path):
    # A repository's own `qwen_lsp` or `tree_sitter` must not be what a worker imports.
    planted = tmp_path / "planted"
    for name in ("qwen_lsp", "tree_sitter"):
        (workspace / name).mkdir()
        (workspace / name / "__init__.py").write_text(f"open({str(planted)!r}, 'w').write('imported')\n")
    tagpool.tag_files(str(workspace), list_files(workspace), workers=2)
    assert not planted.exists()


def test_a_big_build_reads_its_tags_back_from_the_snapshot(workspace, tmp_path, monkeypatch):
    monkeypatch.setattr("qwen_lsp.context.repomap.READ_BACK_MIN", 10)
    cache = tmp_path / "cache"
    built = build_index(workspace, cache_dir=cache)
    plain = build_index(workspace)  # no cache: tags as objects, as ever
    assert built.files["pkg/mod3.py"]._snap is not None  # columns of the snapshot, not objects
    assert built.files == plain.files
    assert {n: set(f) for n, f in built.defined_in.items()} == {n: set(f) for n, f in plain.defined_in.items()}
    assert built.stored_graph is not None


def test_a_snapshot_replaced_before_it_is_read_back_means_a_build_with_the_tags_kept(workspace, tmp_path, monkeypatch):
    from qwen_lsp.context import repomap

    monkeypatch.setattr(repomap, "READ_BACK_MIN", 10)
    monkeypatch.setattr(repomap, "_read_back", lambda *args: None)  # as if another process had written meanwhile
    built = build_index(workspace, cache_dir=tmp_path / "cache")
    assert built.files == build_index(workspace).files


def test_a_first_build_keeps_its_tags_in_the_snapshot_only_and_a_small_one_per_file_too(workspace, tmp_path, monkeypatch):
    from qwen_lsp.context import repomap

    def per_file_entries(cache: Path) -> int:
        store = repomap._open_cache(cache)
        assert store is not None
        try:
            return len(store)
        finally:
            store.close()

    def age(path: Path) -> None:  # older than the snapshot's racy window: its stamp is trusted
        os.utime(path, ns=(time.time_ns() - 60 * 10**9,) * 2)

    monkeypatch.setattr(repomap, "READ_BACK_MIN", 10)
    for path in [*workspace.rglob("*"), workspace]:
        age(path)
    first = tmp_path / "first"
    build_index(workspace, cache_dir=first)
    assert per_file_entries(first) == 0  # 152 files parsed: all of them in the snapshot, nowhere else
    (workspace / "pkg" / "mod3.py").write_text(MODULE.format(n=333))
    age(workspace / "pkg" / "mod3.py")
    again = build_index(workspace, cache_dir=first)
    assert per_file_entries(first) == 1  # the one file parsed again is cached for when it comes back
    assert [d.name for d in again.files["pkg/mod3.py"].defs] == ["f333", "C333", "m"]


def test_packed_tags_are_the_tags_marshalled(workspace):
    rels = list_files(workspace)
    plain = tagpool.tag_files(str(workspace), rels, workers=0)
    for workers in (0, 2):
        packed = tagpool.tag_files(str(workspace), rels, workers=workers, packed=True)
        assert all(v is None or isinstance(v, bytes) for v in packed.values())
        assert {rel: tagpool.unpack(v) for rel, v in packed.items()} == plain
