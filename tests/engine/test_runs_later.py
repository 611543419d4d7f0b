"""The pure classification of files that run later, and of what git's configuration runs."""

from __future__ import annotations

import pytest

from qwen_lsp.engine.runs_later import ConfigEntry, executed_paths, listing, runs_later_reason, subjects
from qwen_lsp.types import FileChange, Task

ROOT = "/home/u/proj"


def test_git_config_decides_what_git_runs_in_the_workspace():
    entries = [
        ConfigEntry("file:.git/config", "core.hookspath", ".husky/_"),
        ConfigEntry("file:.git/config", "include.path", "../config/git.inc"),
        ConfigEntry("file:/home/u/.gitconfig", "includeif.gitdir:~/proj/.path", "/home/u/proj/tools/extra.cfg"),
        ConfigEntry("file:.git/../config/git.inc", "core.fsmonitor", "scripts/fsmonitor.sh"),
        ConfigEntry("file:.git/config", "filter.lfs.clean", "git-lfs clean -- %f"),
        ConfigEntry("file:.git/config", "filter.crypt.smudge", "python tools/smudge.py %f"),
        ConfigEntry("file:.git/config", "alias.st", "status"),
        ConfigEntry("file:.git/config", "alias.x", "!./bin/x.sh"),
        ConfigEntry("file:.git/config", "core.fsmonitor", "true"),
        ConfigEntry("file:.git/config", "include.path", "~/shared.cfg"),
        ConfigEntry("file:.git/config", "core.pager", "/usr/bin/less"),
        ConfigEntry("file:.git/config", "include.path", "../../outside.cfg"),
    ]
    assert executed_paths(ROOT, entries) == {
        ".gitmodules": "git clones and checks out what it names",
        ".husky/_": "git runs the hooks in it (core.hooksPath)",
        "config/git.inc": "git reads it as configuration (included by .git/config)",
        "tools/extra.cfg": "git reads it as configuration (included by /home/u/.gitconfig)",
        "scripts/fsmonitor.sh": "git runs it (core.fsmonitor)",
        "tools/smudge.py": "git runs it (filter.crypt.smudge)",
        "bin/x.sh": "git runs it (alias.x)",
    }


@pytest.mark.parametrize(("path", "why"), [
    (".pre-commit-config.yaml", "pre-commit"), (".husky/pre-commit", "husky"), ("lefthook.yml", "lefthook"),
    (".overcommit.yml", "overcommit"), (".vscode/settings.json", "VS Code"), (".vscode/tasks.json", "tasks"),
    (".vscode/launch.json", "launch"), (".idea/runConfigurations/x.xml", "IDE"), (".envrc", "direnv"),
    (".github/workflows/ci.yml", "CI"), (".gitlab-ci.yml", "CI"), (".npmrc", "npm"), (".cargo/config.toml", "cargo"),
    ("src/sitecustomize.py", "every start"), ("usercustomize.py", "every start"), ("Makefile", "make"),
    ("sub/rules.mk", "make"), ("proj.code-workspace", "VS Code"),
])
def test_files_that_run_later(path, why):
    assert why in (runs_later_reason(path, "a", "b") or "")


@pytest.mark.parametrize("path", ["calc.py", "README.md", "vscode/settings.json", "src/Makefile.py", ".env"])
def test_ordinary_files_do_not(path):
    assert runs_later_reason(path, "a", "b") is None


def test_a_makefile_or_package_scripts_that_the_fix_is_about_is_no_side_effect():
    make = Task.for_command("make -C . test", 2, "", None)
    assert "Makefile" in subjects(make) and runs_later_reason("Makefile", "a", "b", subjects(make)) is None
    assert runs_later_reason("Makefile", "a", "b", subjects(Task.for_command("pytest", 1, "", None))) == "make runs its recipes"
    before = '{"name": "x", "scripts": {"test": "jest"}, "dependencies": {}}'
    deps = '{"name": "x", "scripts": {"test": "jest"}, "dependencies": {"a": "1"}}'
    script = '{"name": "x", "scripts": {"test": "jest", "postinstall": "curl x | sh"}}'
    assert runs_later_reason("package.json", before, deps) is None  # dependencies are not scripts
    assert runs_later_reason("package.json", before, script) == "npm runs its scripts, some on install"
    assert runs_later_reason("package.json", before, script, subjects(Task.for_command("npm test", 1, "", None))) is None


def test_the_listing_names_each_file_once_with_why_and_the_ignored_ones():
    changes = [FileChange(path=p, original="", updated="x", diff="", created=True)
               for p in ["calc.py", ".envrc", ".env"]]
    shown = listing(changes, set(), {".env"})
    assert shown.runs_later == [".envrc (direnv runs it on cd)"] and shown.not_tracked == [".env"]


def test_hook_and_driver_paths_are_relative_to_the_top_of_the_work_tree():
    """A workspace folder below the repository's top: git runs hooks and drivers from the top."""
    entries = [ConfigEntry("file:/home/u/proj/.git/config", "core.hookspath", "sub/hooks"),
               ConfigEntry("file:/home/u/proj/.git/config", "filter.x.clean", "sub/tools/clean.sh")]
    assert executed_paths(ROOT + "/sub", entries, top=ROOT) == {
        ".gitmodules": "git clones and checks out what it names",
        "hooks": "git runs the hooks in it (core.hooksPath)",
        "tools/clean.sh": "git runs it (filter.x.clean)",
    }
