"""preload (context/preload.py): the workspace's tags and reference graph, loaded while the user's
command runs, are reused by the next prompt assembly only while they still hold."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qwen_lsp.context import preload, ranking, repomap
from qwen_lsp.context.prompt import assemble
from qwen_lsp.settings import Settings
from qwen_lsp.types import Task, TaskKind
from tests.context.helpers import backdate, make_app, write

SYSTEM = "Fix the bug."


@pytest.fixture(autouse=True)
def empty_memo():
    preload.forget()
    yield
    preload.forget()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_app(tmp_path / "proj")
    backdate(root)
    return root



class Loads:
    """What an assembly loaded itself: snapshot reads, index builds, graph builds."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        for module, name in ((preload, "build_index"), (preload, "load_snapshot"), (ranking, "build_graph")):
            real = getattr(module, name)

            def counting(*args, _real=real, _name=name, **kwargs):
                self.calls.append(_name)
                return _real(*args, **kwargs)

            monkeypatch.setattr(module, name, counting)


def task_for(root: Path) -> Task:
    output = (f'Traceback (most recent call last):\n  File "{root}/app/views.py", line 6, in show_user\n'
              "    u.save()\nAttributeError: 'User' object has no attribute 'save'\n")
    return Task(kind=TaskKind.traceback, description="fix the crash", terminal_output=output,
                command="python -m app.views", exit_code=1)


def prompt_text(root: Path, cache: Path) -> list[dict]:
    return assemble(task_for(root), root, Settings(cache_dir=cache), system=SYSTEM, tools=[], cache_dir=cache).messages


def test_an_assembly_after_a_preload_reuses_it_and_prompts_the_same(project: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    expected = prompt_text(project, tmp_path / "elsewhere")  # built from scratch
    assert "class User" in expected[1]["content"]
    preload.preload(project, Settings(cache_dir=cache))  # no snapshot yet: it is built, then kept
    loads = Loads(monkeypatch)
    assert prompt_text(project, cache) == expected
    assert loads.calls == []  # no snapshot read, no index or graph built
    preload.forget()
    assert prompt_text(project, cache) == expected and "build_index" in loads.calls


@pytest.mark.parametrize("change", ["edited", "added", "deleted", "gitignored"])
def test_what_the_command_changed_after_the_preload_is_seen(project: Path, tmp_path: Path, change: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    preload.preload(project, Settings(cache_dir=cache))
    if change == "edited":
        write(project, "app/util.py", "def slugify(s):\n    return s.lower()\n\n\ndef unslug(s):\n    return s\n")
    elif change == "added":
        write(project, "app/extra.py", "class Invoice:\n    pass\n")
    elif change == "deleted":
        (project / "app/billing.py").unlink()
    else:
        write(project, ".gitignore", "app/util.py\n")
    loads = Loads(monkeypatch)
    index, _graph = preload.tags_and_graph(project, cache)
    assert loads.calls == ["build_index"]  # the preloaded index no longer holds: built again
    fresh = repomap.build_index(project)
    assert {rel: (t.defs, t.refs) for rel, t in index.files.items()} == {
        rel: (t.defs, t.refs) for rel, t in fresh.files.items()}
    assert ranking.rank_definitions(index, focus_files=["app/views.py"]) == ranking.rank_definitions(
        fresh, focus_files=["app/views.py"])


def test_a_change_too_recent_to_trust_is_not_kept(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Saved just before the command ran: its stamp could hide another write in the same clock tick.
    cache = tmp_path / "cache"
    write(project, "app/util.py", "def slugify(s):\n    return s.upper()\n")
    preload.preload(project, Settings(cache_dir=cache))
    loads = Loads(monkeypatch)
    index, graph = preload.tags_and_graph(project, cache)
    assert graph is None and "slugify" in index.defined_in
    ranking.rank_definitions(index, focus_files=["app/views.py"])
    assert loads.calls == ["build_index"]  # the graph of these tags was stored by the preload all the same


def test_a_failing_preload_costs_nothing_but_its_head_start(project: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args, **_kwargs):
        raise OSError("disk on fire")

    monkeypatch.setattr(preload, "load_snapshot", broken)
    preload.preload(project, Settings(cache_dir=tmp_path / "cache"))  # never raises
    monkeypatch.undo()
    index, graph = preload.tags_and_graph(project, tmp_path / "cache")
    assert graph is None and "User" in index.defined_in


def test_workspaces_are_kept_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    roots = [make_app(tmp_path / f"ws{i}") for i in range(preload.MAX_WORKSPACES + 1)]
    write(roots[0], "app/only_here.py", "def only_here():\n    pass\n")
    for root in roots:
        backdate(root)
        preload.preload(root, Settings(cache_dir=cache))
    loads = Loads(monkeypatch)
    first, _ = preload.tags_and_graph(roots[0], cache)
    assert loads.calls == ["build_index"]  # the oldest preload was dropped to keep MAX_WORKSPACES
    second, _ = preload.tags_and_graph(roots[1], cache)
    assert loads.calls == ["build_index"]  # kept
    assert "only_here" in first.defined_in and "only_here" not in second.defined_in


def test_the_main_language_queries_are_compiled_ahead(project: Path, tmp_path: Path) -> None:
    # In a new process: tree-sitter queries are compiled once per process, and cached.
    script = (
        "import sys; from pathlib import Path\n"
        "from qwen_lsp.context import callsites, preload, treesitter\n"
        "from qwen_lsp.settings import Settings\n"
        "preload.preload(Path(sys.argv[1]), Settings(cache_dir=Path(sys.argv[2])))\n"
        "print(sorted(callsites._queries.cache_info()[-1:] + treesitter._def_query.cache_info()[-1:]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", script, str(project), str(tmp_path / "cache")], env=env, check=True,
                         capture_output=True, text=True).stdout
    assert out.strip() == "[1, 1]"  # the call-site and definition queries of Python, the project's language
