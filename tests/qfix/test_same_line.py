"""`cmd || qfix` and `cmd; qfix`: qfix on the same line as the command it is to fix. The hook records a
line only once it has finished, so qfix must take the command from the line itself (same_line.py), or
refuse, saying why, when it cannot tell which command failed. Real bash, zsh and fish under a pty."""

from __future__ import annotations

import pytest

from terminal_agent.same_line import Refused, SameLine, decide, split_list
from tests.qfix.helpers import QFIX, Shell, record_of


@pytest.mark.parametrize(("line", "shell", "expected"), [
    ("pytest -q tests || qfix", "bash", SameLine("pytest -q tests", 1)),
    ("make; qfix --dry-run", "zsh", SameLine("make", 1)),
    ("python3 -c 'import a; a.b()' 2>&1 | tee log || qfix", "bash", SameLine("python3 -c 'import a; a.b()' 2>&1 | tee log", 1)),
    ("make; or qfix", "fish", SameLine("make", 1)),
    ("FOO=1 make || /usr/local/bin/qfix -y", "bash", SameLine("FOO=1 make", 1)),
    ("qfix", "bash", None),  # qfix first: the shell's record of the line before is the one
    ("qfix -- make", "bash", None),
])
def test_the_command_before_qfix_on_its_line(line, shell, expected):
    assert decide(line, 1, shell) == expected


@pytest.mark.parametrize("line", ["cd src; make || qfix", "make & qfix", "time qfix; true", "cat <<EOF\nx\nEOF\nqfix"])
def test_a_line_where_the_failure_cannot_be_told_is_refused(line):
    assert isinstance(decide(line, 1, "bash"), Refused)


def test_the_line_is_split_outside_quotes_and_substitutions():
    assert split_list("""echo "a; b" 'c || d' $(e; f) 2>&1 && g # h; i""") == [
        ("""echo "a; b" 'c || d' $(e; f) 2>&1""", "&&"), ("g", "")]


LINES = {  # (failing line, passing line, ambiguous line) per shell
    "bash": ("python script.py || {q}", "echo ok; {q}", "true; python script.py || {q}"),
    "zsh": ("python script.py || {q}", "echo ok; {q}", "true; python script.py || {q}"),
    "fish": ("python script.py; or {q}", "echo ok; {q}", "true; python script.py; or {q}"),
}


@pytest.mark.parametrize("shell_name", ["bash", "zsh", "fish"])
def test_qfix_after_a_failure_on_the_same_line_fixes_that_failure(shell_name, repo, qfix_env, shells):
    sh = Shell(shell_name, qfix_env, repo)
    shells.append(sh)
    failing, passing, ambiguous = (line.format(q="qfix") for line in LINES[shell_name])
    sh.run("true")  # the line before: a success ("`true` succeeded: nothing to fix" was the bug)

    sh.child.sendline(failing)
    sh.child.expect_exact("Re-run `python script.py` to see its output? [y/N]")  # this line's failure
    sh.child.sendintr()
    sh.expect_prompt()
    record = record_of(repo.parent / "state")
    assert (record["command"], record["exit_code"]) == ("python script.py", 1)  # what a later `qfix` sees

    out = sh.run(passing)
    assert "`echo ok` succeeded: nothing to fix" in out and sh.status() == 0

    out = sh.run(ambiguous)
    assert "cannot tell which one failed" in out and "qfix on a line of its own" in out
    assert record_of(repo.parent / "state")["command"].startswith("echo status=")  # nothing guessed or recorded
    assert sh.status() == 2
