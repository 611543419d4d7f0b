"""Settings: the precedence of their sources, the model card defaults, and lenient loading that
drops a bad value where it was set instead of failing."""

from __future__ import annotations

import pytest

from qwen_lsp.settings import DroppedSetting, Settings, load_settings, load_settings_lenient


def test_settings_precedence_defaults_pyproject_env_overrides(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.qwen-lsp]\nmodel = "from-pyproject"\nmax_rounds = 3\nbase_url = "http://p/v1"\n'
        "[tool.qwen-lsp.budgets]\ngit = 100\n"
    )
    monkeypatch.setenv("QWEN_LSP_MAX_ROUNDS", "5")
    monkeypatch.setenv("QWEN_LSP_BASE_URL", "http://env/v1")
    s = load_settings(tmp_path, {"baseUrl": "http://init/v1", "budgets": {"files": 7}, "model": None})
    assert s.model == "from-pyproject"  # pyproject beats the default; a null override is "unset"
    assert s.max_rounds == 5  # env beats pyproject
    assert s.base_url == "http://init/v1"  # overrides beat env, camelCase accepted
    assert (s.budgets.git, s.budgets.files, s.budgets.total_input) == (100, 7, 32768)  # nested merge


def test_settings_defaults_are_the_model_card_presets(monkeypatch):
    for name in ("QWEN_LSP_BASE_URL", "QWEN_LSP_MODEL", "QWEN_LSP_API_KEY", "QWEN_LSP_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    s = load_settings(None)
    assert (s.base_url, s.model, s.api_key) == ("http://127.0.0.1:8000/v1", None, "EMPTY")
    assert s.cache_dir.name == "qwen-lsp"
    assert s.thinking.model_dump() == {"temperature": 0.6, "top_p": 0.95, "top_k": 20, "min_p": 0.0, "presence_penalty": 0.0}
    assert s.non_thinking.model_dump() == {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "min_p": 0.0, "presence_penalty": 1.5}


def test_lenient_settings_drop_each_bad_value_where_it_was_set(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.qwen-lsp]\nmax_rounds = 3\ncache_size_mb = "big"\n[tool.qwen-lsp.budgets]\ngit = "x"\nfiles = 9\n'
    )
    monkeypatch.setenv("QWEN_LSP_MAX_ROUNDS", "many")
    monkeypatch.setenv("QWEN_LSP_THINKING", "{not json")
    with pytest.raises(ValueError):  # the strict loader, for command lines, still refuses
        load_settings(tmp_path)

    s, dropped = load_settings_lenient(tmp_path, {"reviewDebounceSeconds": "soon", "model": "m"})
    assert {(d.source, d.key) for d in dropped} == {
        ("environment", "max_rounds"), ("environment", "thinking"),
        ("pyproject.toml", "cache_size_mb"), ("pyproject.toml", "budgets.git"),
        ("editor settings", "review_debounce_seconds"),
    }
    assert s.max_rounds == 3  # the bad env value gave way to pyproject's
    assert (s.cache_size_mb, s.review_debounce_seconds, s.thinking.temperature) == (512, 1.5, 0.6)  # defaults
    assert (s.budgets.git, s.budgets.files, s.model) == (2048, 9, "m")  # the good siblings are kept
    assert "valid integer" in str(next(d for d in dropped if d.key == "max_rounds"))


def test_lenient_settings_survive_an_unparsable_pyproject(tmp_path, monkeypatch):
    monkeypatch.delenv("QWEN_LSP_MAX_ROUNDS", raising=False)
    (tmp_path / "pyproject.toml").write_text("[tool.qwen-lsp\nmax_rounds = 3\n")
    s, dropped = load_settings_lenient(tmp_path, {"maxRounds": 4})
    assert s.max_rounds == 4
    assert [(d.source, d.key) for d in dropped] == [("pyproject.toml", "[tool.qwen-lsp]")]
    assert isinstance(dropped[0], DroppedSetting)


