"""What a qfix user notices: Ctrl-C at the re-run question, no text meant for the model on screen,
a server that is down said before the command's end, --json outcome and verification, --version."""

from __future__ import annotations

import json
import subprocess

from qwen_lsp import __version__
from tests.net import closed_port_url
from tests.qfix.helpers import BUGGY, PLAN, QFIX, finish, fix_replies, spawn, write_record
from tests.vllm_double import Reply


def test_ctrl_c_at_the_rerun_question_cancels_cleanly_and_says_why_it_asked(repo, qfix_env, vllm):
    vllm.script(*fix_replies())
    env = write_record(repo, qfix_env, "python script.py", 1)
    child = spawn([], env, repo)
    child.expect_exact("recorded the command but not its output (inside tmux, qfix would read it from the screen)")
    child.expect_exact("to see its output? [y/N]")
    child.sendintr()
    child.expect_exact("cancelled: nothing was changed")
    assert finish(child) == 130
    assert "Traceback" not in child.before
    assert vllm.chat_requests() == [] and (repo / "script.py").read_text() == BUGGY


def test_no_fix_found_shows_no_model_summary_and_no_engine_words(repo, qfix_env, vllm):
    vllm.script(Reply(reasoning="hm", content=json.dumps(PLAN)),
                *[Reply(tool_calls=[("finish", {"summary": "Fixed the typo in greet()."})])] * 2)
    child = spawn(["--", "python", "script.py"], qfix_env, repo)
    child.expect_exact("no fix found: the model gave up without making the edits its plan named")
    assert finish(child) == 1
    shown = child.before
    assert "Fixed the typo" not in shown and "(gave_up)" not in shown and "gave_up" not in shown


def test_a_rejected_fix_shows_what_failed_not_the_message_to_the_model(repo, qfix_env, vllm):
    wrong = ("edit_file", {"path": "script.py", "old_string": '"Hello, " + nme', "new_string": '"Hello, " + nmee'})
    vllm.script(Reply(reasoning="typo", content=json.dumps(PLAN)),
                Reply(tool_calls=[wrong, ("finish", {"summary": "Fixed it."})]),
                Reply(tool_calls=[("finish", {"summary": "Fixed it, really."})]),
                Reply(reasoning="the same failure twice: plan again", content=json.dumps(PLAN)))
    child = spawn(["--", "python", "script.py"], {**qfix_env, "QWEN_LSP_MAX_ROUNDS": "2"}, repo)
    child.expect_exact("no fix found: the model's change did not pass its checks")
    assert finish(child) == 1
    assert "call finish again" not in child.before and "Validation FAILED" not in child.before
    assert "Fixed it" not in child.before
    assert (repo / "script.py").read_text() == BUGGY


def test_a_server_that_is_down_is_said_while_the_command_still_runs(repo, qfix_env):
    (repo / "slow.py").write_text("import time\ntime.sleep(60)\nraise SystemExit(1)\n")
    env = {**qfix_env, "QWEN_LSP_BASE_URL": closed_port_url()}
    child = spawn(["--", "python", "slow.py"], env, repo)
    child.expect_exact("Cannot reach the model server")  # long before the command's minute is up
    child.sendintr()  # the user, told, stops the command
    assert finish(child) == 130


def test_a_recorded_failure_with_the_server_down_exits_2_without_asking_to_rerun(repo, qfix_env):
    env = {**write_record(repo, qfix_env, "python script.py", 1), "QWEN_LSP_BASE_URL": closed_port_url()}
    run = subprocess.run([QFIX, "--json"], cwd=repo, env=env, capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert run.returncode == 2
    assert run.stderr.count("Cannot reach the model server") == 1 and "Re-run" not in run.stdout + run.stderr
    assert json.loads(run.stdout)["outcome"] == "error"


def test_json_dry_run_is_proposed_not_fixed_and_reports_the_check_that_ran(repo, qfix_env, vllm):
    vllm.script(*fix_replies())
    run = subprocess.run([QFIX, "--json", "--dry-run", "--", "python", "script.py"], cwd=repo, env=qfix_env,
                         capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    report = json.loads(run.stdout)
    assert run.returncode == 0 and not report["applied"]
    assert report["outcome"] == "proposed" and report["engine_outcome"] == "fixed"
    assert report["verification"] == {"command": "python script.py", "exit_code": None, "passed": True,
                                      "in_temporary_copy": True}
    assert (repo / "script.py").read_text() == BUGGY


def test_every_command_has_version_and_qfix_help_lists_exit_codes(qfix_env):
    bin_dir = QFIX.rsplit("/", 1)[0]
    for command in ("qfix", "qwen-review", "qwen-lsp"):
        out = subprocess.run([f"{bin_dir}/{command}", "--version"], env=qfix_env, capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0 and out.stdout.strip() == f"{command} {__version__}", (command, out)
    usage = subprocess.run([QFIX, "--help"], env=qfix_env, capture_output=True, text=True, timeout=60).stdout
    assert "Exit codes: 0 fixed" in " ".join(usage.split()) and "130 cancelled" in " ".join(usage.split())
