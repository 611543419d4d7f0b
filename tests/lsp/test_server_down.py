"""Model server down: the user is told once (with the fix), the status bar says error, the server keeps answering."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.lsp.helpers import explain_first_lines, code_actions, open_doc, wait_until
from tests.net import closed_port_url
from tests.vllm_double import Reply


@pytest.fixture
def server_options(cache_dir: Path) -> dict[str, Any]:
    return {"baseUrl": closed_port_url(), "cacheDir": str(cache_dir), "maxRetries": 0}


def diagnostic() -> types.Diagnostic:
    return types.Diagnostic(range=types.Range(types.Position(1, 4), types.Position(1, 17)), message="wrong operator")


async def test_model_server_down_shows_the_fix_once_and_the_server_keeps_answering(lsp, project):
    uri = open_doc(lsp, project, "calc.py")
    (fix, *_) = await code_actions(lsp, uri, [diagnostic()])

    resolved = await lsp.code_action_resolve_async(fix)
    assert resolved.edit is None and "Cannot reach the model server" in resolved.disabled.reason
    (shown,) = lsp.messages
    assert shown.type == types.MessageType.Error and "vllm serve Qwen/Qwen3.6-27B" in shown.message
    assert lsp.statuses[-1]["state"] == "error" and "vllm serve" in lsp.statuses[-1]["message"]

    # Still answering, and the second failure is not shown again.
    (again, *_) = await code_actions(lsp, uri, [diagnostic()])
    await lsp.code_action_resolve_async(again)
    assert len(lsp.messages) == 1
    await wait_until(lambda: lsp.statuses[-1]["state"] == "error")


async def test_review_with_the_model_server_down_says_it_did_not_review(lsp, project):
    """The error message is the answer: the result must not read as "no findings" (a second, wrong message)."""
    uri = open_doc(lsp, project, "calc.py")
    result = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="qwen.server.review", arguments=[{"uri": uri}]))
    answer = dict(result._asdict() if hasattr(result, "_asdict") else result)
    assert answer == {"findings": 0, "reviewed": False}
    (shown,) = lsp.messages
    assert shown.type == types.MessageType.Error and "Cannot reach the model server" in shown.message
    # In an editor the way to point it elsewhere is its baseUrl setting, not an environment variable.
    assert "baseUrl setting" in shown.message and "QWEN_LSP_BASE_URL" not in shown.message


class TestInvalidSettings:
    @pytest.fixture
    def server_options(self, vllm, cache_dir: Path) -> dict[str, Any]:
        return {"baseUrl": vllm.base_url, "cacheDir": str(cache_dir), "maxRetries": 0, "maxRounds": "lots"}

    async def test_a_bad_value_is_reported_and_the_rest_still_applies(self, lsp, vllm, project):
        uri = open_doc(lsp, project, "calc.py")
        vllm.script(Reply(content="It subtracts."))
        assert await explain_first_lines(lsp, uri) == {"markdown": "It subtracts."}
        warning = lsp.messages[0]
        assert warning.type == types.MessageType.Warning and "max_rounds" in warning.message
