"""Recent changes near the failure, on real repositories: the bug uncommitted (staged or not), in
the latest commit, or in an older one; hunks ranked by reachability and recency within a budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwen_lsp.context.changes import Change, Hunk, Reach, hunk_score, parse_hunks, read_changes, render_changes
from qwen_lsp.llm.tokens import count_tokens
from tests.context.helpers import write
from tests.context.helpers import git
from tests.context.reach_project import break_it, commit_all, make_package

REACH = Reach(files={"pkg/util.py": 0.36, "pkg/core.py": 1.0},
              spans=[("pkg/util.py", 4, 13, "normalize", 0.36), ("pkg/core.py", 17, 21, "convert", 1.0)])


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_package(tmp_path / "repo")
    write(root, "docs/notes.py", "NOTE = 1\n")
    commit_all(root, "Initial package", date="2024-01-10T10:00:00")
    return root


def section(root: Path, budget: int = 2000) -> str:
    return render_changes(read_changes(root, ["pkg/core.py", "pkg/util.py", "tests/test_choice.py"]), REACH, budget)


def test_an_uncommitted_bug_is_shown_first(repo: Path) -> None:
    break_it(repo)
    write(repo, "docs/notes.py", "NOTE = 2\n")  # an unrelated edit: shown after, if at all
    text = section(repo)
    assert text.startswith("Uncommitted changes (staged and unstaged):")
    assert "-    if fold:\n+    if not fold:" in text
    assert text.index("--- docs/notes.py") > 0 and text.index("--- pkg/util.py") > 0
    # Under a tight budget the reached function's hunk wins over the unrelated one.
    (change,) = read_changes(repo, ["pkg/util.py"])
    util = next(h for h in change.hunks if h.path == "pkg/util.py")
    tight = section(repo, budget=count_tokens(util.text) + 40)
    assert "+    if not fold:" in tight and "NOTE = 2" not in tight


def test_staged_and_unstaged_changes_both_count(repo: Path) -> None:
    break_it(repo)
    git(repo, "add", "pkg/util.py")
    core = repo / "pkg/core.py"
    core.write_text(core.read_text().replace("raise ValueError(value)", "raise KeyError(value)"))
    text = section(repo)
    assert "+    if not fold:" in text and "+        raise KeyError(value)" in text


def test_a_bug_in_the_latest_commit_is_shown_with_the_commit(repo: Path) -> None:
    break_it(repo)
    commit_all(repo, "Speed up normalize", date="2024-02-01T10:00:00")
    text = section(repo)
    assert "Uncommitted" not in text
    assert text.startswith("Commit ") and "2024-02-01 Ada: Speed up normalize:" in text
    assert "+    if not fold:" in text
    assert "Initial package" not in text  # adding the files is their code, not a change to them


def test_an_old_commit_of_a_reached_function_is_found_past_unrelated_ones(repo: Path) -> None:
    break_it(repo)
    commit_all(repo, "Speed up normalize", date="2024-02-01T10:00:00")
    for i in range(5):  # later work elsewhere in the repository
        write(repo, "docs/notes.py", f"NOTE = {i + 10}\n")
        commit_all(repo, f"Notes {i}", date=f"2024-02-0{i + 2}T10:00:00")
    core = repo / "pkg/core.py"
    core.write_text(core.read_text().replace("class Path:", "class Path:  # unused"))
    commit_all(repo, "Comment Path", date="2024-02-09T10:00:00")
    changes = read_changes(repo, ["pkg/core.py", "pkg/util.py"])
    # The two newest commits whatever they touch, then those of the reached files; ages in history order.
    assert [(c.label.split(": ", 1)[1], c.age) for c in changes] == [
        ("Comment Path", 1), ("Notes 4", 2), ("Speed up normalize", 2)]
    assert "Notes 3" not in render_changes(changes, REACH, 2000)
    # The older hunk in a reached function outranks the newer ones in an unreached class or file.
    new, notes, old = changes
    assert hunk_score(old, old.hunks[0], REACH) > max(hunk_score(new, new.hunks[0], REACH), hunk_score(notes, notes.hunks[0], REACH))
    tight = render_changes(changes, REACH, count_tokens(old.hunks[0].text) + 40)
    assert "+    if not fold:" in tight and "Speed up normalize" in tight and "NOTE" not in tight


def test_recency_ranks_equal_hunks() -> None:
    hunk = Hunk(path="pkg/util.py", new_start=10, new_end=12, function="def normalize(value, fold):", text="@@ -10 +10 @@\n-a\n+b")
    scores = [hunk_score(Change(label="x", age=age, hunks=[hunk]), hunk, REACH) for age in range(4)]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[1] > 0


def test_a_subdirectory_workspace_sees_its_own_paths(repo: Path) -> None:
    break_it(repo)
    changes = read_changes(repo / "pkg", ["util.py"])
    assert changes and changes[0].hunks[0].path == "util.py"


def test_outside_a_repository_and_garbage_diffs_give_nothing(tmp_path: Path) -> None:
    root = make_package(tmp_path / "plain")
    assert read_changes(root, ["pkg/util.py"]) == []
    assert parse_hunks("not a diff\n@@ nonsense") == []


def test_lines_already_in_the_git_section_are_not_repeated(repo: Path) -> None:
    break_it(repo)
    changes = read_changes(repo, ["pkg/util.py"])
    assert render_changes(changes, REACH, 2000, already="-    if fold:\n+    if not fold:\n") == ""


def test_commits_are_read_once_per_head_and_again_after_a_commit_or_a_checkout(repo: Path, monkeypatch) -> None:
    from qwen_lsp.context import changes
    from qwen_lsp.context.git_context import GitCache

    ran: list[str] = []
    real_git = changes.git
    monkeypatch.setattr(changes, "git", lambda root, *args, **kw: ran.append(args[2]) or real_git(root, *args, **kw))
    paths = ["pkg/core.py", "pkg/util.py"]
    break_it(repo)
    commit_all(repo, "Speed up normalize", date="2024-02-01T10:00:00")
    first = git(repo, "rev-parse", "HEAD").strip()
    cache = GitCache()
    write(repo, "docs/notes.py", "NOTE = 2\n")
    assert read_changes(repo, paths, cache=cache) == read_changes(repo, paths)
    ran.clear()
    write(repo, "docs/notes.py", "NOTE = 3\n")  # the working tree is read afresh, the history is not
    again = read_changes(repo, paths, cache=cache)
    assert ran == ["diff"]
    assert again == read_changes(repo, paths) and "+NOTE = 3" in again[0].hunks[0].text

    write(repo, "pkg/core.py", (repo / "pkg/core.py").read_text() + "\n\ndef later():\n    return 1\n")
    commit_all(repo, "Add later", date="2024-03-01T10:00:00")
    after_commit = read_changes(repo, paths, cache=cache)
    assert after_commit == read_changes(repo, paths)
    assert [c.label.split(": ")[1] for c in after_commit] == ["Add later", "Speed up normalize"]

    git(repo, "checkout", "-q", first)  # back before "Add later": a detached HEAD
    after_checkout = read_changes(repo, paths, cache=cache)
    assert after_checkout == read_changes(repo, paths)
    assert not any("Add later" in c.label for c in after_checkout)
