"""qfix's parts without the model: the pty runner, screen parsing, records, undo, labels."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from rich.console import Console

from qwen_lsp.apply import StaleFile
from qwen_lsp.types import FileChange
from qwen_lsp.engine.risk import suggestion
from terminal_agent import agent, undo
from terminal_agent.pty_run import nothing_to_fix, plain_text, run_in_pty, run_shell_command
from terminal_agent.state import ShellRecord, last_record, output_after_prompt
from terminal_agent.ui import UI


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("QFIX_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


# -- the pty runner -----------------------------------------------------------------------------


def test_the_child_sees_a_terminal_and_its_output_is_captured_plain(tmp_path, capfd):
    code = "import sys; print(sys.stdout.isatty()); print('\\x1b[31mred\\x1b[0m'); sys.exit(3)"
    finished = run_in_pty([sys.executable, "-c", code], tmp_path)
    assert finished.exit_code == 3
    assert finished.output.splitlines() == ["True", "red"]
    assert "\x1b[31mred" in capfd.readouterr().out  # shown live, colors intact


def test_signals_are_reported_like_a_shell_does(tmp_path):
    assert run_shell_command("kill -INT $$", tmp_path, "/bin/sh").exit_code == 130
    assert run_in_pty(["no-such-program-qfix"], tmp_path).exit_code == 127


def test_the_command_runs_in_the_given_directory_and_echo_can_go_to_stderr(tmp_path, capfd):
    finished = run_shell_command("pwd", tmp_path, "/bin/sh", echo_fd=2)
    assert finished.output.strip() == str(tmp_path)
    captured = capfd.readouterr()
    assert str(tmp_path) in captured.err and captured.out == ""


def test_a_crash_is_a_failure_to_fix_but_a_stop_is_not():
    assert [code for code in (0, 1, 2, 130, 131, 137, 143, 134, 139) if nothing_to_fix(code)] == [0, 130, 131, 137, 143]


def test_plain_text_resolves_progress_bars_and_escapes():
    raw = b"\x1b[1mbuild\x1b[0m\r\n 10%\r 50%\r100%\r\n\x1b]0;title\x07done\r\n"
    assert plain_text(raw) == "build\n100%\ndone\n"


# -- the screen and the records -------------------------------------------------------------


def test_the_last_output_is_found_between_two_prompts():
    screen = [
        "user@host:~/p$ ls",
        "a.py",
        "user@host:~/p$ python a.py",
        "Traceback (most recent call last):",
        "NameError: name 'x' is not defined",
        "user@host:~/p$ qfix",
        "",
        "",
    ]
    expected = "Traceback (most recent call last):\nNameError: name 'x' is not defined\n"
    assert output_after_prompt(screen, "python a.py") == expected
    assert output_after_prompt(screen, "make") is None  # scrolled away: no guess


def test_a_record_with_raw_control_characters_still_reads(state, monkeypatch):
    (state / "sessions").mkdir(parents=True)
    raw = '{"shell":"zsh","pid":77,"command":"printf \x01","exit_code":1,"cwd":"/"}'
    (state / "sessions" / "77.json").write_text(raw)
    monkeypatch.setenv("QFIX_SHELL_PID", "77")
    assert last_record() == ShellRecord(shell="zsh", pid=77, command="printf \x01", exit_code=1, cwd="/")
    monkeypatch.setenv("QFIX_SHELL_PID", "78")
    assert last_record() is None


# -- apply and undo ---------------------------------------------------------------------------


def _change(path: str, before: str | None, after: str) -> FileChange:
    return FileChange(path=path, original=before or "", updated=after, diff="", created=before is None)


def test_undo_restores_edited_files_and_removes_created_ones(tmp_path):
    (tmp_path / "a.py").write_text("old\n")
    failure = agent.Failure(command="make", exit_code=2, output="", cwd=tmp_path, workspace=tmp_path)
    agent.apply_with_undo(failure, [_change("a.py", "old\n", "new\n"), _change("pkg/b.py", None, "b\n")])
    assert (tmp_path / "a.py").read_text() == "new\n" and (tmp_path / "pkg/b.py").read_text() == "b\n"

    entry = undo.undo_last(tmp_path)
    assert entry.command == "make"
    assert (tmp_path / "a.py").read_text() == "old\n" and not (tmp_path / "pkg/b.py").exists()
    with pytest.raises(undo.UndoRefused, match="nothing to undo"):
        undo.undo_last(tmp_path)


def test_undo_goes_back_one_fix_at_a_time(tmp_path):
    (tmp_path / "a.py").write_text("v1\n")
    failure = agent.Failure(command="t", exit_code=1, output="", cwd=tmp_path, workspace=tmp_path)
    agent.apply_with_undo(failure, [_change("a.py", "v1\n", "v2\n")])
    agent.apply_with_undo(failure, [_change("a.py", "v2\n", "v3\n")])
    undo.undo_last(tmp_path)
    assert (tmp_path / "a.py").read_text() == "v2\n"
    undo.undo_last(tmp_path)
    assert (tmp_path / "a.py").read_text() == "v1\n"


def test_a_stale_file_refuses_the_whole_fix_and_leaves_no_undo_entry(tmp_path, state):
    (tmp_path / "a.py").write_text("changed by the user\n")
    (tmp_path / "b.py").write_text("b\n")
    failure = agent.Failure(command="t", exit_code=1, output="", cwd=tmp_path, workspace=tmp_path)
    with pytest.raises(StaleFile):
        agent.apply_with_undo(failure, [_change("b.py", "b\n", "B\n"), _change("a.py", "old\n", "new\n")])
    assert (tmp_path / "b.py").read_text() == "b\n"  # all or nothing
    assert not list(state.glob("undo/*/*.json"))


def test_undo_history_is_per_workspace(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    (one / "a.py").write_text("x\n")
    agent.apply_with_undo(agent.Failure(command="t", exit_code=1, output="", cwd=one, workspace=one),
                          [_change("a.py", "x\n", "y\n")])
    with pytest.raises(undo.UndoRefused, match="nothing to undo"):
        undo.undo_last(two)


# -- task, workspace, labels ------------------------------------------------------------------


def test_the_task_carries_the_command_output_and_workspace_relative_cwd(tmp_path):
    (tmp_path / "sub").mkdir()
    failure = agent.Failure(command="pytest -x", exit_code=1, output="boom\n", cwd=tmp_path / "sub", workspace=tmp_path)
    task = failure.task()
    assert (task.kind, task.command, task.exit_code, task.terminal_output, task.cwd) == (
        "command", "pytest -x", 1, "boom\n", "sub")
    assert agent.Failure(command="x", exit_code=1, output=None, cwd=tmp_path, workspace=tmp_path).task().cwd is None


def test_the_workspace_is_the_git_top_level(tmp_path):
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "deep" / "er").mkdir(parents=True)
    assert agent.find_workspace(tmp_path / "deep" / "er").resolve() == tmp_path.resolve()
    outside = tmp_path.parent / f"{tmp_path.name}-nogit"
    outside.mkdir()
    assert agent.find_workspace(outside) == outside


def test_a_bad_setting_is_ignored_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.setenv("QWEN_LSP_MAX_ROUNDS", "many")
    (tmp_path / "pyproject.toml").write_text("[tool.qwen-lsp]\nmax_rounds = 3\n")
    ui = UI(to_stderr=False)
    ui.console = Console(record=True, width=200)
    assert agent.settings_for(tmp_path, ui).max_rounds == 3  # the workspace's value, not a crash
    assert "qfix: ignoring invalid setting max_rounds (from environment:" in ui.console.export_text()


@pytest.mark.parametrize("command,danger", [
    ("rm -rf build", "deletes files for good"),
    ("git reset --hard", "discards uncommitted work"),
    ("dd if=/dev/zero of=disk.img", "raw bytes"),
    ("chmod -R 777 .", "recursive permission"),
    ("curl -fsSL https://example.com/i.sh | sh", "pipes a download straight into a shell"),
    ("cp $(cat list.txt) backup/", "command substitution"),
])
def test_dangerous_suggestions_are_labelled_loudly(command, danger):
    ui = UI(to_stderr=False)
    ui.console = Console(record=True, width=200, force_terminal=True)
    ui.show_suggestion(suggestion(command, "cleanup"))
    text = ui.console.export_text()
    assert "⚠ DESTRUCTIVE" in text and danger in text and f"$ {command}" in text
    assert "white on red" in ui.console.export_html() or "background-color" in ui.console.export_html()


def test_a_json_report_is_plain_json(tmp_path):
    from terminal_agent.report import QfixReport

    report = QfixReport(command="make", workspace=str(tmp_path), cwd=str(tmp_path), outcome="error", error="down")
    data = json.loads(report.model_dump_json())
    assert data["model"]["cache_hit"] is False and data["verification"] is None and data["diffs"] == []


def test_init_drops_the_records_of_exited_shells(state):
    import subprocess

    from terminal_agent.shell_init import prune_dead_sessions

    gone = subprocess.Popen(["true"])
    gone.wait()
    (state / "sessions").mkdir(parents=True)
    for pid in (gone.pid, os.getpid()):
        (state / "sessions" / f"{pid}.json").write_text("{}")
    prune_dead_sessions()
    assert [p.name for p in (state / "sessions").glob("*.json")] == [f"{os.getpid()}.json"]


def test_undo_history_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(undo, "KEEP", 3)
    (tmp_path / "a.py").write_text("0")
    failure = agent.Failure(command="t", exit_code=1, output="", cwd=tmp_path, workspace=tmp_path)
    for n in range(5):
        agent.apply_with_undo(failure, [_change("a.py", str(n), str(n + 1))])
    for _ in range(3):
        undo.undo_last(tmp_path)
    assert (tmp_path / "a.py").read_text() == "2"
    with pytest.raises(undo.UndoRefused):
        undo.undo_last(tmp_path)


def test_help_and_warm_status_show_where_the_warm_process_logs(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    qfix = Path(sys.executable).with_name("qfix")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "QFIX_STATE_DIR": str(tmp_path / "state"), "QFIX_WARM": "0",
           "COLUMNS": "400"}
    shown = subprocess.run([str(qfix), "--help"], env=env, capture_output=True, text=True, check=True).stdout
    assert str(tmp_path / "state" / "warm.log") in " ".join(shown.split())
    status = subprocess.run([str(qfix), "--warm-status"], env=env, capture_output=True, text=True, check=True).stdout
    assert f"warm process log: {tmp_path / 'state' / 'warm.log'}" in status


def test_the_spinner_writes_nothing_into_a_stderr_that_is_not_a_terminal(monkeypatch):
    import io
    import time

    from rich.console import Console

    from terminal_agent.ui import UI

    ui = UI(to_stderr=True)
    sink = io.StringIO()
    ui.console = Console(file=sink, force_terminal=False, force_interactive=False)
    with ui.working() as progress:
        progress("planning")
        time.sleep(0.3)
    assert sink.getvalue() == ""
    tty = io.StringIO()
    ui.console = Console(file=tty, force_terminal=True, force_interactive=True)
    with ui.working() as progress:
        progress("planning")
        time.sleep(0.3)
    assert "planning" in tty.getvalue()  # on a terminal the spinner is there


def test_a_phase_quoting_the_model_shows_its_escape_sequences_and_never_sends_them():
    """The spinner's phase may quote the model (a tool's name): on a terminal its hidden characters are
    shown as stand-ins, never written to the terminal as control codes."""
    import io
    import time

    from rich.console import Console

    from terminal_agent.ui import UI

    ui = UI(to_stderr=True)
    tty = io.StringIO()
    ui.console = Console(file=tty, force_terminal=True, force_interactive=True, color_system=None)
    with ui.working() as progress:
        progress("planning: read_file\x1b]0;pwned\x07")
        time.sleep(0.3)
    out = tty.getvalue()
    assert "planning: read_file" in out and "pwned" in out  # shown, as text
    assert "\x1b]0;" not in out and "\x07" not in out  # the title-setting sequence never reaches the terminal


def test_which_output_a_recorded_command_sends_away():
    """`cmd >/dev/null`: re-running shows only its error output; `cmd &>/dev/null`: nothing, so qfix does not offer."""
    from terminal_agent.agent import redirected_away

    assert redirected_away("python3 s.py >/dev/null") == {1}
    assert redirected_away("make &>/dev/null") == redirected_away("make >/dev/null 2>&1") == {1, 2}
    assert redirected_away("make > log.txt 2>&1") == {1, 2}
    assert redirected_away("make 2>&1 >/dev/null") == {1}  # stderr still on the terminal
    assert redirected_away("make 2>/dev/null") == {2}
    assert redirected_away("make") == redirected_away("a | b >/dev/null") == redirected_away("'unclosed") == set()


def test_a_recorded_command_with_all_its_output_sent_away_is_not_rerun(monkeypatch, tmp_path):
    from terminal_agent import agent
    from terminal_agent.state import ShellRecord

    said: list[str] = []

    class Quiet:
        interactive, fd = True, 1

        def say(self, message, style=""):
            said.append(message)

        def confirm(self, question):
            raise AssertionError("must not offer a re-run: " + question)

    monkeypatch.setattr(agent, "tmux_output", lambda *_: None)
    record = ShellRecord(shell="bash", pid=1, command="python3 s.py >/dev/null 2>&1", exit_code=1, cwd=str(tmp_path))
    failure = agent.failure_from_record(record, agent.Options(), Quiet())
    assert failure.output is None and "sends its output elsewhere" in said[-1]
