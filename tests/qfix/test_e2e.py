"""qfix end to end in real shells (bash, zsh, fish) driven in a pty, against the vLLM test double:
a failing command in a temp git repo is fixed with --yes, the re-run passes, --undo restores."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.net import closed_port_url
from tests.qfix.helpers import BUGGY, FIXED, PLAN, QFIX, Shell, fix_replies
from tests.vllm_double import Reply


@pytest.mark.parametrize("shell_name", ["bash", "zsh"])
def test_the_recorded_failure_is_fixed_verified_and_undone(shell_name, repo, qfix_env, vllm, shells):
    sh = Shell(shell_name, qfix_env, repo)
    shells.append(sh)
    assert "NameError" in sh.run("python script.py")

    vllm.script(*fix_replies())
    out = sh.run("qfix --yes", timeout=90)  # the shell function: uses what the hook recorded
    assert "Hello, world" in out  # the real re-run after writing the fix
    assert "passes now" in out
    assert sh.status() == 0
    assert (repo / "script.py").read_text() == FIXED

    assert "restored script.py" in sh.run("qfix --undo")
    assert sh.status() == 0
    assert (repo / "script.py").read_text() == BUGGY
    prompt = json.dumps(vllm.chat_requests()[0]["messages"])
    assert "NameError: name 'nme' is not defined" in prompt  # the output qfix captured reached the model


def test_qfix_runs_the_command_in_a_pty_and_fixes_a_failing_pytest(repo, qfix_env, vllm, shells):
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    vllm.script(*fix_replies("calc.py", "return a - b", "return a + b"))
    sh = Shell("zsh", qfix_env, repo)
    shells.append(sh)

    out = sh.run("qfix --yes -- pytest -q -p no:cacheprovider test_calc.py", timeout=90)
    assert "1 failed" in out and "1 passed" in out  # live output of the failing run, then the re-run
    assert sh.status() == 0
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    sh.run("qfix --undo")
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"


def test_fish_integration_fixes_the_recorded_failure(repo, qfix_env, vllm, shells):
    sh = Shell("fish", qfix_env, repo)
    shells.append(sh)
    sh.run("python script.py")
    vllm.script(*fix_replies())
    assert "passes now" in sh.run("qfix --yes", timeout=90)
    assert sh.status() == 0
    assert (repo / "script.py").read_text() == FIXED


def test_dry_run_shows_the_diff_and_changes_nothing(repo, qfix_env, vllm, shells):
    vllm.script(*fix_replies())
    sh = Shell("bash", qfix_env, repo)
    shells.append(sh)
    out = sh.run("qfix --dry-run -- python script.py", timeout=90)
    assert '-    return "Hello, " + nme' in out and '+    return "Hello, " + name' in out
    assert "Dry run: nothing was changed" in out
    assert sh.status() == 0
    assert (repo / "script.py").read_text() == BUGGY
    assert not list((repo.parent / "state").glob("undo/*/*.json"))  # nothing to undo either
    assert subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout == ""


def test_a_model_server_that_is_down_gives_one_actionable_line_and_exit_2(repo, qfix_env, shells):
    url = closed_port_url()
    sh = Shell("bash", {**qfix_env, "QWEN_LSP_BASE_URL": url}, repo)
    shells.append(sh)
    out = sh.run("qfix --yes -- python script.py 2>err.txt", timeout=90)
    assert sh.status() == 2
    lines = (repo / "err.txt").read_text().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("qfix: Cannot reach the model server at " + url)
    assert "vllm serve" in lines[0] and "QWEN_LSP_BASE_URL" in lines[0]  # how to fix it
    assert "NameError" in out  # the command's own output was still shown
    assert (repo / "script.py").read_text() == BUGGY


def test_json_report_has_plan_diffs_verification_and_model_usage(repo, qfix_env, vllm):
    vllm.script(*fix_replies())
    first = _json_run(repo, qfix_env)
    assert first["outcome"] == "fixed" and first["applied"] and first["exit_status"] == 0
    assert first["plan"]["steps"] == ["use name in greet"]
    assert [d["path"] for d in first["diffs"]] == ["script.py"] and "+ name" in first["diffs"][0]["diff"]
    assert first["verification"] == {"command": "python script.py", "exit_code": 0, "passed": True,
                                     "in_temporary_copy": False}  # the real re-run, after the write
    assert first["model"]["thinking_calls"] == 1 and first["model"]["non_thinking_calls"] == 3
    assert first["model"]["prompt_tokens"] > 0 and not first["model"]["cache_hit"]

    subprocess.run([QFIX, "--undo"], cwd=repo, env=qfix_env, check=True, capture_output=True)
    vllm.script(*fix_replies(with_plan=False))
    again = _json_run(repo, qfix_env)  # the same failure: the plan comes from the shared disk cache
    assert again["model"]["cache_hit"] and again["model"]["thinking_calls"] == 0
    assert again["verification"]["passed"]


def test_json_without_yes_is_a_dry_run(repo, qfix_env, vllm):
    vllm.script(*fix_replies())
    proc = subprocess.run([QFIX, "--json", "--", "python", "script.py"], cwd=repo, env=qfix_env,
                          capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    report = json.loads(proc.stdout)  # stdout is only the JSON; the command's output went to stderr
    assert "NameError" in proc.stderr
    assert proc.returncode == 0 and not report["applied"] and report["outcome"] == "proposed"
    assert report["verification"]["in_temporary_copy"]  # only the engine's check ran, nothing was written
    assert (repo / "script.py").read_text() == BUGGY


def test_json_summary_is_the_models_words_sanitized_and_labelled(repo, qfix_env, vllm):
    vllm.script(Reply(reasoning="hm", content=json.dumps(PLAN)),
                *[Reply(tool_calls=[("finish", {"summary": "Fixed\x1b]0;owned\x07 it, all tests pass"})])] * 2)
    proc = subprocess.run([QFIX, "--json", "--yes", "--", "python", "script.py"], cwd=repo, env=qfix_env,
                          capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["outcome"] == "gave_up" and report["summary_by"] == "model"  # a claim of the model's, not qfix's
    assert report["summary"] == "Fixed␛]0;owned␇ it, all tests pass"  # escape sequences shown, never raw


def test_json_reports_a_server_down_error(repo, qfix_env):
    env = {**qfix_env, "QWEN_LSP_BASE_URL": closed_port_url()}
    proc = subprocess.run([QFIX, "--json", "--yes", "--", "python", "script.py"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    report = json.loads(proc.stdout)
    assert report["outcome"] == "error" and "Cannot reach the model server" in report["error"]


def test_json_report_counts_the_reading_plans_thinking_calls_and_reads(repo, qfix_env, vllm):
    """QWEN_LSP_STRATEGY=reading_plan: the plan reads script.py, then answers; both are thinking calls."""
    first, *rest = fix_replies()
    vllm.script(Reply(reasoning="Let me see greet().", tool_calls=[("read_file", {"path": "script.py"})]), first, *rest)
    report = _json_run(repo, {**qfix_env, "QWEN_LSP_STRATEGY": "reading_plan"})
    assert report["outcome"] == "fixed"
    assert (report["model"]["thinking_calls"], report["model"]["plan_reads"]) == (2, 1)


def _json_run(repo, env) -> dict:
    proc = subprocess.run([QFIX, "--json", "--yes", "--", "python", "script.py"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_no_cache_thinks_again_where_the_second_run_would_reuse_the_plan(repo, qfix_env, vllm):
    """`qfix --no-cache`: the same failure asked again thinks afresh instead of replaying the cached plan."""
    def thinking() -> int:
        return sum(body["chat_template_kwargs"]["enable_thinking"] is True for body in vllm.chat_requests())

    def dry_run(*flags: str) -> dict:
        proc = subprocess.run([QFIX, "--json", *flags, "--", "python", "script.py"], cwd=repo, env=qfix_env,
                              capture_output=True, text=True, timeout=120)
        return json.loads(proc.stdout)

    vllm.script(*fix_replies())
    assert dry_run()["diffs"] and thinking() == 1
    vllm.script(*fix_replies(with_plan=False))
    again = dry_run()
    assert again["model"]["cache_hit"] and thinking() == 1  # the plan replayed
    vllm.script(*fix_replies())
    fresh = dry_run("--no-cache")
    assert not fresh["model"]["cache_hit"] and thinking() == 2 and fresh["diffs"]
