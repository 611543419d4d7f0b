"""engine/comments.py: finding instruction comments, their focus, the task, and taking them out."""

from __future__ import annotations

from qwen_lsp.engine.comments import comment_task, find_marked, strip_comments
from qwen_lsp.engine.edits import unified_diff
from qwen_lsp.settings import load_settings, repo_settings
from qwen_lsp.types import FileChange, TaskKind

PY = '''S = "# qwen: in a string"


class Box:
    """qwen: in a docstring"""

    # qwen! make this async
    def get(self):
        return 1  # qwen: return two


def other():
    pass
'''


def test_only_comment_nodes_that_start_with_a_marker():
    found = find_marked(PY, "box.py")
    assert [(c.line, c.instruction) for c in found] == [(7, "make this async"), (9, "return two")]
    assert find_marked(PY.replace("qwen", "Qwen"), "box.py")  # the marker's case does not matter
    assert find_marked(PY, "box.txt") == []  # no grammar, no comments
    assert find_marked("x = 1  # see qwen: later\n", "a.py") == []  # not the comment's first words


def test_focus_is_the_definition_below_or_around():
    attached, trailing = find_marked(PY, "box.py")
    assert (attached.focus_start, attached.focus_end) == (7, 9)  # the method below it
    assert (trailing.focus_start, trailing.focus_end) == (8, 9)  # the method it sits in


def test_user_markers_and_documentation_comments():
    text = "// ai! go faster\n/// qwen: docs\nfn f() {}\n"
    assert [c.instruction for c in find_marked(text, "a.rs", ["ai!"])] == ["go faster"]
    assert find_marked(text, "a.rs") == []  # `///` is documentation


def test_task_lists_chosen_and_others():
    found = find_marked(PY, "box.py")
    task = comment_task("box.py", found[:1], found)
    assert task.kind == TaskKind.instruction and (task.start_line, task.end_line) == (7, 9)
    assert "- line 7 (the code at lines 7-9): make this async" in task.description
    assert "for context only" in task.description and "- line 9: return two" in task.description


def test_strip_removes_the_comment_line_or_tail_and_keeps_syntax():
    found = find_marked(PY, "box.py")
    updated = PY.replace("def get(self):", "async def get(self):").replace("return 1", "return 2")
    change = FileChange(path="box.py", original=PY, updated=updated, diff=unified_diff("box.py", PY, updated))
    out = strip_comments(change, found)
    assert "    async def get(self):\n        return 2\n" in out.updated and "qwen!" not in out.updated
    assert "# qwen: return two" not in out.updated and out.diff == unified_diff("box.py", PY, out.updated)
    assert strip_comments(FileChange(path="box.py", original=PY, updated=PY, diff=""), found).updated == PY

    reworded = updated.replace("# qwen! make this async", "# qwen! made async")  # the model changed it: it stays
    kept = strip_comments(change.model_copy(update={"updated": reworded}), found).updated
    assert "# qwen! made async" in kept and "# qwen: return two" not in kept


def test_a_repository_never_sets_the_markers(tmp_path, monkeypatch):
    monkeypatch.delenv("QWEN_LSP_COMMENT_MARKERS", raising=False)
    assert repo_settings({"comment_markers": ["todo"], "max_rounds": 3}, "x", trusted=True) == {"max_rounds": 3}
    (tmp_path / "pyproject.toml").write_text('[tool.qwen-lsp]\ncomment_markers = ["todo:"]\n')
    assert load_settings(tmp_path).comment_markers == ["qwen:", "qwen!"]
    assert load_settings(tmp_path, {"commentMarkers": ["ai!"]}).comment_markers == ["ai!"]
