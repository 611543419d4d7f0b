"""Issue 35's attack and fault classes (round 3), one small attempt each through the APIs qfix and the
language server use; `run_all` counts those that got nowhere. Only APIs that existed before the fixes
are used, so the same file counts an older checkout too (run it with that checkout first on sys.path).
The end-to-end forms are the tests named in each docstring."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path

CHECKS: list[Callable[[Path], bool]] = []


def check(fn: Callable[[Path], bool]) -> Callable[[Path], bool]:
    CHECKS.append(fn)
    return fn


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=root, check=True, capture_output=True)


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "a.py").write_text("x = 1\n")
    _git(path, "init", "-q")
    _git(path, "add", ".")
    _git(path, "commit", "-qm", "i")
    return path


@check
def state_folder_inside_a_workspace_is_protected(tmp: Path) -> bool:
    """1. A dotfiles workspace at $HOME holds qfix's state: the model may not write a journal there
    (tests/qfix/test_trust_state.py)."""
    from qwen_lsp.engine.protected import protected_reason

    home = tmp / "home"
    home.mkdir()
    saved = {k: os.environ.pop(k, None) for k in ("QFIX_STATE_DIR", "XDG_STATE_HOME", "XDG_CACHE_HOME")}
    os.environ["HOME"], old_home = str(home), os.environ.get("HOME")
    try:
        rels = [".local/state/qwen-lsp/journal/0123456789abcdef/journal.json",
                ".cache/qwen-lsp/tokenizer/qwen3_6-x.marshal", ".cache/qwen-lsp-build/llama-x/evil.whl"]
        return all(protected_reason(home, rel) is not None for rel in rels)
    finally:
        os.environ.update({k: v for k, v in saved.items() if v is not None})
        if old_home is not None:
            os.environ["HOME"] = old_home


@check
def a_planted_journal_writes_nothing_outside_its_workspace(tmp: Path) -> bool:
    """1. Recovery of a journal naming a target outside its workspace (tests/qfix/test_trust_state.py)."""
    from qwen_lsp.journal import Journal, JournalError, Target
    from terminal_agent import undo

    workspace, target = _repo(tmp / "ws"), tmp / "outside" / "run.sh"
    target.parent.mkdir()
    os.environ["QFIX_STATE_DIR"] = str(tmp / "state")
    folder = undo.journal_dir(workspace)
    folder.mkdir(parents=True)
    (folder / "journal.json").write_text(Journal(label="x", root=str(workspace.resolve()), made_dirs=[], targets=[
        Target(shown="run.sh", path=str(target), old=b"#!/bin/sh\n", mode=0o755, new_sha256=None,
               temp=str(target.with_name(".run.sh.0.qwen-tmp")))]).model_dump_json())
    try:
        undo.recover(workspace)
    except JournalError:
        pass
    return not target.exists()


@check
def a_document_outside_every_folder_is_not_mapped_into_one(tmp: Path) -> bool:
    """2. Ask/Fix on /elsewhere/app.py mapped to <folder>/app.py (tests/lsp/test_outside_folders.py): the
    server's folders either refuse it or give it a root that holds it."""
    from types import SimpleNamespace

    from qwen_lsp.lsp.workspace import Folders

    server = SimpleNamespace(workspace=SimpleNamespace(folders={"p": SimpleNamespace(uri=f"file://{tmp}/proj")},
                                                       root_path=None))
    folders = Folders(server)  # type: ignore[arg-type]
    path = tmp / "elsewhere" / "app.py"
    if getattr(folders, "outside", lambda _p: None)(path):
        return True
    root, rel = folders.place(path)
    return (root / rel) == path


@check
def read_file_of_a_huge_file_is_bounded(tmp: Path) -> bool:
    """3. read_file of a 768 MiB ignored file (tests/untrusted/test_big_files.py): under 200 MiB more memory."""
    from qwen_lsp.engine.overlay import Overlay
    from qwen_lsp.engine.tools import ToolBox

    root = tmp / "big"
    root.mkdir()
    with (root / "data.csv").open("wb") as fh:
        fh.write(b"a,b\n" * 5000)  # a text head longer than the binary sniff
        fh.truncate(768 * 2**20)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    answer = ToolBox(Overlay(root)).call("read_file", {"path": "data.csv"})
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    return grown_mib < 200 and "1|a,b" in answer


