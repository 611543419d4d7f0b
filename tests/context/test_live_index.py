"""The language server's live index: kept current by change events, and always equal to what a
cold build of the same files gives (same tags, same map, byte for byte)."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwen_lsp.context import ranking, repomap
from qwen_lsp.context.index import WorkspaceIndex
from tests.context.helpers import make_app, write


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_app(tmp_path / "proj")


def cold_map(root: Path, focus: list[str]) -> str:
    index = repomap.build_index(root)
    imported = set()
    for rel in focus:
        imported |= ranking.imported_names((root / rel).read_text(), "python")
    return repomap.repo_map(root, 1024, focus_files=focus, index=index, imported=imported)


def assert_same_as_cold(live: WorkspaceIndex, root: Path, focus: list[str]) -> None:
    cold = repomap.build_index(root)
    index = live.tag_index()
    assert {rel: (t.defs, t.refs) for rel, t in index.files.items()} == {rel: (t.defs, t.refs) for rel, t in cold.files.items()}
    assert {k: v for k, v in index.defined_in.items() if v} == {k: v for k, v in cold.defined_in.items() if v}
    assert live.repo_map(1024, focus_files=focus) == cold_map(root, focus)


def test_an_edit_inside_a_body_updates_the_map_like_a_cold_build(project: Path) -> None:
    live = WorkspaceIndex(project)
    live.load()
    before = live.repo_map(1024, focus_files=["app/views.py"])
    graph = live.graph()
    text = "from app.models import User\n\n\ndef show_user(uid):\n    u = User()\n    u.save()\n    u.save()\n    return u\n"
    live.set_text("app/views.py", text)
    write(project, "app/views.py", text)  # the cold build reads disk
    assert_same_as_cold(live, project, ["app/views.py"])
    updated = live.graph()
    assert updated is not graph and updated.definers is graph.definers  # only the edited file's edges were redone
    rebuilt = ranking.build_graph(live.tag_index())
    for column in ("src", "dst", "name", "weight"):
        assert getattr(updated, column).tolist() == getattr(rebuilt, column).tolist()
    assert before  # there was a map before the edit too


def test_a_new_definition_a_new_file_a_deletion_and_a_rename(project: Path) -> None:
    live = WorkspaceIndex(project)
    live.load()
    live.repo_map(1024, focus_files=["app/views.py"])
    # edit that changes the shape: a new function referenced from the focus file
    write(project, "app/util.py", "def slugify(s):\n    return s.lower()\n\n\ndef shout(s):\n    return s.upper()\n")
    live.file_changed("app/util.py")
    write(project, "app/views.py", "from app.util import shout\n\n\ndef show_user(uid):\n    return shout(uid)\n")
    live.file_changed("app/views.py")
    assert_same_as_cold(live, project, ["app/views.py"])
    assert "shout" in live.repo_map(1024, focus_files=["app/views.py"])
    # a file created on disk
    write(project, "app/mail.py", "def send(to):\n    pass\n")
    live.file_changed("app/mail.py")
    assert_same_as_cold(live, project, ["app/views.py"])
    # deleted
    (project / "app/billing.py").unlink()
    live.file_changed("app/billing.py")
    assert "app/billing.py" not in live.tag_index().files
    assert_same_as_cold(live, project, ["app/views.py"])
    # renamed: the watcher reports a deletion and a creation
    (project / "app/util.py").rename(project / "app/text.py")
    live.file_changed("app/util.py")
    live.file_changed("app/text.py")
    assert set(live.tag_index().defined_in["shout"]) == {"app/text.py"}
    assert_same_as_cold(live, project, ["app/views.py"])


def test_a_rescan_finds_files_changed_on_disk_without_events(project: Path) -> None:
    live = WorkspaceIndex(project)
    live.load()
    assert live.rescan() == []
    write(project, "app/util.py", "def slugify(s):\n    return s\n\n\ndef later():\n    pass\n")
    write(project, "app/new.py", "def fresh():\n    pass\n")
    (project / "app/billing.py").unlink()
    assert live.rescan() == ["app/billing.py", "app/new.py", "app/util.py"]
    assert "later" in live.tag_index().defined_in and "fresh" in live.tag_index().defined_in
    assert_same_as_cold(live, project, ["app/views.py"])


def test_the_map_is_memoised_until_something_changes(project: Path) -> None:
    live = WorkspaceIndex(project)
    live.load()
    first = live.repo_map(1024, focus_files=["app/views.py"])
    graph = live.graph()
    assert live.repo_map(1024, focus_files=["app/views.py"]) is first
    assert live.graph() is graph
    live.set_text("app/billing.py", (project / "app/billing.py").read_text() + "\n# note\n")
    assert live.graph() is graph  # a new version, referencing as before: the same graph
    live.set_text("app/billing.py", (project / "app/billing.py").read_text() + "\n# note\nslugify('x')\n")
    assert live.graph() is not graph


def test_a_one_shot_prompt_ranks_what_the_focus_file_imports_as_the_language_server_does(tmp_path: Path) -> None:
    # qfix and qwen-review assemble without a live index: their map must weigh imported names the
    # same way, or a one-letter class imported by name (Django's Q) loses to whatever else is used.
    from qwen_lsp.context.prompt import assemble
    from qwen_lsp.settings import Budgets, Settings
    from qwen_lsp.types import Task, TaskKind

    root = tmp_path / "proj"
    write(root, "db/query.py", "class Q:\n    pass\n\nclass Manager:\n    pass\n")
    write(root, "app.py", "from db.query import Q\nimport db.query\n\n\ndef run():\n    db.query.Manager()\n    return Q()\n")
    settings = Settings(cache_dir=tmp_path / "cache", budgets=Budgets(repo_map=22))  # room for one class
    task = Task(kind=TaskKind.diagnostic, description="bug", path="app.py", start_line=7, end_line=7)
    live = WorkspaceIndex(root)

    def map_of(**kwargs) -> str:
        user = assemble(task, root, settings, system="s", tools=[], **kwargs).messages[1]["content"]
        return user.split("# Repository map", 1)[1].split("# Git context", 1)[0]

    one_shot, served = map_of(), map_of(live=live)
    assert "class Q:" in one_shot and "class Manager" not in one_shot
    assert one_shot == served


def test_the_map_follows_edits_across_versions_and_ranks_again_only_when_the_graph_changes(project: Path, monkeypatch) -> None:
    from qwen_lsp.context import mapmemo

    rankings: list[int] = []
    real_rank = mapmemo.rank_definitions
    monkeypatch.setattr(mapmemo, "rank_definitions", lambda *a, **kw: rankings.append(1) or real_rank(*a, **kw))
    focus = ["app/views.py"]

    def cold(root: Path) -> str:
        index = repomap.build_index(root)
        imported = ranking.imported_names((root / focus[0]).read_text(), "python")
        return repomap.repo_map(root, 1024, focus_files=focus, exclude=focus, index=index, imported=imported)

    def edit(rel: str, text: str) -> None:
        live.set_text(rel, text)
        write(project, rel, text)  # the cold build reads disk

    live = WorkspaceIndex(project)
    live.load()
    first = live.repo_map(1024, focus_files=focus, exclude=focus)
    assert "app/models.py" in first and first == cold(project)
    graph = live.graph()
    # A line added above the focus file's code: a new version, the same graph, the same map.
    edit("app/views.py", "# a note\n" + (project / "app/views.py").read_text())
    assert live.repo_map(1024, focus_files=focus, exclude=focus) == first == cold(project)
    # Lines moved in a file the map shows: the map shows where its definitions are now.
    edit("app/models.py", "\n\n" + (project / "app/models.py").read_text())
    moved = live.repo_map(1024, focus_files=focus, exclude=focus)
    assert moved != first and moved == cold(project)
    assert len(rankings) == 1  # neither edit changed an edge of the graph
    assert live.graph() is graph  # nor made a copy of it: the same object, version after version
    # A new reference from the focus file: the graph changes, the ranking is done again.
    edit("app/views.py", (project / "app/views.py").read_text() + "\n\ndef bill(o):\n    return o.total()\n")
    assert live.repo_map(1024, focus_files=focus, exclude=focus) == cold(project)
    assert len(rankings) == 2 and live.graph() is not graph
