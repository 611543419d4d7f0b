"""A prompt assembled ahead of the fix (engine/prefetch.py) is reused only for the state it was built from."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwen_lsp.context import prompt
from qwen_lsp.context.index import WorkspaceIndex
from qwen_lsp.engine.loop import Engine
from qwen_lsp.settings import Settings
from tests.calc_project import BUGGY, make_project
from tests.engine.helpers import failing_test_task, script_fix
from tests.vllm_double import VLLMDouble


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


@pytest.fixture
def assemblies(monkeypatch) -> list[str]:
    """The task path of every prompt assembly, in order."""
    calls: list[str] = []
    real = prompt.assemble

    def counting(task, *args, **kwargs):
        calls.append(task.description)
        return real(task, *args, **kwargs)

    monkeypatch.setattr(prompt, "assemble", counting)
    return calls


async def live_engine(double: VLLMDouble, project: Path, cache: Path, *, met: bool = True) -> Engine:
    """An engine with a live index; `met`: the model server has answered it once (prefetching needs that)."""
    settings = Settings(base_url=double.base_url, cache_dir=cache, max_retries=0)
    index = WorkspaceIndex(project.resolve(), cache_dir=cache)
    index.load()
    engine = Engine(settings, live_index=index)
    if met:
        await engine.client.info()
    return engine


def first_user_message(double: VLLMDouble) -> str:
    return double.chat_requests()[0]["messages"][1]["content"]


async def test_a_fix_in_the_state_it_was_prefetched_for_reuses_the_prompt_byte_for_byte(vllm, project, tmp_path, assemblies):
    script_fix(vllm)
    engine = await live_engine(vllm, project, tmp_path / "a")
    await engine.prefetch(failing_test_task(), project.resolve(), None, stamp=(("calc.py", 3),))
    result = await engine.fix(failing_test_task(), project, stamp=(("calc.py", 3),))
    assert result.outcome == "fixed", result.error
    assert len(assemblies) == 1  # the fix did not assemble again
    prefetched = vllm.chat_requests()[0]["messages"]

    vllm.requests.clear()
    script_fix(vllm)
    await (await live_engine(vllm, project, tmp_path / "b")).fix(failing_test_task(), project)  # no prefetch, no stamp
    assert vllm.chat_requests()[0]["messages"] == prefetched


async def test_an_edited_buffer_means_a_new_prompt_with_the_new_text(vllm, project, tmp_path, assemblies):
    engine = await live_engine(vllm, project, tmp_path / "cache")
    await engine.prefetch(failing_test_task(), project.resolve(), None, stamp=(("calc.py", 3),))
    edited = BUGGY.replace("total = a - b", "total = a - b  # edited after the prefetch")
    engine.live_index.set_text("calc.py", edited)  # what didChange does, with a new version
    script_fix(vllm, finishes=2)  # the scripted edit does not match the edited line
    await engine.fix(failing_test_task(), project, read_buffer=lambda rel: edited if rel == "calc.py" else None,
                     stamp=(("calc.py", 4),))
    assert len(assemblies) == 2
    assert "# edited after the prefetch" in first_user_message(vllm)


async def test_a_file_changed_on_disk_means_a_new_prompt_even_with_the_same_buffers(vllm, project, tmp_path, assemblies):
    engine = await live_engine(vllm, project, tmp_path / "cache")
    await engine.prefetch(failing_test_task(), project.resolve(), None, stamp=())
    (project / "calc.py").write_text(BUGGY.replace("total = a - b", "total = a - b  # changed on disk"))
    engine.live_index.file_changed("calc.py")  # what didChangeWatchedFiles does
    script_fix(vllm, finishes=2)  # the scripted edit does not match the changed line
    await engine.fix(failing_test_task(), project, stamp=())
    assert len(assemblies) == 2
    assert "# changed on disk" in first_user_message(vllm)


async def test_a_new_commit_means_a_new_prompt(vllm, project, tmp_path, assemblies):
    import git

    repo = git.Repo.init(project)
    repo.index.add(["calc.py"])
    repo.index.commit("first")
    engine = await live_engine(vllm, project, tmp_path / "cache")
    await engine.prefetch(failing_test_task(), project.resolve(), None, stamp=())
    second = repo.index.commit("a second commit: HEAD moves")
    script_fix(vllm)
    await engine.fix(failing_test_task(), project, stamp=())
    assert len(assemblies) == 2
    assert f"HEAD {second.hexsha[:7]}" in first_user_message(vllm)


async def test_a_prefetch_never_contacts_a_model_server_it_has_not_met(vllm, project, tmp_path, assemblies):
    engine = await live_engine(vllm, project, tmp_path / "cache", met=False)
    await engine.prefetch(failing_test_task(), project.resolve(), None, stamp=())
    assert vllm.requests == [] and assemblies == []  # the cursor moved; nothing was asked of anyone
    script_fix(vllm)
    result = await engine.fix(failing_test_task(), project, stamp=())
    assert result.outcome == "fixed", result.error
    assert len(assemblies) == 1
