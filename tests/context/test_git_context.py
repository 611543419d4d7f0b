"""Git context on real repositories made in the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwen_lsp.context.git_context import git_context, render_git
from tests.context.helpers import git


def init(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = init(tmp_path / "repo")
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n")
    (root / "README.md").write_text("demo\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Initial calc", date="2024-01-10T10:00:00")
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef mean(xs):\n    return sum(xs) / len(xs or [1])\n")
    git(root, "commit", "-q", "-am", "Guard mean against empty input", date="2024-02-20T10:00:00")
    (root / "README.md").write_text("demo\nmore\n")
    git(root, "commit", "-q", "-am", "Docs", date="2024-02-21T10:00:00")
    return root


def test_commits_and_blame_for_the_failing_line(repo: Path) -> None:
    ctx = git_context(repo, ["calc.py"], {"calc.py": [6]})
    assert ctx.branch == "main" and ctx.head and not ctx.shallow
    (f,) = ctx.files
    assert f.status == "" and f.diff == ""
    assert [c.subject for c in f.commits] == ["Guard mean against empty input", "Initial calc"]
    assert f.commits[0].date == "2024-02-20" and f.commits[0].author == "Ada"
    assert "+    return sum(xs) / len(xs or [1])" in f.commits[0].diff
    (b,) = f.blame
    assert (b.line, b.summary, b.date, b.author) == (6, "Guard mean against empty input", "2024-02-20", "Ada")
    assert b.text == "    return sum(xs) / len(xs or [1])"
    text = render_git(ctx)
    assert "Blame of the failing lines" in text and "Commit " in text and "Docs" not in text


def test_dirty_tree_shows_uncommitted_diff_and_blame(repo: Path) -> None:
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef mean(xs):\n    return sum(xs) / len(xs or [1])\n")
    (repo / "new.py").write_text("x = 1\n")
    ctx = git_context(repo, ["calc.py", "new.py"], {"calc.py": [2]})
    calc, new = ctx.files
    assert calc.status == "modified"
    assert "-    return a + b" in calc.diff and "+    return a - b" in calc.diff
    assert calc.blame[0].commit == "uncommitted"
    assert new.status == "untracked" and not new.commits
    assert "Untracked" in render_git(ctx)


def test_whole_file_history_without_lines(repo: Path) -> None:
    ctx = git_context(repo, ["calc.py"], max_commits=1)
    assert [c.subject for c in ctx.files[0].commits] == ["Guard mean against empty input"]
    assert ctx.files[0].blame == []


def test_line_range_past_end_falls_back(repo: Path) -> None:
    ctx = git_context(repo, ["calc.py"], {"calc.py": [500]})
    assert ctx.files[0].commits  # -L fails for a range past the end; file history instead


def test_no_repository(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    ctx = git_context(tmp_path, ["a.py"], {"a.py": [1]})
    assert ctx.repo_root is None and ctx.files == []
    assert render_git(ctx) == ""


def test_repository_without_commits(tmp_path: Path) -> None:
    root = init(tmp_path / "fresh")
    (root / "a.py").write_text("x = 1\n")
    (root / "b.py").write_text("y = 2\n")
    git(root, "add", "b.py")
    ctx = git_context(root, ["a.py", "b.py"], {"a.py": [1], "b.py": [1]})
    assert ctx.head is None
    a, b = ctx.files
    assert a.status == "untracked"
    assert b.status == "added" and "+y = 2" in b.diff and b.blame == [] and b.commits == []
    assert "no commits yet" in render_git(ctx)


def test_shallow_clone(repo: Path, tmp_path: Path) -> None:
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(clone))
    ctx = git_context(clone, ["calc.py"], {"calc.py": [6]})
    assert ctx.shallow
    (f,) = ctx.files
    assert [c.subject for c in f.commits] == ["Docs"]  # the only commit there is
    assert f.blame and f.blame[0].line == 6


def test_worktree_and_workspace_in_subdirectory(repo: Path, tmp_path: Path) -> None:
    (repo / "pkg").mkdir()
    (repo / "pkg" / "mod.py").write_text("def f():\n    return 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Add pkg", date="2024-03-01T10:00:00")
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(wt))
    (wt / "pkg" / "mod.py").write_text("def f():\n    return 2\n")
    # The workspace is a subdirectory of the worktree: paths are relative to it.
    ctx = git_context(wt / "pkg", ["mod.py"], {"mod.py": [2]})
    assert ctx.branch == "feature"
    (f,) = ctx.files
    assert f.path == "mod.py" and f.status == "modified" and "+    return 2" in f.diff
    assert [c.subject for c in f.commits] == ["Add pkg"]


def test_files_outside_the_repository_are_skipped(repo: Path) -> None:
    ctx = git_context(repo, ["../elsewhere.py", "calc.py"])
    assert [f.path for f in ctx.files] == ["calc.py"]


def test_a_buffer_edit_that_moves_the_failing_line_asks_git_nothing_and_blames_it_where_it_is(repo: Path) -> None:
    # The language server's cache keys the line history on HEAD's line numbers, not the buffer's.
    from qwen_lsp.context.git_context import GitCache

    cache = GitCache()
    disk = (repo / "calc.py").read_text()
    first = git_context(repo, ["calc.py"], {"calc.py": [6]}, cache=cache, read_file=lambda rel: None)
    (b,) = first.files[0].blame
    assert (b.line, b.summary) == (6, "Guard mean against empty input")

    buffer = "import math\n\n" + disk.replace("return a + b", "return a - b")  # unsaved: two lines on top, one changed
    calls: list[tuple[str, ...]] = []
    real_git = __import__("qwen_lsp.context.git_context", fromlist=["_git"])._git
    import qwen_lsp.context.git_context as gc

    def counting(repo_, *args: str) -> str | None:
        calls.append(args)
        return real_git(repo_, *args)

    gc._git = counting
    try:
        moved = git_context(repo, ["calc.py"], {"calc.py": [4, 8]}, cache=cache,
                            read_file=lambda rel: buffer if rel == "calc.py" else None)
    finally:
        gc._git = real_git
    assert not [a for a in calls if a[0] in ("log", "blame")]  # line 8 is HEAD's line 6: cached
    blame = {x.line: x for x in moved.files[0].blame}
    assert blame[8].summary == "Guard mean against empty input" and blame[8].text == "    return sum(xs) / len(xs or [1])"
    assert blame[4].commit == "uncommitted" and blame[4].text == "    return a - b"
    assert [c.subject for c in moved.files[0].commits] == ["Guard mean against empty input", "Initial calc"]


def test_buffer_lines_map_to_heads_through_edits_above_below_and_in_between() -> None:
    from qwen_lsp.context.headlines import to_head

    head = [f"line {i}" for i in range(1, 11)]
    buffer = ["new top", *head[:4], "changed", *head[5:8], "added", *head[8:]]
    assert to_head(buffer, head, [1, 2, 5, 6, 7, 10, 11, 12]) == {2: 1, 5: 4, 7: 6, 11: 9, 12: 10}
    assert to_head(head, head, [3]) == {3: 3}
