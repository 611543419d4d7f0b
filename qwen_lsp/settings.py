"""One settings model: defaults < the user's config file < [tool.qwen-lsp] in pyproject.toml < QWEN_LSP_* env
< explicit overrides < the editor's workspace-level settings.

The user's config file (`~/.config/qwen-lsp/config.toml` on Linux, or $QWEN_LSP_CONFIG_FILE) is the
one place for base_url, api_key and model across repositories: the user's own, so trusted like the
environment; a repository's pyproject.toml may still tune the unprivileged settings for itself.

Explicit overrides are what the editor sends (LSP initializationOptions,
`workspace/configuration` section `qwen`) or what a CLI flag says. Settings stored in the
repository (pyproject.toml, and the editor's workspace-level settings such as
.vscode/settings.json) are untrusted: they may not choose the model server, keys, headers or
commands (unless the user trusts the workspace), and may lower limits, never raise them.
"""

from __future__ import annotations

from dataclasses import dataclass
import logging
import math
import os
import re
from pathlib import Path
from typing import Any, Literal

import tomllib

from platformdirs import user_cache_dir, user_config_dir
from pydantic import BaseModel, Field, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    PyprojectTomlConfigSettingsSource,
    SettingsConfigDict,
)

from qwen_lsp.files import folder_problem

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
    repo_map: int = 1_024  # signatures; the callee walk shows the bodies that run (issue 34: callees got 1k of its 2k)
    git: int = 2_048
    files: int = 16_384
    callees: int = 5_120  # bodies of what the failing code calls (context/callees.py)
    changes: int = 2_048  # uncommitted and recent diffs of the code the failure reaches (context/changes.py)
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
    # The verification sandbox (engine/sandbox_limits.py). A repository's own settings may not change
    # these (they are privileged, like commands): only the user loosens the sandbox. 0: no limit.
    sandbox_memory_mb: int = Field(8192, ge=0)  # address space of each process (RLIMIT_AS)
    sandbox_processes: int = Field(512, ge=0)  # processes and threads in one sandbox
    sandbox_file_size_mb: int = Field(1024, ge=0)  # largest file a process may write (RLIMIT_FSIZE)
    sandbox_cpu_seconds: int = Field(600, ge=0)  # CPU time of each process (RLIMIT_CPU)
    copy_file_max_bytes: int = Field(64_000_000, ge=0)  # larger files are left out of the verification copy


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
    verify: bool = True  # run the verify command (always sandboxed; no sandbox, no run); false: parse checks only
    run_model_verify_commands: bool = True  # only allow-listed test runners, in a temp copy
    # How the loop spends thinking, for comparisons (bench/fixes): "default" is one thinking plan
    # (cached) then non-thinking patch rounds; "reading_plan" lets that plan read files first
    # (engine/reading.py); the others exist to measure what the default saves.
    strategy: Literal["default", "reading_plan", "think_every_round", "no_thinking", "no_plan",
                      "prefix_unstable"] = "default"
    # The reading plan's budget: tool calls while planning (refused ones count too), and the tokens
    # their answers may add to the prompt in all (one answer is cut at engine/reading.py's cap).
    plan_read_calls: int = Field(4, ge=0)
    plan_read_tokens: int = Field(8_192, ge=0)

    budgets: Budgets = Field(default_factory=Budgets)
    limits: Limits = Field(default_factory=Limits)

    # Language server
    review_on_save: bool = False
    review_debounce_seconds: float = 1.5
    # AI comments (engine/comments.py): a comment starting with one of these is an instruction.
    # The user's own settings only: a repository never chooses what in its files reads as a request.
    comment_markers: list[str] = Field(default_factory=lambda: ["qwen:", "qwen!"])
    # A one-line tail of the plan's reasoning in the editor's progress and under qfix's spinner.
    live_thinking: bool = True

    session_id: str | None = None  # sent as x-session-id (default: per workspace and developer, llm/identity.py)

    # A team's model server behind a router or gateway (docs/team.md). User-level only: a repository's
    # settings may not set any of these (PRIVILEGED_KEYS), they reach the server or the gateway.
    user_id: str | None = None  # sent as the request's `user` (LiteLLM keys customers on it); unset: no `user`
    extra_headers: dict[str, str] = Field(default_factory=dict)  # e.g. LiteLLM tags, llm-d fairness headers
    priority_scheduling: bool = False  # the server runs --scheduling-policy priority: send `priority`
    background_priority: int = 10  # with priority_scheduling: review on save after fixes (vLLM: lower first)
    cache_salt: str | None = None  # vLLM cache_salt: prefix reuse only between requests with the same salt
    busy_wait_seconds: float = 300.0  # how long one request waits on a busy server (429/503/408), at most
    background_max_concurrent: int = 1  # background requests (review on save) at once, per model server

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


