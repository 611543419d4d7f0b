"""qfix's questions, driven in a pty: nothing is written before the user agrees, files
changed meanwhile are never overwritten, dangerous suggestions need an explicit yes,
Ctrl-C cancels cleanly."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from tests.qfix.helpers import BUGGY, FIXED, PLAN, QFIX, finish, fix_replies, spawn, suggestion_replies, write_record
from tests.vllm_double import Reply

ASK = "[a]pply / [s]kip / [e]dit command / [q]uit"


def undo_entries(repo) -> list:
    return list((repo.parent / "state").glob("undo/*/*.json"))


@pytest.mark.parametrize("answer", ["s", "q"])
def test_skip_or_quit_writes_nothing(answer, repo, qfix_env, vllm):
    vllm.script(*fix_replies())
    child = spawn(["--", "python", "script.py"], qfix_env, repo)
    child.expect_exact("Apply the changes to 1 file(s)? " + ASK)
    child.sendline(answer)
    assert finish(child) == 1
    assert (repo / "script.py").read_text() == BUGGY and not undo_entries(repo)


def test_apply_writes_reruns_and_reports(repo, qfix_env, vllm):
    vllm.script(*fix_replies())
    child = spawn(["--", "python", "script.py"], qfix_env, repo)
    child.expect_exact("Cause: greet() uses the undefined name nme")  # the plan
    child.expect_exact("\x1b[32m+    return \"Hello, \" + name")  # a colored diff
    child.expect_exact(ASK)
    assert (repo / "script.py").read_text() == BUGGY  # nothing written while asking
    child.sendline("a")
    child.expect_exact("Hello, world")
    child.expect_exact("passes now")
    assert finish(child) == 0
    assert (repo / "script.py").read_text() == FIXED and len(undo_entries(repo)) == 1


def test_edit_changes_the_command_that_verifies(repo, qfix_env, vllm):
    vllm.script(*fix_replies())
    child = spawn(["--", "python", "script.py"], qfix_env, repo)
    child.expect_exact(ASK)
    child.sendline("e")
    child.expect_exact("Re-run to verify: ")
    child.send("\x15")  # Ctrl-U: clear the pre-filled line
    child.sendline("python script.py && echo verified-by-edit")
    child.expect_exact(ASK)
    child.sendline("a")
    child.expect_exact("verified-by-edit\r\n")
    assert finish(child) == 0


def test_a_file_changed_while_asking_is_not_overwritten(repo, qfix_env, vllm):
    vllm.script(*fix_replies())
    child = spawn(["--", "python", "script.py"], qfix_env, repo)
    child.expect_exact(ASK)
    mine = BUGGY + "# my edit\n"
    (repo / "script.py").write_text(mine)
    child.sendline("a")
    child.expect_exact("not applied: changed since the fix was computed, not overwritten: script.py")
    assert finish(child) == 1
    assert (repo / "script.py").read_text() == mine and not undo_entries(repo)


def test_undo_refuses_when_the_file_changed_after_the_fix(repo, qfix_env, vllm):
    vllm.script(*fix_replies())
    child = spawn(["--yes", "--", "python", "script.py"], qfix_env, repo)
    assert finish(child) == 0
    later = FIXED + "# edited after the fix\n"
    (repo / "script.py").write_text(later)
    undo = spawn(["--undo"], qfix_env, repo)
    undo.expect_exact("not undone: script.py changed after the fix for `python script.py` was applied")
    assert finish(undo) == 1
    assert (repo / "script.py").read_text() == later and len(undo_entries(repo)) == 1


def test_a_dangerous_suggestion_is_labelled_and_needs_an_explicit_yes(repo, qfix_env, vllm, tmp_path):
    """(every danger's label: test_units.py)"""
    command, danger = "rm -rf build", "rm with -r/-f deletes files for good"
    buffer = tmp_path / "buffer"
    vllm.script(*suggestion_replies(command, "clean up"))
    child = spawn(["--", "python", "script.py"], {**qfix_env, "QFIX_BUFFER_FILE": str(buffer)}, repo)
    child.expect_exact("⚠ DESTRUCTIVE")
    child.expect_exact(danger)
    child.expect_exact(ASK)
    child.sendline("a")
    child.expect_exact("Type 'yes' to accept it:")
    child.sendline("y")  # not explicit enough
    assert finish(child) == 1
    assert not buffer.exists()

    vllm.script(*suggestion_replies(command, "clean up"))
    child = spawn(["--", "python", "script.py"], {**qfix_env, "QFIX_BUFFER_FILE": str(buffer)}, repo)
    child.expect_exact(ASK)
    child.sendline("a")
    child.expect_exact("Type 'yes' to accept it:")
    child.sendline("yes")
    assert finish(child) == 0
    assert buffer.read_text() == command  # for the shell's command line; qfix ran nothing


def test_an_edited_suggestion_is_labelled_again(repo, qfix_env, vllm, tmp_path):
    buffer = tmp_path / "buffer"
    vllm.script(*suggestion_replies("ls build", "look"))
    child = spawn(["--", "python", "script.py"], {**qfix_env, "QFIX_BUFFER_FILE": str(buffer)}, repo)
    child.expect_exact("READ-ONLY")
    child.expect_exact(ASK)
    child.sendline("e")
    child.expect_exact("Command: ")
    child.send("\x15")
    child.sendline("rm -rf build")
    child.expect_exact("⚠ DESTRUCTIVE")
    child.expect_exact(ASK)
    child.sendline("a")
    child.expect_exact("Type 'yes' to accept it:")
    child.sendline("")
    assert finish(child) == 1 and not buffer.exists()


def test_without_the_shell_function_a_suggestion_is_printed_not_run(repo, qfix_env, vllm):
    vllm.script(*suggestion_replies("echo ran > marker.txt"))
    child = spawn(["--", "python", "script.py"], qfix_env, repo)
    child.expect_exact(ASK)
    child.sendline("a")
    child.expect_exact("Run it yourself:  echo ran > marker.txt")
    assert finish(child) == 0
    assert not (repo / "marker.txt").exists()


def test_yes_never_runs_or_hands_over_a_suggestion(repo, qfix_env, vllm, tmp_path):
    buffer = tmp_path / "buffer"
    vllm.script(*suggestion_replies("echo ran > marker.txt"))
    child = spawn(["--yes", "--", "python", "script.py"], {**qfix_env, "QFIX_BUFFER_FILE": str(buffer)}, repo)
    child.expect_exact("never run with --yes")
    assert finish(child) == 1  # nothing was fixed
    assert not (repo / "marker.txt").exists() and not buffer.exists()


def test_ctrl_c_while_the_model_works_cancels_and_changes_nothing(repo, qfix_env, vllm):
    slow_plan = Reply(reasoning="thinking hard " * 60, content=json.dumps(PLAN), chunk_delay=0.2)
    vllm.script(slow_plan, *fix_replies(with_plan=False))
    child = spawn(["--", "python", "script.py"], qfix_env, repo)
    child.expect_exact("planning")  # the spinner shows the phase
    child.expect(r"\d+s")  # and the elapsed time
    child.sendintr()
    child.expect_exact("cancelled: nothing was changed")
    assert finish(child) == 130
    assert (repo / "script.py").read_text() == BUGGY and not undo_entries(repo)


def test_ctrl_c_at_the_question_changes_nothing(repo, qfix_env, vllm):
    vllm.script(*fix_replies())
    child = spawn(["--", "python", "script.py"], qfix_env, repo)
    child.expect_exact(ASK)
    child.sendintr()
    child.expect_exact("cancelled: nothing was changed")
    assert finish(child) == 130
    assert (repo / "script.py").read_text() == BUGGY


def test_a_command_that_passes_needs_no_fix_and_its_exit_code_is_mirrored(repo, qfix_env, vllm):
    started = time.monotonic()
    child = spawn(["--", "python", "-c", "print('fine')"], qfix_env, repo)
    child.expect_exact("fine")
    assert finish(child) == 0
    assert time.monotonic() - started < 5  # a passing command does not wait for the engine to load
    report = subprocess.run([QFIX, "--json", "--", "true"], cwd=repo, env=qfix_env, capture_output=True, text=True)
    assert json.loads(report.stdout)["outcome"] == "passed" and report.returncode == 0
    interrupted = spawn(["--", "sh", "-c", "kill -TERM $$"], qfix_env, repo)
    assert finish(interrupted) == 128 + 15
    assert vllm.chat_requests() == []  # no model call for either


def test_a_destructive_recorded_command_is_never_rerun(repo, qfix_env, vllm):
    (repo / "build").mkdir()
    env = write_record(repo, qfix_env, "rm -rf build && python script.py", 1)
    vllm.script(*fix_replies())
    child = spawn(["--dry-run"], env, repo)
    child.expect_exact("qfix will not re-run it")
    assert finish(child) == 0
    assert (repo / "build").is_dir()
    assert "(the output was not captured)" in json.dumps(vllm.chat_requests()[0]["messages"])


def test_a_recorded_command_is_rerun_only_after_asking(repo, qfix_env, vllm):
    env = write_record(repo, qfix_env, "python script.py > ran.txt; python script.py", 1)
    vllm.script(*fix_replies())
    child = spawn(["--dry-run"], env, repo)
    child.expect_exact("Re-run `python script.py > ran.txt; python script.py` to see its output? [y/N]")
    assert not (repo / "ran.txt").exists()
    child.sendline("n")
    assert finish(child) == 0
    assert not (repo / "ran.txt").exists()


def test_a_recorded_success_needs_nothing(repo, qfix_env, vllm):
    env = write_record(repo, qfix_env, "python -c pass", 0)
    child = spawn([], env, repo)
    child.expect_exact("succeeded: nothing to fix")
    assert finish(child) == 0
    assert vllm.chat_requests() == []


def test_usage_errors_exit_2(repo, qfix_env):
    for args in (["--undo", "--yes"], ["--yes", "--dry-run", "--", "true"]):
        assert finish(spawn(args, qfix_env, repo)) == 2, args
    assert os.path.exists(repo / "script.py")
