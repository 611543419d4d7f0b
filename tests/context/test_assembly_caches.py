"""The language server's prompt assembly reuses what earlier requests built (commit histories, parsed
files, the map, tags of definitions): after a buffer edit, a commit, a checkout or an edit on disk,
the warm index assembles exactly the prompt that a fresh index, with nothing cached, assembles."""

from __future__ import annotations

from pathlib import Path

from qwen_lsp.context.index import WorkspaceIndex
from qwen_lsp.context.prompt import assemble
from qwen_lsp.settings import Settings
from qwen_lsp.types import Task
from tests.context.helpers import git
from tests.context.reach_project import break_it, commit_all, make_package, pytest_output


def test_a_warm_index_assembles_the_prompt_a_fresh_one_does_through_edits_commits_and_checkouts(tmp_path: Path) -> None:
    ws = make_package(tmp_path / "ws")
    commit_all(ws, "Initial package", date="2024-01-10T10:00:00")
    first_commit = git(ws, "rev-parse", "HEAD").strip()
    break_it(ws)
    task = Task.for_command("pytest -q", 1, pytest_output(ws), None)  # what the editor's terminal reports
    settings = Settings(cache_dir=tmp_path / "cache")
    buffers: dict[str, str] = {}
    warm = WorkspaceIndex(ws)
    warm.load()

    def prompt(live: WorkspaceIndex) -> str:
        built = assemble(task, ws, settings, system="You fix bugs.", tools=[], read_file=buffers.get, live=live)
        return built.messages[1]["content"]

    def same_as_fresh() -> str:
        fresh = WorkspaceIndex(ws)
        fresh.load()
        for rel, text in buffers.items():
            fresh.set_text(rel, text)
        user = prompt(warm)
        assert user == prompt(fresh)
        return user

    def edit_buffer(rel: str, text: str) -> None:
        buffers[rel] = text
        warm.set_text(rel, text)

    before = same_as_fresh()
    assert "Uncommitted changes" in before and "if not fold:" in before
    # Buffer edits: lines move in the failing file and in the reached one; a new call is added.
    edit_buffer("pkg/core.py", "# a note\n" + (ws / "pkg/core.py").read_text())
    util = (ws / "pkg/util.py").read_text()
    edit_buffer("pkg/util.py", util.replace("def fold_all(values, fold):\n", "def fold_all(values, fold):\n    normalize(values, fold)\n"))
    edited = same_as_fresh()
    assert edited != before and "    normalize(values, fold)" in edited
    # A commit: the working tree's change becomes history.
    buffers.clear()
    warm.set_text("pkg/core.py", (ws / "pkg/core.py").read_text())
    warm.set_text("pkg/util.py", util)
    commit_all(ws, "Speed up normalize", date="2024-02-01T10:00:00")
    committed = same_as_fresh()
    assert "Commit " in committed and "Speed up normalize" in committed and "Uncommitted changes" not in committed
    # A checkout back to the first commit: the files on disk change (the watcher reports them).
    git(ws, "checkout", "-q", first_commit)
    assert warm.rescan() == ["pkg/util.py"]
    checked_out = same_as_fresh()
    assert "Speed up normalize" not in checked_out and "if not fold:" not in checked_out
    # An edit on disk, saved: the working tree's diff shows it.
    (ws / "pkg/util.py").write_text(util)
    warm.file_changed("pkg/util.py")
    assert "Uncommitted changes" in same_as_fresh()