# -- loading ------------------------------------------------------------------------------------
#
# Each source is read into a plain dict (a "layer"); the layers are merged, later ones
# winning, and validated once. Kept apart so that a bad value can be traced to the source
# it came from and dropped there, and so that a rule about one source is one line here.

ENV = "environment"
PYPROJECT = "pyproject.toml"
EDITOR = "editor settings"
EDITOR_WORKSPACE = "the editor's workspace settings"
CONFIG_FILE_ENV = "QWEN_LSP_CONFIG_FILE"


class UnreadableSettings(ValueError):
    """A settings file that is not TOML at all (strict loading; lenient loading drops it and says so)."""


def user_config_file() -> Path:
    """The user's own settings file: $QWEN_LSP_CONFIG_FILE, else config.toml in the platform's user
    config folder (~/.config/qwen-lsp/config.toml on Linux). Keys as in [tool.qwen-lsp]."""
    return Path(os.environ.get(CONFIG_FILE_ENV) or Path(user_config_dir("qwen-lsp")) / "config.toml")


def _user_config(dropped: list[DroppedSetting] | None) -> tuple[str, dict[str, Any]] | None:
    path = user_config_file()
    try:
        with path.open("rb") as f:
            table = tomllib.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # tomllib.TOMLDecodeError is a ValueError
        if dropped is None:
            raise UnreadableSettings(f"{path}: {exc}") from exc
        dropped.append(DroppedSetting(str(path), "(the whole file)", f"unreadable ({exc})"))
        return None
    return str(path), _clean(table)


@dataclass(frozen=True)
class DroppedSetting:
    """A value `load_settings_lenient` ignored: where it came from, its key, and why."""

    source: str  # ENV, PYPROJECT, EDITOR, EDITOR_WORKSPACE or the user's config file
    key: str  # dotted: "budgets.files"
    reason: str

    def __str__(self) -> str:
        return f"{self.key} (from {self.source}: {self.reason})"


class _PyprojectSettings(Settings):
    model_config = SettingsConfigDict(pyproject_toml_table_header=("tool", "qwen-lsp"))


class _MergedOnly(Settings):
    """Validates the merged layers and nothing else (Settings(...) would read the environment again)."""

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, *_, **__):
        return (init_settings,)


def _validate(values: dict[str, Any]) -> Settings:
    checked = _MergedOnly(**values)
    return Settings.model_construct(_fields_set=checked.model_fields_set, **dict(checked))


class _EnvLayer(EnvSettingsSource):
    """QWEN_LSP_* as pydantic-settings reads it, except that a value that does not even parse
    (bad JSON for a nested setting) is dropped and recorded instead of failing the whole source."""

    def __init__(self, dropped: list[DroppedSetting] | None) -> None:
        super().__init__(Settings)
        self._dropped = dropped

    def prepare_field_value(self, field_name: str, field: FieldInfo, value: Any, value_is_complex: bool) -> Any:
        try:
            return super().prepare_field_value(field_name, field, value, value_is_complex)
        except ValueError as exc:
            if self._dropped is None:
                raise
            self._dropped.append(DroppedSetting(ENV, field_name, f"not valid JSON ({exc})"))
            return None


