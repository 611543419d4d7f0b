"""qfix: fix the command that just failed, with the qwen-lsp engine on your local vLLM.

    qfix -- CMD ARGS…   run CMD in a pseudo-terminal; if it fails, propose a fix
    qfix                fix the last command your shell recorded (see `qfix init`)
    qfix init SHELL     print the shell integration: eval "$(qfix init bash)"
    qfix init [SHELL] --install   put that line in the shell's startup files (login shells too)
    qfix --ask "TEXT"   a request in plain words for this workspace (terminal_agent/ask.py)
    qfix --undo         put back the files of the last fix qfix applied here
    qfix --comments [PATH]  do the instruction comments (`# qwen: …`) of the files under PATH (terminal_agent/comments.py)
    qfix --warm-status  the warm process (engine loaded, thinks for qfix); --warm-stop stops it

Exit codes: see EXIT_CODES below (also in --help and the README). The loop
itself is in terminal_agent/agent.py.

Environment: QWEN_LSP_* (the model server, cache dir: qwen_lsp/settings.py);
QFIX_STATE_DIR (shell records and undo history); QFIX_TMUX_CAPTURE=0 stops qfix
reading the last command's output from the tmux pane; QFIX_WARM=0 turns off the warm
process that thinks with the engine already loaded, QFIX_WARM_IDLE its idle seconds
(terminal_agent/warm.py).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from qwen_lsp import __version__
from terminal_agent import warm_client
from terminal_agent.preflight import ServerCheck
from terminal_agent.pty_run import Finished, nothing_to_fix, run_in_pty

USAGE_ERROR = 2
EXIT_CODES = (
    "Exit codes: 0 fixed, or a dry run that found a fix, or nothing to fix (the command passes); "
    "1 no fix found, fix not applied, or the re-run still fails; 2 model server unavailable, a usage error, "
    "or a line where qfix cannot tell which command failed (`a; b || qfix`); "
    "3 the model server is up but busy (HTTP 429/503/408 for longer than the fix could wait) or closed its answer "
    "mid-stream twice: try again; "
    "4 the model server is up but rejected a request (HTTP 4xx); 130 cancelled with Ctrl-C; 128+N when the command itself was stopped by signal N."
)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="qfix",
        description="Fix the command that just failed, with Qwen on your local vLLM. "
        "Nothing is written or run without your consent.",
        epilog="Shell integration: `qfix init bash --install` (or zsh, fish) adds the hook to the shell's startup "
        "files, login shells included; `qfix init --uninstall` removes it. "
        "Inside tmux, qfix reads the last command's output from the pane (QFIX_TMUX_CAPTURE=0 turns that off). "
        f"The warm process logs to {warm_client.log_path()}. Settings: QWEN_LSP_* in the environment, or the "
        "user config file (docs/configuration.md). "
        + EXIT_CODES,
    )
    p.add_argument("--version", action="version", version=f"qfix {__version__}")
    p.add_argument("--yes", "-y", action="store_true", help="apply a sandbox-verified fix and re-run without asking "
                   "(suggested shell commands are never run; a file that runs later or that git ignores needs an "
                   "explicit [a]pply); exit 0 only if the re-run passes")
    p.add_argument("--dry-run", action="store_true", help="show the fix and change nothing (exit 0 if one was found)")
    p.add_argument("--json", action="store_true", help="a JSON report on stdout; without --yes it is a dry run")
    p.add_argument("--comments", nargs="?", const=".", metavar="PATH",
                   help="do the instruction comments (`# qwen: make this async`; markers: the comment_markers "
                   "setting) of PATH (a file, or the files git sees under a folder; default: here), one file at a time")
    p.add_argument("--no-cache", action="store_true", help="think afresh: do not restore a plan cached for this "
                   "failure (plans are cached per server and model; the new plan replaces the old)")
    p.add_argument("--ask", metavar="TEXT", help="a request in plain words for this workspace, as the editors' "
                   "Ask Qwen (e.g. --ask \"make parse_date accept ISO weeks\"): the plan and diff, [a]pply or not; "
                   "nothing is re-run")
    p.add_argument("--traceback", action="store_true", help="on an internal error, print its traceback "
                   "(also QFIX_TRACEBACK=1)")
    p.add_argument("--undo", action="store_true", help="restore the files of the last fix applied in this workspace")
    p.add_argument("--warm-status", action="store_true", help="show qfix's warm process (it has the engine loaded "
                   "so a fix starts at once; QFIX_WARM=0 turns it off)")
    p.add_argument("--warm-stop", action="store_true", help="stop qfix's warm processes (the next qfix starts one)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command to run: qfix -- CMD ARGS…")
    return p


def _sweep_leftovers() -> None:
    """Temporary files a killed write left in any workspace go at every clean exit too (undo.py)."""
    with contextlib.suppress(OSError):
        from terminal_agent.paths import state_dir

        if any((state_dir() / "journal").glob("*/journal.json")):  # else not even the import
            from terminal_agent import undo

            undo.sweep_stray_temps()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["init"]:
        return _init(args[1:])
    opts = parser().parse_args(args)
    command = opts.command[1:] if opts.command[:1] == ["--"] else opts.command
    if opts.undo and (command or opts.yes or opts.dry_run or opts.json or opts.no_cache):
        parser().error("--undo takes no command and no other option")  # exits 2
    if opts.yes and opts.dry_run:
        parser().error("--yes and --dry-run contradict each other")
    if opts.comments is not None:
        if command or opts.undo or opts.warm_status or opts.warm_stop:
            parser().error("--comments takes a PATH, not a command, and only --yes, --dry-run, --json")
        from terminal_agent import agent, comments

        dry_run = opts.dry_run or (opts.json and not opts.yes)
        return comments.run(opts.comments, agent.Options(yes=opts.yes, dry_run=dry_run, json=opts.json))
    if opts.ask is not None:
        if command or opts.undo or opts.warm_status or opts.warm_stop or not opts.ask.strip():
            parser().error("--ask takes a non-empty TEXT and no command, --undo or --warm-* option")
        from terminal_agent import agent, ask

        dry_run = opts.dry_run or (opts.json and not opts.yes)
        return ask.run(opts.ask.strip(), agent.Options(yes=opts.yes, dry_run=dry_run, json=opts.json,
                                                      no_cache=opts.no_cache, traceback=opts.traceback))
    if opts.warm_status or opts.warm_stop:
        if command or opts.undo or opts.yes or opts.dry_run or opts.json or (opts.warm_status and opts.warm_stop):
            parser().error("--warm-status and --warm-stop take no command and no other option")
        return warm_client.status_command(stop=opts.warm_stop)
    # The warm process (if one runs for this code) gets ready for a failure here while the command runs.
    # (--no-cache thinks here: the warm process restores cached plans)
    warm = warm_client.open_session(Path.cwd()) if not (opts.undo or opts.no_cache) else None
    # The model server is asked while the command runs: a server that is down is said at once.
    server = ServerCheck(Path.cwd(), announce=True) if command and not opts.undo else None
    # With a warm process the engine is only shown here, never run: importing it is all this process needs.
    ran = _run_first(command, echo_fd=2 if opts.json else 1, warm_up=_import_engine if warm else _warm_up) \
        if command else None
    if warm and ran and not nothing_to_fix(ran[1].exit_code):  # before this process imports the engine
        warm.send_failure(shlex.join(command), ran[1].exit_code, ran[1].output, Path.cwd())
    if ran and not opts.json and nothing_to_fix(ran[1].exit_code):
        # Passed, or the user stopped it: nothing to fix, mirror its exit code. os._exit skips
        # tearing down what the warm-up loaded (most of a second); nothing else is left to flush.
        _sweep_leftovers()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(ran[1].exit_code)
    # Imported only now: `qfix init` runs at every shell start and must not pay for the engine,
    # and `qfix -- CMD` starts CMD at once (the engine was imported while it ran).
    try:
        from terminal_agent import agent
    except KeyboardInterrupt:  # a warm child may be thinking already: it stops when this process ends
        print("qfix: cancelled: nothing was changed", file=sys.stderr)
        return 130

    if opts.undo:
        return agent.undo_last_fix()
    dry_run = opts.dry_run or (opts.json and not opts.yes)
    return agent.run(agent.Options(yes=opts.yes, dry_run=dry_run, json=opts.json, no_cache=opts.no_cache,
                                          traceback=opts.traceback), ran, server, warm)


def _run_first(command: list[str], echo_fd: int, warm_up: Callable[[], None]) -> tuple[list[str], Finished]:
    """Run the user's command in a pty right away; meanwhile a thread runs `warm_up` (imports the engine;
    unless a warm process thinks, also loads the tokenizer and the workspace's context), so a failure
    gets its fix sooner."""
    # `logging` registers fork hooks when first imported. Imported by the warm-up thread while
    # this thread forks the pty, its after-fork hook can run without its before-fork hook and
    # print "Exception ignored in: <function _releaseLock>" to the user's terminal.
    import logging  # noqa: F401

    threading.Thread(target=warm_up, daemon=True).start()
    return command, run_in_pty(command, Path.cwd(), echo_fd=echo_fd)


def _warm_up() -> None:
    """Everything of a fix that does not depend on how the command fails: the engine's imports, the
    tokenizer, and the workspace's tag index and reference graph (kept for the fix's prompt, which
    checks they still hold once the command is done; see context/preload.py)."""
    from terminal_agent import agent
    from qwen_lsp.context.preload import preload
    from qwen_lsp.engine.risk import load_parser
    from qwen_lsp.llm.tokens import count_tokens
    from qwen_lsp.settings import load_settings_lenient

    count_tokens("warm up")
    try:
        workspace = agent.find_workspace(Path.cwd())
        settings, _dropped = load_settings_lenient(workspace)  # the fix itself says what was dropped
    except Exception:  # noqa: BLE001 - e.g. settings that do not validate: the fix reports them
        return
    preload(workspace, settings)
    load_parser()  # after the index the prompt needs first: the plan's verify command is classified next


def _import_engine() -> None:
    import terminal_agent.agent  # noqa: F401


def _init(args: list[str]) -> int:
    from terminal_agent.shell_init import SHELLS, init_script, install, prune_dead_sessions, uninstall

    usage = f"usage: qfix init {{{','.join(SHELLS)}}}  |  qfix init [SHELL] --install  |  qfix init --uninstall"
    if args == ["--uninstall"]:
        done = uninstall(Path.home())
        print("\n".join(done) if done else "qfix: no hook of qfix init --install found")
        return 0
    if args[-1:] == ["--install"]:
        shell = args[0] if len(args) == 2 else os.path.basename(os.environ.get("SHELL", ""))
        if len(args) > 2 or shell not in SHELLS:
            print(f"qfix: name the shell: qfix init {{{','.join(SHELLS)}}} --install", file=sys.stderr)
            return USAGE_ERROR
        print("\n".join(install(shell, Path.home())))
        print("qfix: the hook loads in shells started from now on (open a new one, or a new tmux window)")
        return 0
    if len(args) != 1 or args[0] not in SHELLS:
        print(usage, file=sys.stderr)
        return USAGE_ERROR
    prune_dead_sessions()
    try:
        sys.stdout.write(init_script(args[0]) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `qfix init bash | head`: the reader stopped early, which is no error of ours
        # Python would try to flush again at exit and print a traceback: point stdout at /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a program killed by SIGPIPE (128 + 13)
    return 0


if __name__ == "__main__":
    sys.exit(main())
