"""The workspace snapshot (context/snapshot.py): a one-shot process gets back exactly the index a cold
build gives, picks up whatever changed since, and survives a bad snapshot file."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from qwen_lsp.context import ranking, repomap, snapshot
from qwen_lsp.context.index import WorkspaceIndex
from tests.context.helpers import backdate, damage_file, make_app, write

FOCUS = ["app/views.py"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_app(tmp_path / "proj")
    write(root, ".gitignore", "build/\n")
    write(root, "build/gen.py", "def generated():\n    pass\n")
    write(root, "app/blob.py", b"\x00\x01binary")  # listed, never tagged
    write(root, "web/main.ts", "export function boot(): void {}\n")
    backdate(root)
    return root



class Work:
    """What a build did besides reading the snapshot: files parsed, per-file cache opened."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.parsed: list[str] = []
        self.cache_opened = 0
        self.walks = 0
        extract, open_cache, walk = repomap.raw_tags, repomap._open_cache, repomap._walk

        def counting_extract(text: str, lang: str, **kwargs):
            self.parsed.append(text.splitlines()[0] if text else "")
            return extract(text, lang, **kwargs)

        def counting_open(cache_dir):
            self.cache_opened += 1
            return open_cache(cache_dir)

        def counting_walk(*args, **kwargs):
            self.walks += 1
            return walk(*args, **kwargs)

        monkeypatch.setattr(repomap, "raw_tags", counting_extract)
        monkeypatch.setattr(repomap, "_open_cache", counting_open)
        monkeypatch.setattr(repomap, "_walk", counting_walk)

    def reset(self) -> None:
        self.parsed.clear()
        self.cache_opened = self.walks = 0


def contents(index: repomap.TagIndex) -> tuple[dict, dict]:
    return ({rel: (t.defs, t.refs) for rel, t in index.files.items()},
            {name: set(files) for name, files in index.defined_in.items() if files})


def the_map(root: Path, index: repomap.TagIndex) -> str:
    imported = ranking.imported_names((root / FOCUS[0]).read_text(), "python")
    return repomap.repo_map(root, 1024, focus_files=FOCUS, index=index, imported=imported)


def snap_file(cache: Path, root: Path) -> Path:
    return snapshot.snapshot_path(cache, root, repomap.CACHE_VERSION)


