"""pytest-lsp fixtures: a real `python -m qwen_lsp.cli` over stdio, driven as an editor would,
talking to the vLLM test double that runs in this process. A plugin (tests/conftest.py's
`pytest_plugins`), so that qfix's editor tests use the same server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from qwen_lsp.lsp.convert import file_uri
from tests.calc_project import make_project
from tests.lsp.helpers import MAIN, SERVER, recording_client, wait_until


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "proj")
    (root / "main.py").write_text(MAIN)
    return root


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "c"


@pytest.fixture
def server_options(vllm, cache_dir: Path) -> dict[str, Any]:
    """initializationOptions; modules override this fixture for other set-ups."""
    return {"baseUrl": vllm.base_url, "cacheDir": str(cache_dir), "maxRetries": 0}


@pytest.fixture
def client_config() -> dict[str, Any]:
    """`workspace/configuration` values the client serves (section -> values)."""
    return {}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=recording_client))
async def lsp(lsp_client: LanguageClient, project: Path, server_options: dict[str, Any], client_config: dict[str, Any]):
    for section, value in client_config.items():
        lsp_client.set_configuration(value, section=section)
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=file_uri(project, ""),
            workspace_folders=[types.WorkspaceFolder(uri=file_uri(project, ""), name="proj")],
            initialization_options=server_options,
        )
    )
    await wait_until(lambda: any(s["state"] == "idle" for s in lsp_client.statuses))  # initialized ran
    yield
    await lsp_client.shutdown_session()