def test_a_repository_may_lower_limits_never_raise_them(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv("QWEN_LSP_MAX_ROUNDS", raising=False)
    (tmp_path / "pyproject.toml").write_text(
        "[tool.qwen-lsp]\nmax_rounds = 50\nmax_total_tokens = 1000\n"
        "[tool.qwen-lsp.limits]\nedit_max_bytes = 10000000\nfile_max_bytes = 100\n"
    )
    settings = load_settings(tmp_path)
    assert (settings.max_rounds, settings.max_total_tokens) == (8, 1000)
    assert (settings.limits.edit_max_bytes, settings.limits.file_max_bytes) == (256_000, 100)
    assert "ignoring max_rounds = 50 (above 8), limits.edit_max_bytes = 10000000 (above 256000)" in caplog.text
    monkeypatch.setenv("QWEN_LSP_TRUSTED_WORKSPACES", str(tmp_path))  # the user trusts it: its values apply
    assert load_settings(tmp_path).limits.edit_max_bytes == 10_000_000


def test_editor_settings_from_the_workspace_are_repository_settings(tmp_path, monkeypatch, caplog):
    """What .vscode/settings.json says (workspace-level origin) may not choose the server or raise a
    limit above what the user's own settings give; other keys apply over the user's."""
    user = {"baseUrl": "http://127.0.0.1:9/v1", "maxRounds": 3}
    workspace = {"baseUrl": "http://attacker.example/v1", "serverCommand": ["evil"], "maxRounds": 6,
                 "maxTotalTokens": 10, "reviewOnSave": True, "trustedWorkspaces": [str(tmp_path)]}
    settings, _ = load_settings_lenient(tmp_path, user, workspace)
    assert settings.base_url == "http://127.0.0.1:9/v1" and settings.max_rounds == 3
    assert settings.max_total_tokens == 10 and settings.review_on_save is True
    assert "ignoring base_url, server_command, trusted_workspaces from the editor's workspace settings" in caplog.text
    trusted, _ = load_settings_lenient(tmp_path, {**user, "trustedWorkspaces": [str(tmp_path)]}, workspace)
    assert trusted.base_url == "http://attacker.example/v1"  # only the user's own settings can trust it


# -- the user's own config file -----------------------------------------------------------------------

def _user_config(monkeypatch, tmp_path, text: str) -> None:
    path = tmp_path / "user" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    monkeypatch.setenv("QWEN_LSP_CONFIG_FILE", str(path))
    for name in ("QWEN_LSP_BASE_URL", "QWEN_LSP_MODEL", "QWEN_LSP_API_KEY", "QWEN_LSP_MAX_ROUNDS"):
        monkeypatch.delenv(name, raising=False)


def test_the_user_config_file_is_one_place_for_server_key_and_model_and_is_trusted(tmp_path, monkeypatch):
    _user_config(monkeypatch, tmp_path, 'base_url = "http://gpu-box:8000/v1"\napi_key = "sk-mine"\n'
                 'model = "Qwen/Qwen3.6-27B-FP8"\nmax_rounds = 4\n')
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text('[tool.qwen-lsp]\nbase_url = "http://evil/v1"\nmax_rounds = 3\n')
    s = load_settings(repo)
    assert (s.base_url, s.api_key, s.model) == ("http://gpu-box:8000/v1", "sk-mine", "Qwen/Qwen3.6-27B-FP8")
    assert s.max_rounds == 3  # a repository may still tune what is not privileged, and lower a limit
    monkeypatch.setenv("QWEN_LSP_BASE_URL", "http://env/v1")
    assert load_settings(repo).base_url == "http://env/v1"  # the environment beats the file
    assert load_settings(repo, {"baseUrl": "http://editor/v1"}).base_url == "http://editor/v1"


def test_a_repository_may_not_raise_a_limit_the_user_config_file_lowered(tmp_path, monkeypatch):
    _user_config(monkeypatch, tmp_path, "max_rounds = 2\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text("[tool.qwen-lsp]\nmax_rounds = 5\n")
    assert load_settings(repo).max_rounds == 2


def test_the_user_config_file_may_trust_a_repository(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text('[tool.qwen-lsp]\nbase_url = "http://team-router/v1"\n')
    _user_config(monkeypatch, tmp_path, f'trusted_workspaces = ["{tmp_path}"]\n')
    monkeypatch.delenv("QWEN_LSP_TRUSTED_WORKSPACES", raising=False)
    assert load_settings(repo).base_url == "http://team-router/v1"


def test_a_bad_user_config_file_is_reported_where_it_is(tmp_path, monkeypatch):
    _user_config(monkeypatch, tmp_path, 'max_rounds = "many"\nmodel = "m"\n')
    settings, dropped = load_settings_lenient(None)
    assert settings.model == "m" and settings.max_rounds == Settings.model_fields["max_rounds"].default
    assert [d.key for d in dropped] == ["max_rounds"] and dropped[0].source.endswith("config.toml")
    _user_config(monkeypatch, tmp_path, "model = \n")
    with pytest.raises(ValueError, match="config.toml"):
        load_settings(None)
    from qwen_lsp.cli import main

    assert main(["doctor"]) == 2  # one line naming the file, no traceback
    settings, dropped = load_settings_lenient(None)
    assert dropped and "unreadable" in dropped[0].reason


def test_the_suite_never_reads_the_users_own_config_file(own_user_dirs):
    from qwen_lsp.settings import user_config_file

    assert user_config_file() == own_user_dirs["QWEN_LSP_CONFIG_FILE"] and not user_config_file().exists()


def test_the_reading_plan_is_a_strategy_a_repository_may_choose_but_its_budget_only_lowered(tmp_path, monkeypatch):
    for key in ("QWEN_LSP_STRATEGY", "QWEN_LSP_PLAN_READ_CALLS", "QWEN_LSP_PLAN_READ_TOKENS"):
        monkeypatch.delenv(key, raising=False)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.qwen-lsp]\nstrategy = "reading_plan"\nplan_read_calls = 40\nplan_read_tokens = 1000\n')
    settings = load_settings(tmp_path)
    assert (settings.strategy, settings.plan_read_calls, settings.plan_read_tokens) == ("reading_plan", 4, 1000)
    monkeypatch.setenv("QWEN_LSP_STRATEGY", "reading_plan")
    assert load_settings(None).strategy == "reading_plan"
