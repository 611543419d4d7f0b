"""The language server against a real model server (llama.cpp + SmolLM2-135M): a
resolve runs the whole pipeline and, on useless output, offers no edit and says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from qwen_lsp.lsp.convert import file_uri
from tests.calc_project import BUGGY, PYTEST, PYTEST_OUTPUT
from tests.lsp.helpers import code_actions, open_doc, terminal_output, wait_until

pytestmark = pytest.mark.real_model


@pytest.fixture
def server_options(llama_server: str, cache_dir: Path) -> dict[str, Any]:
    return {"baseUrl": llama_server, "cacheDir": str(cache_dir), "maxRetries": 0,
            "planMaxTokens": 160, "patchMaxTokens": 160, "maxRounds": 2}


async def test_resolve_on_a_real_model_never_offers_a_broken_edit(lsp, project):
    calc = open_doc(lsp, project, "calc.py")
    terminal_output(lsp, PYTEST, 1, PYTEST_OUTPUT, project)
    test_uri = file_uri(project, "test_calc.py")
    diagnostics = await wait_until(lambda: lsp.diagnostics.get(test_uri))
    fix = next(a for a in await code_actions(lsp, test_uri, list(diagnostics)) if a.kind == types.CodeActionKind.QuickFix)

    resolved = await lsp.code_action_resolve_async(fix)

    if resolved.edit is None:  # the expected case for a 135M model: no edit, and the reason is given
        assert resolved.disabled is not None and resolved.disabled.reason
    else:  # only a change whose test passed in the sandbox may come back as an edit
        assert "✓" in resolved.title and "✗" not in resolved.title
        (doc_edit,) = resolved.edit.document_changes
        assert doc_edit.text_document.uri == calc
    assert (project / "calc.py").read_text() == BUGGY  # the server never writes files itself
    # and it still answers afterwards
    assert await code_actions(lsp, test_uri, list(diagnostics))