def test_a_warm_build_comes_whole_from_the_snapshot_and_equals_a_cold_one(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    cold = repomap.build_index(project)  # no cache at all
    repomap.build_index(project, cache_dir=cache)
    assert snap_file(cache, project).is_file()
    work = Work(monkeypatch)
    warm = repomap.build_index(project, cache_dir=cache)
    assert (work.parsed, work.cache_opened, work.walks) == ([], 0, 0)  # no parse, no per-file cache, no walk
    assert contents(warm) == contents(cold)
    assert sorted(warm.files) == ["app/billing.py", "app/models.py", "app/util.py", "app/views.py", "web/main.ts"]
    assert warm.lookup("User") == cold.lookup("User")
    assert the_map(project, warm) == the_map(project, cold)


def test_the_map_is_byte_identical_in_a_new_process_reading_the_snapshot(project: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    repomap.build_index(project, cache_dir=cache)
    script = (
        "import sys; from pathlib import Path; from qwen_lsp.context import ranking, repomap\n"
        "root, cache = Path(sys.argv[1]), Path(sys.argv[2])\n"
        "index = repomap.build_index(root, cache_dir=cache)\n"
        "imported = ranking.imported_names((root / 'app/views.py').read_text(), 'python')\n"
        "sys.stdout.buffer.write(repomap.repo_map(root, 1024, focus_files=['app/views.py'], index=index,"
        " imported=imported).encode())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", script, str(project), str(cache)], env=env, check=True,
                         capture_output=True).stdout
    expected = the_map(project, repomap.build_index(project))
    assert "class User" in expected
    assert out == expected.encode()


def test_changed_added_and_deleted_files_are_picked_up(project: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    repomap.build_index(project, cache_dir=cache)
    work = Work(monkeypatch)
    write(project, "app/util.py", "def slugify(s):\n    return s.lower()\n\n\ndef unslug(s):\n    return s\n")
    write(project, "app/extra.py", "class Invoice:\n    pass\n")
    (project / "app/billing.py").unlink()
    warm = repomap.build_index(project, cache_dir=cache)
    assert sorted(work.parsed) == ["class Invoice:", "def slugify(s):"]  # only what changed is parsed
    assert contents(warm) == contents(repomap.build_index(project))
    assert "app/billing.py" not in warm.files and warm.defined_in["Invoice"] == ("app/extra.py",)
    assert [d.name for d in warm.files["app/util.py"].defs] == ["slugify", "unslug"]
    # The rewritten snapshot has all of it: once the changes are old enough to trust, nothing is parsed.
    backdate(project, 30)
    repomap.build_index(project, cache_dir=cache)
    work.reset()
    again = repomap.build_index(project, cache_dir=cache)
    assert (work.parsed, work.cache_opened, work.walks) == ([], 0, 0)
    assert contents(again) == contents(warm)


def test_a_change_within_the_snapshot_clock_tick_is_not_trusted(project: Path, tmp_path: Path) -> None:
    # Folders (and files) stamped just before the snapshot was built may change again with the
    # same stamp, as a coarse clock allows: such stamps are never trusted.
    cache = tmp_path / "cache"
    app = project / "app"
    write(project, "app/late.py", "def late():\n    pass\n")
    recorded = app.stat().st_mtime_ns  # now: inside the racy window of the build below
    repomap.build_index(project, cache_dir=cache)
    write(project, "app/later.py", "def later():\n    pass\n")
    os.utime(app, ns=(recorded, recorded))  # the folder's stamp does not show the new entry
    assert "later" in repomap.build_index(project, cache_dir=cache).defined_in


def test_an_edited_gitignore_changes_the_listing(project: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert "build/gen.py" not in repomap.build_index(project, cache_dir=cache).files
    (project / ".gitignore").write_text("dist/\n")  # edited in place: the folder's stamp stays
    assert "build/gen.py" in repomap.build_index(project, cache_dir=cache).files


@pytest.mark.parametrize("damage", ["truncated", "flipped byte", "garbage", "empty", "old format", "other workspace"])
def test_a_bad_snapshot_is_ignored_and_rebuilt(project: Path, tmp_path: Path, damage: str) -> None:
    cache = tmp_path / "cache"
    expected = contents(repomap.build_index(project))
    repomap.build_index(project, cache_dir=cache)
    path = snap_file(cache, project)
    if damage == "old format":
        path.write_bytes(path.read_bytes().replace(f"QWENSNAP {snapshot.FORMAT} ".encode(), b"QWENSNAP 0 ", 1))
    elif damage == "other workspace":  # another's snapshot under this one's name (a hash collision, a copied cache)
        other = make_app(tmp_path / "other")
        write(other, "app/only_there.py", "def only_there():\n    pass\n")
        repomap.build_index(other, cache_dir=cache)
        path.write_bytes(snap_file(cache, other).read_bytes())
    else:
        assert damage_file(path, damage)
    assert contents(repomap.build_index(project, cache_dir=cache)) == expected
    assert snapshot.load(path, repomap._snapshot_key(os.path.abspath(project))) is not None  # rewritten whole


def test_builds_racing_each_other_leave_a_whole_snapshot(project: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    for i in range(30):
        write(project, f"gen/mod{i}.py", f"def func_{i}(a):\n    return a\n")
    backdate(project)
    expected = contents(repomap.build_index(project))
    results: list[tuple] = []
    threads = [threading.Thread(target=lambda: results.append(contents(repomap.build_index(project, cache_dir=cache))))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 4
    assert [p.name for p in snap_file(cache, project).parent.iterdir()] == [snap_file(cache, project).name]  # no temp left
    assert contents(repomap.build_index(project, cache_dir=cache)) == expected


def test_files_named_by_the_caller_use_the_snapshot_too(project: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    repomap.build_index(project, cache_dir=cache)
    work = Work(monkeypatch)
    some = repomap.build_index(project, cache_dir=cache, files=["app/models.py", "app/views.py"])
    assert sorted(some.files) == ["app/models.py", "app/views.py"] and work.parsed == []
    work.reset()
    whole = repomap.build_index(project, cache_dir=cache)  # the listing survived the partial rewrite
    assert work.walks == 0 and len(whole.files) == 5


def test_the_language_server_loads_from_the_snapshot(project: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    repomap.build_index(project, cache_dir=cache)  # an earlier qfix run
    work = Work(monkeypatch)
    live = WorkspaceIndex(project, cache_dir=cache)
    live.load()
    assert (work.parsed, work.walks) == ([], 0)
    assert live.repo_map(1024, focus_files=FOCUS) == the_map(project, repomap.build_index(project))


def test_old_snapshots_of_other_workspaces_are_evicted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot, "MAX_SNAPSHOTS", 3)
    cache = tmp_path / "cache"
    roots = [make_app(tmp_path / f"ws{i}") for i in range(5)]
    for i, root in enumerate(roots):
        ranking.stored_graph(repomap.build_index(root, cache_dir=cache))  # a graph file next to each snapshot
        when = time.time_ns() - (10 - i) * 1_000_000_000  # written in this order, whatever the clock's tick
        os.utime(snap_file(cache, root), ns=(when, when))
    kept = sorted(p.name for p in snap_file(cache, roots[0]).parent.iterdir())
    # the three written last, each with its graph
    assert kept == sorted(p.name for r in roots[2:] for p in (snap_file(cache, r), snapshot.graph_path(snap_file(cache, r))))


# --------------------------------------------------------------------------- the stored reference graph


class GraphBuilds:
    """How many times ranking built a reference graph rather than reading it back."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        build = ranking.build_graph

        def counting(index):
            self.count += 1
            return build(index)

        monkeypatch.setattr(ranking, "build_graph", counting)


def same_graph(a: ranking.RefGraph, b: ranking.RefGraph) -> bool:
    """Every field equal, the arrays byte for byte (dtype included)."""
    arrays = ("src", "dst", "name", "weight", "generic", "short")
    packed = ("name_weight", "definer_start", "definers")
    return (all(getattr(a, f).dtype == getattr(b, f).dtype and getattr(a, f).tobytes() == getattr(b, f).tobytes()
                for f in arrays)
            and all(getattr(a, f).typecode == getattr(b, f).typecode and getattr(a, f) == getattr(b, f) for f in packed)
            and (a.files, a.file_pos, a.names, a.name_pos) == (b.files, b.file_pos, b.names, b.name_pos))


def test_the_stored_graph_is_read_back_and_is_the_one_built(project: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    repomap.build_index(project, cache_dir=cache)
    builds = GraphBuilds(monkeypatch)
    first = ranking.stored_graph(repomap.build_index(project, cache_dir=cache))  # built, then stored
    assert builds.count == 1 and snapshot.graph_path(snap_file(cache, project)).is_file()
    index = repomap.build_index(project, cache_dir=cache)
    stored = ranking.stored_graph(index)
    assert builds.count == 1  # read back, not built
    assert same_graph(stored, first) and same_graph(stored, ranking.build_graph(index))
    cold = repomap.build_index(project)  # no snapshot, no stored graph
    for focus in (FOCUS, ["app/billing.py"]):
        assert ranking.rank_definitions(index, focus_files=focus) == ranking.rank_definitions(cold, focus_files=focus)


def test_a_new_process_reads_the_stored_graph_and_maps_byte_identically(project: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    script = (
        "import sys; from pathlib import Path; from qwen_lsp.context import ranking, repomap\n"
        "root, cache = Path(sys.argv[1]), Path(sys.argv[2])\n"
        "if sys.argv[3] == 'stored':\n"
        "    ranking.build_graph = lambda index: sys.exit('the graph was built, not read back')\n"
        "index = repomap.build_index(root, cache_dir=cache)\n"
        "imported = ranking.imported_names((root / 'app/views.py').read_text(), 'python')\n"
        "sys.stdout.buffer.write(repomap.repo_map(root, 1024, focus_files=['app/views.py'], index=index,"
        " imported=imported).encode())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    outs = [subprocess.run([sys.executable, "-c", script, str(project), str(cache), mode], env=env, check=True,
                           capture_output=True).stdout for mode in ("built", "stored")]
    expected = the_map(project, repomap.build_index(project))
    assert "class User" in expected
    assert outs == [expected.encode()] * 2


def test_changed_tags_get_a_new_graph(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    ranking.stored_graph(repomap.build_index(project, cache_dir=cache))
    builds = GraphBuilds(monkeypatch)
    # Only a reference count changes: the same files, the same names defined.
    write(project, "app/billing.py", "from app.models import Order\n\n\ndef invoice(o: Order):\n"
                                     "    return o.total() + Order().total()\n")
    index = repomap.build_index(project, cache_dir=cache)
    graph = ranking.stored_graph(index)
    assert builds.count == 1 and same_graph(graph, ranking.build_graph(index))
    backdate(project, 30)  # old enough to trust: the index comes whole from the rewritten snapshot
    again = repomap.build_index(project, cache_dir=cache)
    assert same_graph(ranking.stored_graph(again), graph) and builds.count == 2  # the second count is the check above


def test_moved_lines_keep_the_stored_graph(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The graph depends on names, kinds, depths and reference counts, not on where definitions sit.
    cache = tmp_path / "cache"
    ranking.stored_graph(repomap.build_index(project, cache_dir=cache))
    write(project, "app/util.py", "\n\n# moved down\ndef slugify(s):\n    return s.lower()\n")
    backdate(project, 30)
    builds = GraphBuilds(monkeypatch)
    index = repomap.build_index(project, cache_dir=cache)
    assert index.files["app/util.py"].defs[0].line == 4
    assert same_graph(ranking.stored_graph(index), ranking.build_graph(index)) and builds.count == 1


@pytest.mark.parametrize("damage", ["truncated", "flipped byte", "garbage", "other tags", "other graph settings"])
def test_a_bad_or_stale_graph_file_is_rebuilt_never_trusted(project: Path, tmp_path: Path, damage: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    ranking.stored_graph(repomap.build_index(project, cache_dir=cache))
    path = snapshot.graph_path(snap_file(cache, project))
    if damage == "other tags":  # another workspace's graph under this one's name
        other = make_app(tmp_path / "other")
        write(other, "app/only_there.py", "def only_there():\n    return slugify('x')\n")
        ranking.stored_graph(repomap.build_index(other, cache_dir=cache))
        path.write_bytes(snapshot.graph_path(snap_file(cache, other)).read_bytes())
    elif damage == "other graph settings":  # a graph built by another version of the ranking
        monkeypatch.setattr(ranking, "_GRAPH_CONFIG", "another")
    else:
        assert damage_file(path, damage)
    builds = GraphBuilds(monkeypatch)
    index = repomap.build_index(project, cache_dir=cache)
    assert same_graph(ranking.stored_graph(index), ranking.build_graph(index)) and builds.count == 2  # rebuilt
    ranking.stored_graph(index)
    assert builds.count == 2  # and rewritten whole: read back this time


def test_ranking_builds_only_the_definitions_it_ranks(project: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    repomap.build_index(project, cache_dir=cache)
    index = repomap.build_index(project, cache_dir=cache)
    whole_files: list[int] = []
    defs = snapshot.Snapshot.defs
    monkeypatch.setattr(snapshot.Snapshot, "defs", lambda self, i: whole_files.append(i) or defs(self, i))
    ranked = ranking.rank_definitions(index, focus_files=FOCUS, mentioned=["Order"])
    assert whole_files == []  # no file's every definition decoded, the focus file's neither
    monkeypatch.undo()
    assert ranked == ranking.rank_definitions(repomap.build_index(project), focus_files=FOCUS, mentioned=["Order"])
    assert {d.name for _, d, _ in ranked} >= {"User", "save", "Order"}


def test_a_temporary_file_left_by_a_process_that_died_mid_write_is_swept(project: Path, tmp_path: Path) -> None:
    # qfix's preload writes from a daemon thread: qfix ending meanwhile leaves its temporary file.
    cache = tmp_path / "cache"
    folder = snap_file(cache, project).parent
    folder.mkdir(parents=True)
    abandoned, in_progress = folder / ".snap-abandoned", folder / ".snap-in-progress"
    for path in (abandoned, in_progress):
        path.write_bytes(b"half a snapshot")
    hours_ago = time.time_ns() - 2 * 3600 * 1_000_000_000
    os.utime(abandoned, ns=(hours_ago, hours_ago))
    repomap.build_index(project, cache_dir=cache)
    assert sorted(p.name for p in folder.iterdir()) == sorted([in_progress.name, snap_file(cache, project).name])


def test_a_definition_decoded_for_one_ranking_is_kept_for_the_next(project: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # The language server ranks the same tags for every request: each name is decoded once.
    cache = tmp_path / "cache"
    repomap.build_index(project, cache_dir=cache)
    index = repomap.build_index(project, cache_dir=cache)
    decoded: list[tuple[int, str]] = []
    defs_named = snapshot.Snapshot.defs_named
    monkeypatch.setattr(snapshot.Snapshot, "defs_named",
                        lambda self, i, wanted: decoded.extend((i, n) for n in wanted) or defs_named(self, i, wanted))
    first = ranking.rank_definitions(index, focus_files=FOCUS)
    assert decoded and ranking.rank_definitions(index, focus_files=["app/billing.py"])
    assert ranking.rank_definitions(index, focus_files=FOCUS) == first
    assert len(decoded) == len(set(decoded))


def test_the_reference_graph_reads_the_snapshots_reference_counts_without_keeping_them(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    repomap.build_index(project, cache_dir=cache)
    index = repomap.build_index(project, cache_dir=cache)
    kept: list[int] = []
    refs = snapshot.Snapshot.refs
    monkeypatch.setattr(snapshot.Snapshot, "refs", lambda self, i: kept.append(i) or refs(self, i))
    graph = ranking.build_graph(index)
    assert kept == []  # every file's counts read once, none decoded into its FileTags for good
    monkeypatch.undo()
    assert same_graph(graph, ranking.build_graph(repomap.build_index(project)))
    assert same_graph(graph, ranking._from_body(ranking._to_body(graph)))


def test_the_name_table_gives_each_name_its_files_sorted_once(project: Path, tmp_path: Path) -> None:
    write(project, "app/extra.py", "class Order:\n    pass\n\n\nclass Order:  # again\n    pass\n")
    backdate(project)
    cache = tmp_path / "cache"
    cold = repomap.build_index(project)
    repomap.build_index(project, cache_dir=cache)
    warm = repomap.build_index(project, cache_dir=cache)
    for index in (cold, warm):
        assert index.defined_in["Order"] == ("app/extra.py", "app/models.py")
        assert all(type(files) is tuple and list(files) == sorted(set(files)) for files in index.defined_in.values())
    assert warm.defined_in == cold.defined_in
