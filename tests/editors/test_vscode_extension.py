"""The VS Code extension's suites (editors/vscode) as part of the default pytest run:
tsc, unit tests with a fake `vscode` module, `vsce package` with a check of the .vsix, and the
vscode-jsonrpc end-to-end test against the real server and the vLLM test double."""

from __future__ import annotations

import shutil
import sys

import pytest

from tests.editors._run import REPO, run_suite

VSCODE = REPO / "editors" / "vscode"
NPM = shutil.which("npm")

pytestmark = [
    pytest.mark.skipif(
        not (shutil.which("node") and NPM), reason="node and npm are not installed: the VS Code extension needs Node >= 20"
    ),
    pytest.mark.timeout(600),
]


def npm(*args: str, timeout: float = 300, **env: str) -> str:
    return run_suite([NPM, *args], cwd=VSCODE, env=env, timeout=timeout)


@pytest.fixture(scope="module")
def compiled() -> str:
    """Dependencies installed (CI runs `npm ci` first; this covers a plain pytest run), then tsc."""
    if not (VSCODE / "node_modules").is_dir():
        npm("ci", "--no-audit", "--no-fund", "--loglevel=error", timeout=600)
    return npm("run", "compile")


def test_typescript_compiles(compiled):
    assert (VSCODE / "out" / "src" / "extension.js").is_file()
    assert (VSCODE / "dist" / "extension.js").is_file()


def test_unit_tests_with_a_mocked_vscode_module(compiled):
    output = npm("test")
    assert "# fail 0" in output or "ℹ fail 0" in output, output[-2000:]


def test_vsce_packages_a_self_contained_vsix(compiled):
    vsix = VSCODE / "qwen-lsp.vsix"
    vsix.unlink(missing_ok=True)
    output = npm("run", "package")
    assert vsix.is_file(), output[-2000:]
    assert "qwen-lsp.vsix: ok" in output  # test/vsix-check.ts: entry point inside, loads, no missing modules


def test_jsonrpc_end_to_end_against_the_server_and_the_vllm_double(compiled):
    output = npm("run", "e2e", QWEN_LSP_PYTHON=sys.executable, QWEN_LSP_REPO=str(REPO))
    assert "ℹ fail 0" in output or "# fail 0" in output, output[-2000:]