def _layers(workspace: Path | None, overrides: dict[str, Any] | None,
            dropped: list[DroppedSetting] | None = None,
            workspace_overrides: dict[str, Any] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The sources, lowest precedence first. With `dropped`, a source that cannot be read at
    all is recorded there and skipped; without, its error propagates. `workspace_overrides`: editor
    settings from a workspace-level origin, which the repository chose (see `repo_settings`)."""
    layers: list[tuple[str, dict[str, Any]]] = []
    user = _clean(overrides or {})
    if (config := _user_config(dropped)) is not None:
        layers.append(config)
    listed = (config[1] if config else {}).get("trusted_workspaces")  # the user's file may trust repositories too
    trusted = workspace is not None and (workspace_trusted(workspace, user) or
                                         workspace_trusted(workspace, {"trusted_workspaces": listed or []}))
    pyproject = workspace / "pyproject.toml" if workspace else None
    if pyproject is not None and pyproject.is_file():
        try:
            table = PyprojectTomlConfigSettingsSource(_PyprojectSettings, pyproject)()
            below = _deep_update(_defaults(), _merge(layers))  # no limit above what the user's own file set
            layers.append((PYPROJECT, repo_settings(table, pyproject, trusted=trusted, baseline=below)))
        except (OSError, ValueError) as exc:  # tomllib.TOMLDecodeError is a ValueError
            if dropped is None:
                raise
            dropped.append(DroppedSetting(PYPROJECT, "[tool.qwen-lsp]", f"unreadable ({exc})"))
    layers.append((ENV, _EnvLayer(dropped)()))
    layers.append((EDITOR, user))
    if workspace_overrides:
        below = _deep_update(_defaults(), _merge(layers))
        layers.append((EDITOR_WORKSPACE, repo_settings(_clean(workspace_overrides), EDITOR_WORKSPACE,
                                                       trusted=trusted, baseline=below)))
    return layers


def _merge(layers: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for _source, values in layers:
        merged = _deep_update(merged, values)
    return merged


def _deep_update(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_update(out[key], value)
        else:
            out[key] = value
    return out


def load_settings(workspace: Path | None = None, overrides: dict[str, Any] | None = None) -> Settings:
    """Settings for `workspace`: defaults < its [tool.qwen-lsp] < QWEN_LSP_* env < `overrides`.
    Strict: a bad value raises (command lines, where the user reads the error and fixes it)."""
    return _validate(_merge(_layers(workspace, overrides)))


def load_settings_lenient(
    workspace: Path | None = None, overrides: dict[str, Any] | None = None,
    workspace_overrides: dict[str, Any] | None = None,
) -> tuple[Settings, list[DroppedSetting]]:
    """Like `load_settings`, but a bad value is dropped from the source that set it (a lower
    source's value, or the default, applies instead) and reported, so that one typo does not
    take every feature of a long-running server down. `workspace_overrides`: see `_layers`."""
    dropped: list[DroppedSetting] = []
    layers = _layers(workspace, overrides, dropped, workspace_overrides)
    while True:
        try:
            return _validate(_merge(layers)), dropped
        except ValidationError as exc:
            culprits = [_drop(layers, tuple(str(p) for p in error["loc"]), error["msg"]) for error in exc.errors()]
            if not any(culprits):  # not traceable to a source: nothing more to drop
                raise
            dropped += [c for c in culprits if c is not None]


def _drop(layers: list[tuple[str, dict[str, Any]]], loc: tuple[str, ...], reason: str) -> DroppedSetting | None:
    """Remove the value at `loc` from the highest layer that sets it (the one that won)."""
    for source, values in reversed(layers):
        for depth in range(len(loc), 0, -1):  # the deepest key this layer has: keep its siblings
            parent = values
            for part in loc[: depth - 1]:
                parent = parent.get(part) if isinstance(parent, dict) else None
            if isinstance(parent, dict) and loc[depth - 1] in parent:
                del parent[loc[depth - 1]]
                return DroppedSetting(source, ".".join(loc[:depth]), reason)
    return None


def _clean(overrides: dict[str, Any]) -> dict[str, Any]:
    """Drop None values (editors send null for 'unset') and accept camelCase keys."""
    out: dict[str, Any] = {}
    for key, value in overrides.items():
        if value is None:
            continue
        out[_snake_case(key)] = _clean(value) if isinstance(value, dict) else value
    return out


def _snake_case(key: str) -> str:
    """`reviewOnSave` -> `review_on_save` (editors spell settings in camelCase)."""
    return "".join("_" + c.lower() if c.isupper() else c for c in key)


def describe_invalid(exc: ValidationError) -> str:
    """A settings ValidationError as one line for a terminal: "cache_dir: /x is a file, ..."."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc'])}: {e['msg'].removeprefix('Value error, ')}"
        for e in exc.errors(include_url=False, include_input=False)
    )


# -- repository settings are untrusted ---------------------------------------------------------

TRUSTED_WORKSPACES_ENV = "QWEN_LSP_TRUSTED_WORKSPACES"
# What a repository's own [tool.qwen-lsp] may not set unless the user trusts the repository:
# where the prompt and the API key go, request headers, where files are written, what runs.
PRIVILEGED_KEYS = frozenset({"base_url", "api_key", "session_id", "cache_dir", "run_model_verify_commands",
                             "user_id", "extra_headers", "priority_scheduling", "background_priority", "cache_salt"})
_PRIVILEGED_NAME = re.compile(r"url|api_key|header|command|secret|password|trusted|sandbox")


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


# Bounds on what a fix may cost or write: a repository may lower them, never raise them.
LOWER_ONLY_KEYS = frozenset({"max_rounds", "max_total_tokens", "plan_max_tokens", "patch_max_tokens",
                             "plan_read_calls", "plan_read_tokens",
                             "verify_timeout", "request_timeout", "cache_size_mb",
                             "busy_wait_seconds", "background_max_concurrent"})


# What only the user's own settings choose, even in a trusted repository.
USER_ONLY_KEYS = frozenset({"comment_markers"})


def repo_settings(table: dict[str, Any], source: Path | str, *, trusted: bool,
                  baseline: dict[str, Any] | None = None) -> dict[str, Any]:
    """The part of a repository's settings (its [tool.qwen-lsp] table, or editor settings from the
    workspace) that applies: all of it in a trusted workspace; else everything but the privileged
    keys (at any depth), and no limit above `baseline` (what applies without the repository; the
    defaults when None), each ignored with a warning. USER_ONLY_KEYS never apply from here."""
    if mine := sorted(USER_ONLY_KEYS & set(table)):
        log.warning("qwen-lsp: ignoring %s from %s: only your own settings choose it.", ", ".join(mine), source)
        table = {k: v for k, v in table.items() if k not in USER_ONLY_KEYS}
    if trusted:
        return table
    kept, ignored = _without_privileged(table, "")
    if ignored:
        log.warning(
            "qwen-lsp: ignoring %s from %s: a repository's settings may not choose the model server, its key "
            "or headers, or run commands. If you trust this repository, add it to %s.",
            ", ".join(ignored), source, TRUSTED_WORKSPACES_ENV,
        )
    kept, raised = _not_raised(kept, baseline if baseline is not None else _defaults(), "")
    kept, odd = _finite(kept, "")
    if odd:
        log.warning("qwen-lsp: ignoring %s from %s: a limit must be a finite number.", ", ".join(odd), source)
    if raised:
        log.warning("qwen-lsp: ignoring %s from %s: a repository's settings may lower limits, never raise them.",
                    ", ".join(raised), source)
    return kept


# Limits where 0 means "no limit": a repository's 0 raises any other value.
ZERO_IS_UNLIMITED = frozenset({"copy_file_max_bytes", "sandbox_memory_mb", "sandbox_processes",
                               "sandbox_file_size_mb", "sandbox_cpu_seconds"})


def _finite(table: dict[str, Any], prefix: str) -> tuple[dict[str, Any], list[str]]:
    """`table` without numbers that are not finite (nan, inf: "took longer than nan s" ends every fix)."""
    kept: dict[str, Any] = {}
    odd: list[str] = []
    for key, value in table.items():
        if isinstance(value, dict) and key == "limits" and not prefix:
            kept[key], deeper = _finite(value, "limits.")
            odd += deeper
        elif (number := _number(value)) is not None and not math.isfinite(number):
            odd.append(f"{prefix}{key} = {value}")
        else:
            kept[key] = value
    return kept, odd


def _defaults() -> dict[str, Any]:
    """The default values of the settings a repository may only lower."""
    fields = Settings.model_fields
    return {**{k: fields[k].default for k in LOWER_ONLY_KEYS}, "limits": Limits().model_dump()}


def _not_raised(table: dict[str, Any], baseline: dict[str, Any], prefix: str) -> tuple[dict[str, Any], list[str]]:
    kept: dict[str, Any] = {}
    raised: list[str] = []
    for key, value in table.items():
        if key == "limits" and not prefix and isinstance(value, dict):
            kept[key], deeper = _not_raised(value, baseline.get("limits") or {}, "limits.")
            raised += [f"{d}" for d in deeper]
            continue
        limit = key in LOWER_ONLY_KEYS if not prefix else key in Limits.model_fields
        ours, theirs = _number(baseline.get(key)), _number(value)
        if key in ZERO_IS_UNLIMITED:  # compared as the user reads them: 0 is the largest of all
            ours, theirs = (math.inf if n == 0 else n for n in (ours, theirs))
        if limit and ours is not None and theirs is not None and theirs > ours:
            raised.append(f"{prefix}{key} = {value} (above {baseline.get(key)})")
            continue
        kept[key] = value
    return kept, raised


def _number(value: Any) -> float | None:
    """A value as the number it would validate to; None when it is none (validation judges it)."""
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


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
