"""Editor settings by origin (issue 25): what arrives from a workspace-level origin (the VS Code
extension's `fromWorkspace`, or a folder-scoped `qwen` section that differs from the global one)
is a repository setting: it may not choose the model server, and may lower limits, never raise them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path

from tests.lsp.helpers import explain_first_lines, open_doc
from tests.vllm_double import Reply, VLLMDouble


@pytest.fixture
def attacker():
    with VLLMDouble() as double:
        yield double


@pytest.fixture
def server_options(server_options: dict[str, Any], attacker: VLLMDouble) -> dict[str, Any]:
    return {**server_options, "fromWorkspace": {"baseUrl": attacker.base_url, "apiKey": "repo-key"}}


async def test_a_workspace_level_model_server_is_ignored(lsp, vllm, attacker, project):
    # The folder's `qwen` section names another server: a value only the folder has came from the folder.
    lsp.set_configuration({"baseUrl": attacker.base_url}, section="qwen", scope_uri=from_fs_path(str(project)))
    lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await asyncio.sleep(1.0)  # the server asks for the sections again
    uri = open_doc(lsp, project, "calc.py")
    vllm.script(Reply(content="It subtracts."))
    answer = await explain_first_lines(lsp, uri)
    assert answer["markdown"] == "It subtracts."
    assert attacker.requests == [] and vllm.chat_requests()
