"""One settings model: defaults < [tool.qwen-lsp] in pyproject.toml < QWEN_LSP_* env < explicit overrides.

Explicit overrides are what the editor sends (LSP initializationOptions,
`workspace/configuration` section `qwen`) or what a CLI flag says.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from platformdirs import user_cache_dir
from pydantic import BaseModel, Field
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    PyprojectTomlConfigSettingsSource,
    SettingsConfigDict,
)


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
    # How the loop spends thinking, for comparisons (bench/fixes): "default" is one thinking plan
    # (cached) then non-thinking patch rounds; the others exist to measure what that saves.
    strategy: Literal["default", "think_every_round", "no_thinking", "no_plan", "prefix_unstable"] = "default"

    budgets: Budgets = Field(default_factory=Budgets)

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

    class _WithPyproject(Settings):
        model_config = SettingsConfigDict(pyproject_toml_table_header=("tool", "qwen-lsp"))

        @classmethod
        def settings_customise_sources(cls, settings_cls, init_settings, env_settings, *_, **__):
            return (init_settings, env_settings, PyprojectTomlConfigSettingsSource(settings_cls, pyproject))

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
