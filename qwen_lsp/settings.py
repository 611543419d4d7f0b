"""One settings model: defaults < [tool.qwen-lsp] in pyproject.toml < QWEN_LSP_* env < explicit overrides.

Explicit overrides are what the editor sends (LSP initializationOptions,
`workspace/configuration` section `qwen`) or what a CLI flag says.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from platformdirs import user_cache_dir
from pydantic import BaseModel, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    PyprojectTomlConfigSettingsSource,
    SettingsConfigDict,
)

from qwen_lsp.files import folder_problem


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

    budgets: Budgets = Field(default_factory=Budgets)

    # Language server
    review_on_save: bool = False
    review_debounce_seconds: float = 1.5

    session_id: str | None = None  # sent as x-session-id / user for session-affinity routers

    @field_validator("cache_dir")
    @classmethod
    def _cache_dir_is_a_folder(cls, path: Path) -> Path:
        if (problem := folder_problem(Path(path).expanduser())) is not None:
            raise ValueError(f"{problem}: point cache_dir (QWEN_LSP_CACHE_DIR) at a folder")
        return path

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


def describe_invalid(exc: ValidationError) -> str:
    """A settings ValidationError as one line for a terminal: "cache_dir: /x is a file, ..."."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc'])}: {e['msg'].removeprefix('Value error, ')}"
        for e in exc.errors(include_url=False, include_input=False)
    )
