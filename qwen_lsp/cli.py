"""`qwen-lsp`: the language server's command line.

    qwen-lsp                      language server on stdio (what editors run)
    qwen-lsp --tcp --port 2087    on 127.0.0.1:2087, for debugging
    qwen-lsp --version

Subcommands go on `SUBCOMMANDS` (see `build_parser`); with none given, the server runs.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Callable

from pydantic import ValidationError

from qwen_lsp import __version__
from qwen_lsp.settings import UnreadableSettings, describe_invalid

TCP_HOST = "127.0.0.1"  # never listen beyond this machine: the server reads and edits the workspace

Handler = Callable[[argparse.Namespace], int]
# Each entry adds one subcommand: `def add(sub): p = sub.add_parser("doctor", help=...); p.set_defaults(handler=run)`.
# Filled in by build_parser, so a Ctrl-C while the heavy modules import is a clean exit too.
SUBCOMMANDS: list[Callable[[argparse._SubParsersAction], None]] = []


def serve(args: argparse.Namespace) -> int:
    if args.tcp or sys.stdin.isatty():  # a person, not an editor, started it: say what this is
        print(banner(args), file=sys.stderr, flush=True)
    try:
        return _serve(args)
    except KeyboardInterrupt:  # the first Ctrl-C stops it, quietly
        print("qwen-lsp: stopped", file=sys.stderr)
        return 130


def banner(args: argparse.Namespace) -> str:
    where = f"on {TCP_HOST}:{args.port} (connect an LSP client there)" if args.tcp else "on stdin/stdout"
    return (f"qwen-lsp {__version__}: the Qwen language server, speaking LSP {where}. Editors start it "
            "themselves (`qwen-lsp` on stdio; see README, In the editor). Ctrl-C stops it.")


def _serve(args: argparse.Namespace) -> int:
    # Imported here so `--version` and other subcommands stay fast.
    from qwen_lsp.lsp.server import create_server

    server = create_server()
    signal.signal(signal.SIGINT, lambda *_: _stop(server))
    try:
        if args.tcp:
            server.start_tcp(TCP_HOST, args.port)
        else:
            server.start_io()
    finally:
        server.close()  # also when the client vanished without shutdown: remove the side-channel socket
    return 0


def _stop(server) -> None:
    """SIGINT while serving: pygls's stdin reader thread would swallow the first KeyboardInterrupt
    and block interpreter shutdown on the second, so clean up here and leave at once."""
    try:
        server.close()
    finally:
        print("qwen-lsp: stopped", file=sys.stderr, flush=True)
        os._exit(130)


def build_parser() -> argparse.ArgumentParser:
    from qwen_lsp.ops import cli as ops_cli

    if not SUBCOMMANDS:
        SUBCOMMANDS.extend(ops_cli.SUBCOMMANDS)
    parser = argparse.ArgumentParser(
        prog="qwen-lsp",
        description="Language server: a local coding agent (Qwen3.6 on vLLM) behind LSP code actions and diagnostics.",
    )
    parser.add_argument("--version", action="version", version=f"qwen-lsp {__version__}")
    parser.add_argument("--tcp", action="store_true", help=f"listen on {TCP_HOST} instead of stdio (debugging)")
    parser.add_argument("--port", type=int, default=2087, help="TCP port with --tcp (default 2087)")
    parser.add_argument(
        "--log-level",
        default=os.environ.get("QWEN_LSP_LOG_LEVEL", "WARNING"),
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="log level on stderr (stdout carries the protocol)",
    )
    parser.set_defaults(handler=serve)
    if SUBCOMMANDS:
        sub = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
        for add in SUBCOMMANDS:
            add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:
        return 130
    logging.basicConfig(stream=sys.stderr, level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    handler: Handler = args.handler
    try:
        return handler(args)
    except ValidationError as exc:  # doctor, stats: the user's settings, named in one line
        print(f"qwen-lsp: invalid settings: {describe_invalid(exc)}", file=sys.stderr)
        return 2
    except UnreadableSettings as exc:  # the user's config file is not TOML: where, and why
        print(f"qwen-lsp: unreadable settings file {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