@check
def deeply_nested_arguments_are_malformed(tmp: Path) -> bool:
    """4. 200,000 nested arrays as a tool call's arguments (tests/untrusted/test_deep_arguments.py)."""
    from qwen_lsp.engine.loop import _drop_broken_calls
    from qwen_lsp.llm.client import Completion, ToolCall

    deep = "[" * 200_000 + "]" * 200_000
    reply = Completion(tool_calls=[ToolCall(id="1", name="read_file", arguments='{"path": "a.py"}'),
                                   ToolCall(id="2", name="read_file", arguments=deep)])
    try:
        broken = _drop_broken_calls(reply)
    except RecursionError:
        return False
    return [c.id for c in reply.tool_calls] == ["1"] and [c.id for c in broken] == ["2"]


@check
def a_latin1_byte_in_the_prompt_is_sent(tmp: Path) -> bool:
    """5. A surrogate-escaped byte (a latin-1 file via git) in a request (tests/untrusted/test_latin1_source.py)."""
    from qwen_lsp.llm.client import ModelClient
    from qwen_lsp.settings import Settings
    from tests.vllm_double import Reply, VLLMDouble

    with VLLMDouble() as double:
        double.script(Reply(content="ok"))
        client = ModelClient(Settings(base_url=double.base_url, cache_dir=tmp / "cache", max_retries=0))

        async def ask() -> str:
            try:
                return (await client.complete([{"role": "user", "content": "caf\udce9"}], thinking=False,
                                              max_tokens=16)).content
            finally:
                await client.close()

        try:
            return asyncio.run(ask()) == "ok"
        except UnicodeEncodeError:
            return False


@check
def an_unusable_cache_folder_is_skipped(tmp: Path) -> bool:
    """6. A cache folder that cannot be written (tests/untrusted/test_cache_unwritable.py)."""
    from qwen_lsp.engine.cache import StateCache

    blocker = tmp / "file"
    blocker.write_text("")
    try:
        StateCache(blocker / "state")
    except Exception:  # noqa: BLE001 - what ended every fix
        return False
    return True


@check
def a_repository_cannot_lift_limits_with_zero_or_nan(tmp: Path) -> bool:
    """7. copy_file_max_bytes = 0 and nan deadlines from pyproject.toml (tests/qfix/test_repo_limits.py)."""
    from qwen_lsp.settings import repo_settings

    kept = repo_settings({"verify_timeout": float("nan"),
                          "limits": {"copy_file_max_bytes": 0, "fix_deadline_seconds": float("nan")}},
                         "pyproject.toml", trusted=False)
    return "verify_timeout" not in kept and kept.get("limits") == {}


DESTRUCTIVE = ["> settings.py", ": > ~/.bashrc", "crontab /dev/null", "git config core.fsmonitor 'touch x'",
               "git config --global core.hooksPath /tmp/h", "rsync -a --delete a/ b/", "alias ls='rm -rf ~'",
               "history -c", "echo 'rm -rf ~' | at now", "kill -9 -1"]


def _labelled(command: str) -> Callable[[Path], bool]:
    def labelled(tmp: Path) -> bool:
        from qwen_lsp.engine.risk import classify

        return classify(command)[0].value == "destructive"

    labelled.__name__ = f"risk label of `{command}`"
    labelled.__doc__ = "8. (tests/untrusted/test_risk_labels.py)"
    return labelled


for _command in DESTRUCTIVE:
    check(_labelled(_command))


@check
def a_script_starts_no_warm_process(tmp: Path) -> bool:
    """10. `qfix` from a script (no terminal) with fresh state (tests/terminal/test_warm_pileup.py)."""
    code = ("import sys\nfrom pathlib import Path\nfrom terminal_agent import warm_client\n"
            "started = []\nwarm_client.start_daemon = started.append\n"
            "warm_client.open_session(Path.cwd())\nprint(len(started))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("QFIX_WARM",)}
    env |= {"QFIX_STATE_DIR": str(tmp / "s"), "QFIX_WARM_DIR": str(tmp / "w")}
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp, env=env, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=60)
    return run.stdout.strip() == "0"


def run_all() -> tuple[int, int]:
    held = 0
    for fn in CHECKS:
        with tempfile.TemporaryDirectory(prefix="qh3-") as tmp:
            saved = dict(os.environ)
            try:
                ok = fn(Path(tmp))
            except Exception as exc:  # noqa: BLE001 - an attack that crashes the code got through
                ok = False
                traceback.print_exception(exc, limit=-2, file=sys.stderr)
            finally:
                os.environ.clear()
                os.environ.update(saved)
        held += ok
        print(f"  {'held' if ok else 'GOT THROUGH'}: {fn.__name__.replace('_', ' ')}")
    return held, len(CHECKS)


if __name__ == "__main__":
    print(json.dumps(run_all()))
