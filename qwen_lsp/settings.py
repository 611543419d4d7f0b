"""One settings model: defaults < [tool.qwen-lsp] in pyproject.toml < QWEN_LSP_* env < explicit overrides.

Explicit overrides are what the editor sends (LSP initializationOptions,
`workspace/configuration` section `qwen`) or what a CLI flag says.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

from platformdirs import user_cache_dir
from pydantic import BaseModel, Field
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    PyprojectTomlConfigSettingsSource,
    SettingsConfigDict,
)

log = logging.getLogger(__name__)


class SamplingPreset(BaseModel):
    """Sampling for one mode. Sent on every request: vLLM otherwise applies the
    model's generation_config (the thinking-general preset)."""

    temperature: float
    top_p: float
    top_k: int = 20
    min_p: float = 0.0
    presence_penalty: float = 0.0


# Qwen3.6-27B model card: "thinking, precise coding" and "non-thinking".
THINKING_PRESET = SamplingPreset(temperature=0.6, top_p=0.95, top_k=20, min_p=0.0, presence_penalty=0.0)
NON_THINKING_PRESET = SamplingPreset(temperature=0.7, top_p=0.8, top_k=20, min_p=0.0, presence_penalty=1.5)


class Budgets(BaseModel):
    """Token budgets for the prompt sections (Qwen3.6 tokens)."""

    total_input: int = 32_768
    repo_map: int = 2_048
    git: int = 2_048
    files: int = 16_384
    task: int = 4_096


class Limits(BaseModel):
    """Bounds on what model output may cost: its size, the files it writes, the work its tools do,
    and the time a whole fix may take. Each is a refusal the model or the user is told about."""

    fix_deadline_seconds: float = 1200.0  # the whole fix: context, plan, patch rounds, validation
    stream_idle_seconds: float = 120.0  # no byte from the model server for this long: the answer is abandoned
    answer_max_bytes: int = 2_000_000  # text of one answer (reasoning + content + tool arguments)
    edit_max_bytes: int = 256_000  # new text of one edit_file / create_file call
    file_max_bytes: int = 2_000_000  # any file a fix would write, after its edits
    search_pattern_max_chars: int = 1_000
    search_file_max_bytes: int = 1_000_000  # search_code skips larger files (and says so)
    search_total_max_bytes: int = 50_000_000  # search_code stops after reading this much
    search_max_matches: int = 50
    parse_check_seconds: float = 1.0  # per tree-sitter parse; a slower file is left unchecked, not failed


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="QWEN_LSP_",
        env_nested_delimiter="__",
        extra="ignore",
    )

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str | None = None  # None: the first id from GET /v1/models
    api_key: str = "EMPTY"
    cache_dir: Path = Field(default_factory=lambda: Path(user_cache_dir("qwen-lsp")))
    cache_size_mb: int = 512

    thinking: SamplingPreset = THINKING_PRESET
    non_thinking: SamplingPreset = NON_THINKING_PRESET

    # Model server behaviour
    connect_timeout: float = 5.0
    request_timeout: float = 600.0
    max_retries: int = 2
    plan_max_tokens: int = 16_384
    patch_max_tokens: int = 4_096

    # Engine bounds
    max_rounds: int = 8
    max_total_tokens: int = 400_000
    verify_timeout: float = 120.0
    run_model_verify_commands: bool = True  # only allow-listed test runners, in a temp copy

    budgets: Budgets = Field(default_factory=Budgets)
    limits: Limits = Field(default_factory=Limits)

    # Language server
    review_on_save: bool = False
    review_debounce_seconds: float = 1.5

    session_id: str | None = None  # sent as x-session-id / user for session-affinity routers

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Earlier sources win; no .env or secrets files.
        return (init_settings, env_settings)


