"""Settings with bad values: the server drops each one, says so once, and keeps working."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.lsp.helpers import open_doc, wait_until
from tests.vllm_double import Reply


@pytest.fixture(autouse=True)
def bad_environment(monkeypatch):
    # autouse: set before the `lsp` fixture starts the server process, which inherits it
    monkeypatch.setenv("QWEN_LSP_MAX_ROUNDS", "many")


@pytest.fixture
def project(project: Path) -> Path:
    (project / "pyproject.toml").write_text('[tool.qwen-lsp]\ncache_size_mb = "big"\n')
    return project


@pytest.fixture
def server_options(server_options: dict[str, Any]) -> dict[str, Any]:
    return {**server_options, "reviewOnSave": "maybe"}


def warnings(lsp) -> list[types.ShowMessageParams]:
    return [m for m in lsp.messages if "invalid settings" in m.message]


async def explain(lsp, uri: str) -> Any:
    return await lsp.workspace_execute_command_async(types.ExecuteCommandParams(
        command="qwen.server.explain",
        arguments=[{"uri": uri, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}}],
    ))


async def test_bad_values_from_env_pyproject_and_editor_are_dropped_and_reported_once(lsp, vllm, project, server_options):
    (warning,) = await wait_until(lambda: warnings(lsp), what="the invalid-settings warning")
    assert warning.type == types.MessageType.Warning
    assert warning.message.startswith("Qwen: ignoring invalid settings ")
    for key, source in [("max_rounds", "environment"), ("cache_size_mb", "pyproject.toml"),
                        ("review_on_save", "editor settings")]:
        assert f"{key} (from {source}:" in warning.message

    # Every feature still works with the values that were good (the editor's baseUrl among them).
    uri = open_doc(lsp, project, "calc.py")
    vllm.script(Reply(content="It subtracts."))
    answer = await explain(lsp, uri)
    assert (answer._asdict() if hasattr(answer, "_asdict") else answer) == {"markdown": "It subtracts."}

    # Settings are re-read when the editor's change; the same bad values are not reported again.
    lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"qwen": server_options}))
    vllm.script(Reply(content="Still subtracts."))
    await explain(lsp, uri)
    assert len(warnings(lsp)) == 1
