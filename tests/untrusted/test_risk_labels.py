"""Destructive forms the risk labeller knew elsewhere but missed (issue 35, item 8), as qfix reports
a suggested command: each is destructive, with its reason, and a harmless neighbour is not."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.qfix.helpers import QFIX, suggestion_replies

DESTRUCTIVE = {
    "> settings.py": "empties the file",
    ": > ~/.bashrc": "empties the file",
    "crontab /dev/null": "replaces every scheduled job",
    "git config core.fsmonitor 'touch pwned'": "makes git run a command",
    "git config --global core.hooksPath /tmp/hooks": "makes git run a command",
    "rsync -a --delete src/ backup/": "rsync --delete",
    "alias ls='rm -rf ~'": "rm with -r/-f",
    "history -c": "deletes the shell history",
    "echo 'rm -rf ~' | at now": "runs commands later",
    "kill -9 -1": "signals every process",
}


def suggested(repo, qfix_env, vllm, command: str) -> dict:
    vllm.script(*suggestion_replies(command))
    run = subprocess.run([QFIX, "--json", "--", "python", "script.py"], cwd=repo, env=qfix_env,
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    [suggestion] = json.loads(run.stdout)["suggestions"]
    assert suggestion["command"] == command
    return suggestion


@pytest.mark.parametrize("command", DESTRUCTIVE)
def test_destructive_forms_are_labelled_destructive(repo, qfix_env, vllm, command):
    suggestion = suggested(repo, qfix_env, vllm, command)
    assert suggestion["risk"] == "destructive" and any(DESTRUCTIVE[command] in d for d in suggestion["dangers"]), suggestion


@pytest.mark.parametrize("command", ["echo done > build.log", "git config user.name me", "kill -9 1234", "alias ll='ls -l'"])
def test_their_harmless_neighbours_are_not(repo, qfix_env, vllm, command):
    assert suggested(repo, qfix_env, vllm, command)["risk"] != "destructive"