def load_settings(workspace: Path | None = None, overrides: dict[str, Any] | None = None) -> Settings:
    """Settings for `workspace`: defaults < its [tool.qwen-lsp] < QWEN_LSP_* env < `overrides`."""
    pyproject = workspace / "pyproject.toml" if workspace else None
    if pyproject is None or not pyproject.is_file():
        return Settings(**_clean(overrides or {}))
    trusted = workspace is not None and workspace_trusted(workspace, _clean(overrides or {}))

    class _WithPyproject(Settings):
        model_config = SettingsConfigDict(pyproject_toml_table_header=("tool", "qwen-lsp"))

        @classmethod
        def settings_customise_sources(cls, settings_cls, init_settings, env_settings, *_, **__):
            return (init_settings, env_settings, _RepoPyproject(settings_cls, pyproject, trusted))

    return Settings.model_validate(_WithPyproject(**_clean(overrides or {})).model_dump())


def _clean(overrides: dict[str, Any]) -> dict[str, Any]:
    """Drop None values (editors send null for 'unset') and accept camelCase keys."""
    out: dict[str, Any] = {}
    for key, value in overrides.items():
        if value is None:
            continue
        snake = "".join("_" + c.lower() if c.isupper() else c for c in key)
        out[snake] = _clean(value) if isinstance(value, dict) else value
    return out


# -- repository settings are untrusted ---------------------------------------------------------

TRUSTED_WORKSPACES_ENV = "QWEN_LSP_TRUSTED_WORKSPACES"
# What a repository's own [tool.qwen-lsp] may not set unless the user trusts the repository:
# where the prompt and the API key go, request headers, where files are written, what runs.
PRIVILEGED_KEYS = frozenset({"base_url", "api_key", "session_id", "cache_dir", "run_model_verify_commands"})
_PRIVILEGED_NAME = re.compile(r"url|api_key|header|command|secret|password|trusted")


def workspace_trusted(workspace: Path, overrides: dict[str, Any]) -> bool:
    """Whether the user's own settings trust `workspace`: it is (inside) a root listed in
    $QWEN_LSP_TRUSTED_WORKSPACES (os.pathsep-separated) or the editor setting `trustedWorkspaces`."""
    listed = [p for p in os.environ.get(TRUSTED_WORKSPACES_ENV, "").split(os.pathsep) if p]
    from_editor = overrides.get("trusted_workspaces") or []
    listed += [from_editor] if isinstance(from_editor, str) else [str(p) for p in from_editor]
    real = Path(os.path.realpath(workspace))
    for root in listed:
        trusted_root = Path(os.path.realpath(os.path.expanduser(root)))
        if real == trusted_root or trusted_root in real.parents:
            return True
    return False


def repo_settings(table: dict[str, Any], source: Path, *, trusted: bool) -> dict[str, Any]:
    """The part of a repository's [tool.qwen-lsp] table that applies: all of it in a trusted
    workspace, else everything but the privileged keys (at any depth), with a warning."""
    if trusted:
        return table
    kept, ignored = _without_privileged(table, "")
    if ignored:
        log.warning(
            "qwen-lsp: ignoring %s from %s: a repository's settings may not choose the model server, its key "
            "or headers, or run commands. If you trust this repository, add it to %s.",
            ", ".join(ignored), source, TRUSTED_WORKSPACES_ENV,
        )
    return kept


def _privileged(key: str) -> bool:
    return key in PRIVILEGED_KEYS or bool(_PRIVILEGED_NAME.search(key.lower()))


def _without_privileged(table: dict[str, Any], prefix: str) -> tuple[dict[str, Any], list[str]]:
    kept: dict[str, Any] = {}
    ignored: list[str] = []
    for key, value in table.items():
        if _privileged(key):
            ignored.append(prefix + key)
        elif isinstance(value, dict):
            kept[key], deeper = _without_privileged(value, f"{prefix}{key}.")
            ignored += deeper
        else:
            kept[key] = value
    return kept, ignored


class _RepoPyproject(PyprojectTomlConfigSettingsSource):
    """[tool.qwen-lsp] of the workspace's pyproject.toml, less what the repository may not set."""

    def __init__(self, settings_cls: type[BaseSettings], pyproject: Path, trusted: bool) -> None:
        super().__init__(settings_cls, pyproject)
        self.init_kwargs = repo_settings(dict(self.init_kwargs), pyproject, trusted=trusted)
