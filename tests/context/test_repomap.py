"""Repo map: file selection, tag cache, ranking, token budget."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qwen_lsp.context import ranking, repomap
from qwen_lsp.context.ranking import rank_definitions
from qwen_lsp.context.repomap import build_index, list_files, repo_map
from qwen_lsp.llm.tokens import count_tokens
from tests.context.helpers import make_app, write


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_app(tmp_path / "proj")
    write(root, "web/main.ts", "export function boot(): void {}\n")
    return root


def test_list_files_honours_gitignore_and_skips(project: Path) -> None:
    write(project, ".gitignore", "build/\n*.gen.py\n!keep.gen.py\n")
    write(project, "build/out.py", "x = 1\n")
    write(project, "app/auto.gen.py", "x = 1\n")
    write(project, "app/keep.gen.py", "x = 1\n")
    write(project, "ext/.gitignore", "*.js\n")
    write(project, "ext/lib.js", "var a;\n")
    write(project, "ext/lib.py", "a = 1\n")
    write(project, "vendor/dep.py", "a = 1\n")
    write(project, "node_modules/pkg/index.js", "var a;\n")
    write(project, "docs/readme.md", "# docs\n")
    write(project, "app/settings.json", '{"debug": true}\n')  # a grammar, but no definitions to map
    files = list_files(project)
    assert files == [
        "app/billing.py", "app/keep.gen.py", "app/models.py", "app/util.py", "app/views.py", "ext/lib.py", "web/main.ts",
    ]


def test_binaries_and_huge_files_are_skipped(project: Path) -> None:
    write(project, "app/blob.py", b"\x00\x01binary")
    write(project, "app/huge.py", "x = 1\n" * 200_000)
    index = build_index(project)
    assert "app/blob.py" not in index.files and "app/huge.py" not in index.files
    assert "app/models.py" in index.files


def test_tags_are_cached_by_mtime_and_size(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = repomap.raw_tags

    def counting(text: str, lang: str, **kwargs):
        calls.append(lang)
        return real(text, lang, **kwargs)

    monkeypatch.setattr(repomap, "raw_tags", counting)
    cache = tmp_path / "cache"
    cold = build_index(project, cache_dir=cache)
    assert len(calls) == 5
    calls.clear()
    warm = build_index(project, cache_dir=cache)
    assert calls == []
    assert {f: [d.name for d in t.defs] for f, t in warm.files.items()} == {f: [d.name for d in t.defs] for f, t in cold.files.items()}
    # A changed file is parsed again, and only that one.
    p = project / "app/util.py"
    p.write_text("def slugify(s):\n    return s.lower()\n\n\ndef unslug(s):\n    return s\n")
    os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns + 1_000_000))
    again = build_index(project, cache_dir=cache)
    assert calls == ["python"]
    assert [d.name for d in again.files["app/util.py"].defs] == ["slugify", "unslug"]


def test_ranking_follows_references_from_focus(project: Path) -> None:
    index = build_index(project)
    from_views = [(f, d.name) for f, d, _ in rank_definitions(index, focus_files=["app/views.py"])]
    assert from_views[0] == ("app/models.py", "User")
    from_billing = [(f, d.name) for f, d, _ in rank_definitions(index, focus_files=["app/billing.py"])]
    assert from_billing[0] == ("app/models.py", "Order")
    mentioned = [(f, d.name) for f, d, _ in rank_definitions(index, focus_files=["app/views.py"], mentioned=["slugify"])]
    assert mentioned[0] == ("app/util.py", "slugify")


def test_map_renders_signatures_with_classes(project: Path) -> None:
    text = repo_map(project, 1000, focus_files=["app/views.py"], exclude=["app/views.py"])
    assert "app/models.py:\n    1│class User:\n    2│    def save(self):" in text
    assert "app/views.py" not in text


@pytest.mark.parametrize("budget", [5, 20, 60, 200])
def test_map_never_exceeds_budget(project: Path, budget: int) -> None:
    for i in range(200):
        write(project, f"gen/mod{i}.py", f"def func_{i}(a, b):\n    return a + b\n\n\nclass Kind{i}:\n    pass\n")
    text = repo_map(project, budget, focus_files=["app/views.py"])
    assert count_tokens(text) <= budget


def test_empty_and_missing_workspace(tmp_path: Path) -> None:
    assert repo_map(tmp_path, 500) == ""
    assert repo_map(tmp_path / "nope", 500) == ""
    assert repo_map(tmp_path, 0) == ""


def test_unwritable_cache_dir_still_works(project: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    assert "app/models.py" in build_index(project, cache_dir=blocker / "sub").files


def test_pagerank_restarts_at_the_focus() -> None:
    nodes = ["a", "b", "c", "d"]
    weights = {"a": {"b": 1.0}, "b": {"c": 1.0}, "d": {"a": 1.0}}
    rank = ranking.pagerank(nodes, weights, {"a": 1.0})
    assert rank["a"] > rank["b"] > rank["c"] > rank["d"] == 0
    assert abs(sum(rank.values()) - 1) < 1e-6
    uniform = ranking.pagerank(nodes, {}, {})
    assert all(abs(v - 0.25) < 1e-9 for v in uniform.values())


def test_builtin_like_names_do_not_crowd_out_what_the_focus_file_uses(tmp_path: Path) -> None:
    # `lower`, `join` and `format` are defined in the workspace, but `s.lower()` in the focus file is
    # str.lower: those calls must not outrank the class the focus file imports and uses once.
    root = tmp_path / "proj"
    write(root, "text/helpers.py", "def lower(s):\n    pass\n\ndef join(a, b):\n    pass\n\ndef format(x):\n    pass\n")
    write(root, "text/other.py", "def unrelated():\n    pass\n")
    write(root, "db/query.py", "class Q:\n    pass\n\nclass Manager:\n    pass\n")
    write(root, "app.py", "from db.query import Q\n\n\ndef run(s, parts):\n    s.lower(); s.lower(); s.lower()\n"
                          "    ', '.join(parts); ', '.join(parts)\n    '{}'.format(s)\n    return Q()\n")
    index = build_index(root)
    imported = ranking.imported_names((root / "app.py").read_text(), "python")
    assert "Q" in imported
    ranked = [(f, d.name) for f, d, _ in rank_definitions(index, focus_files=["app.py"], imported=imported)]
    assert ranked[0] == ("db/query.py", "Q")
    # Without the import information a one-letter name is discounted, but the generic ones still lose.
    plain = [(f, d.name) for f, d, _ in rank_definitions(index, focus_files=["app.py"])]
    for generic in ("lower", "join", "format"):
        assert plain.index(("text/helpers.py", generic)) > plain.index(("db/query.py", "Q"))


def test_the_reference_graph_can_be_reused_across_requests(project: Path) -> None:
    index = build_index(project)
    graph = ranking.build_graph(index)
    for focus in (["app/views.py"], ["app/billing.py"]):
        assert rank_definitions(index, focus_files=focus, graph=graph) == rank_definitions(index, focus_files=focus)
