"""`qwen-review`: review the staged change (`git diff --cached`) before it is
committed, as a git pre-commit hook, a pre-commit framework hook or a CI step.

Exit codes: 0 pass (or a review that could not run, with a loud warning, unless
`--on-unavailable block`), 1 findings at or above `--fail-on`, 2 usage or git
error, 3 the review could not run and `--on-unavailable block`.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import logging
import shlex
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from pydantic import ValidationError

from qwen_lsp import __version__
from qwen_lsp.engine.cache import StateCache
from qwen_lsp.gitio import GitError, git, repo_root, show, staged_diff
from qwen_lsp.llm.client import ModelClient
from qwen_lsp.sanitize import json_safe, one_line, visible
from qwen_lsp.review.reported import ReportedStore, hold_back
from qwen_lsp.review.engine import DEFAULT_SEVERITY, SEVERITY_ORDER, DiffError, Finding, ReviewResult, parse_diff, review_diff
from qwen_lsp.settings import Settings, describe_invalid, load_settings, load_settings_lenient

log = logging.getLogger(__name__)

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_UNAVAILABLE = 0, 1, 2, 3
TOOL = "qwen-review"
HOOK_MARKER = "written by `qwen-review --install`"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
DEFAULT_TIMEOUT, DEFAULT_THINK_TIMEOUT = 180.0, 600.0
NOTHING_STAGED_HINT = (" (`pre-commit run --all-files` stages nothing: review commits with --from REF, "
                       "or pre-commit's --from-ref/--to-ref)")


# -- git -------------------------------------------------------------------------------


DIFF_OPTIONS = ("--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/", "--unified=3")


def range_diff(root: Path, from_ref: str, to_ref: str) -> str:
    """What `to_ref` changes since it forked from `from_ref` (`git diff FROM...TO`, as pre-commit's
    --from-ref/--to-ref and a pull request mean it)."""
    return git(root, "-c", "core.quotepath=off", "diff", *DIFF_OPTIONS, f"{from_ref}...{to_ref}", "--")


def diff_names(root: Path, refs: tuple[str, str] | None) -> list[tuple[str, str]]:
    """(old, new) path of each file of the diff under review, in its order, exactly as named:
    from `git diff -z` (NUL-separated), never from the quoted text git prints for a name with
    a newline or an escape character."""
    spec = [f"{refs[0]}...{refs[1]}"] if refs else ["--cached"]
    fields = git(root, "-c", "core.quotepath=off", "diff", *DIFF_OPTIONS, "-z", "--name-status", *spec, "--").split("\0")
    names: list[tuple[str, str]] = []
    at = 0
    while at + 1 < len(fields) and fields[at]:
        status = fields[at]
        if status[:1] in ("R", "C"):  # renamed or copied: the old name, then the new one
            names.append((fields[at + 1], fields[at + 2]))
            at += 3
        else:
            names.append((fields[at + 1], fields[at + 1]))
            at += 2
    return names


def review_range(args: argparse.Namespace, environ: Mapping[str, str]) -> tuple[str, str] | None:
    """(FROM, TO) from --from/--to, else from pre-commit's PRE_COMMIT_FROM_REF/TO_REF; None: the staged change."""
    if args.from_ref:
        return args.from_ref, args.to_ref or "HEAD"
    if args.to_ref:
        raise GitError("--to needs --from")
    if environ.get("PRE_COMMIT_FROM_REF") and environ.get("PRE_COMMIT_TO_REF"):
        return environ["PRE_COMMIT_FROM_REF"], environ["PRE_COMMIT_TO_REF"]
    return None


class IndexReader:
    """The new file contents: staged (`git show :path`, what will be committed, not the work tree),
    or at a commit (`git show REV:path`) when reviewing a range."""

    def __init__(self, root: Path, rev: str = "") -> None:
        self.root = root
        self.rev = rev
        self._texts: dict[str, str | None] = {}

    def __call__(self, relpath: str) -> str | None:
        if relpath not in self._texts:
            self._texts[relpath] = show(self.root, f":{relpath}")
        return self._texts[relpath]

    def line(self, relpath: str, line: int) -> str | None:
        lines = (self(relpath) or "").splitlines()
        return lines[line - 1] if 1 <= line <= len(lines) else None


# -- policy ------------------------------------------------------------------------------


def blocking(result: ReviewResult, fail_on: str) -> list[Finding]:
    """The findings that fail the run under `--fail-on`."""
    if fail_on == "never":
        return []
    worst = SEVERITY_ORDER[fail_on]
    return [f for f in result.findings if SEVERITY_ORDER[f.severity] <= worst]


def exit_code(result: ReviewResult, fail_on: str, on_unavailable: str) -> int:
    if not result.reviewed:
        return EXIT_UNAVAILABLE if on_unavailable == "block" else EXIT_OK
    return EXIT_FINDINGS if blocking(result, fail_on) else EXIT_OK


def unavailable_warning(result: ReviewResult, on_unavailable: str, what: str = "the staged change") -> str:
    """The loud banner of a review that did not happen. `what`: the staged change, or a range of commits,
    which no commit waits on (a pre-push hook, CI): the verdict then speaks of the exit status."""
    staged = what == "the staged change"
    if on_unavailable == "block":
        verdict = "Blocking the commit (--on-unavailable block)." if staged else "Failing (--on-unavailable block)."
    else:
        verdict = ("Letting the commit through" if staged else "Passing") + " (--on-unavailable pass): this is NOT a passed review."
    bar = "!" * 72
    return "\n".join(
        [bar, f"{TOOL}: WARNING: {what} was NOT reviewed.", f"{TOOL}: {one_line(result.error or '')}",
         f"{TOOL}: {verdict}", bar]
    )


# -- output formats ------------------------------------------------------------------------


def format_text(result: ReviewResult, reader: IndexReader, fail_on: str) -> str:
    """Findings grouped by file, each with its staged code line, then context findings
    (outside the staged hunks, never blocking), then a summary. A file name, a message, a
    category and a code line are each one line (a newline shown as ⏎): nothing the model
    writes can print a line that looks like the report's own."""
    out = _text_findings(result.findings, reader)
    if result.context_findings:
        out.append("Context: outside the staged hunks (not blocking)")
        out += _text_findings(result.context_findings, reader)
    out.append(summary(result, fail_on))
    return visible("\n".join(out))  # model text and staged code: shown, never obeyed by the terminal


def _text_findings(findings: list[Finding], reader: IndexReader) -> list[str]:
    out: list[str] = []
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.path, []).append(f)
    for path, in_file in by_file.items():
        out.append(one_line(path))
        for f in in_file:
            span = f"{f.line}-{f.end_line}" if f.end_line else str(f.line)
            given = f" (model said {one_line(repr(f.unknown_severity))})" if f.unknown_severity else ""
            out.append(f"  {span}: {f.severity}{given} [{one_line(f.category)}] {one_line(f.message)}")
            code = reader.line(path, f.line)
            if code is not None:
                out.append(f"    {f.line:>5} | {one_line(code)}")
            if f.suggestion:  # code, several lines: each indented under it, so none reads as a finding
                out.append("    suggestion: " + "\n                ".join(one_line(line) for line in f.suggestion.split("\n")))
        out.append("")
    return out


def summary(result: ReviewResult, fail_on: str) -> str:
    counts = Counter(f.severity for f in result.findings)
    if not result.findings and not result.context_findings:
        text = f"{TOOL}: no findings."
    else:
        text = f"{TOOL}: {counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info."
    if result.context_findings:
        text += f" {len(result.context_findings)} more outside the staged hunks (context, not blocking)."
    unknown = result.unknown_severities
    if unknown:
        named = ", ".join(f"{name!r} x{n}" for name, n in sorted(unknown.items()))
        text += f" {sum(unknown.values())} finding(s) had an unknown severity ({named}), counted as {DEFAULT_SEVERITY}."
    blockers = blocking(result, fail_on)
    if blockers:
        text += f" Commit blocked: {len(blockers)} finding(s) at or above '{fail_on}' (--fail-on {fail_on})."
    if held := held_back(result):
        text += f" Held back: {held}."
    if result.cached:
        text += " (cached review of this diff)"
    elif result.prompt_tokens:
        text += f" [tokens: prompt {result.prompt_tokens} (cached {result.cached_tokens}), completion {result.completion_tokens}]"
    return text


def held_back(result: ReviewResult) -> str:
    """What the report leaves out, in words ("" when nothing)."""
    parts = []
    if result.held_back_repeated:
        parts.append(f"{result.held_back_repeated} already reported for the same code (--all shows them)")
    if result.held_back_over_limit:
        parts.append(f"{result.held_back_over_limit} less severe past --max-findings")
    return "; ".join(parts)


def format_json(result: ReviewResult) -> str:
    return result.model_dump_json(indent=2)


def _byte_columns(code: str | None) -> tuple[int, int]:
    """1-based UTF-8 byte columns of the first non-blank character and just past the last one."""
    raw = (code or "").encode("utf-8")
    body = raw.rstrip()
    return len(body) - len(body.lstrip()) + 1, len(body) + 1


def format_rdjsonl(result: ReviewResult, reader: IndexReader) -> str:
    """reviewdog Diagnostic Format, one JSON object per line."""
    lines = []
    for f in result.findings:
        end_line = f.end_line or f.line
        start_col, _ = _byte_columns(reader.line(f.path, f.line))
        _, end_col = _byte_columns(reader.line(f.path, end_line))
        message = f.message + (f"\nSuggestion: {f.suggestion}" if f.suggestion else "")
        diagnostic = {
            "message": message,
            "location": {
                "path": f.path,
                "range": {"start": {"line": f.line, "column": start_col}, "end": {"line": end_line, "column": end_col}},
            },
            "severity": f.severity.upper(),
            "source": {"name": TOOL},
            "code": {"value": f.category},
        }
        lines.append(json.dumps(diagnostic, ensure_ascii=False))
    return "\n".join(lines) + ("\n" if lines else "")


def format_sarif(result: ReviewResult, reader: IndexReader, root: Path) -> str:
    """A SARIF 2.1.0 log with one run; a review that did not run says so in its invocation."""
    rules = sorted({f.category for f in result.findings})
    results = []
    for f in result.findings:
        region: dict[str, Any] = {"startLine": f.line}
        if f.end_line:
            region["endLine"] = f.end_line
        code = reader.line(f.path, f.line)
        if code is not None:
            region["snippet"] = {"text": code}
        fingerprint = hashlib.sha256(f"{f.path}\0{f.category}\0{f.message}".encode()).hexdigest()[:32]
        results.append(
            {
                "ruleId": f.category,
                "ruleIndex": rules.index(f.category),
                "level": SARIF_LEVEL[f.severity],
                "message": {"text": f.message + (f"\nSuggestion: {f.suggestion}" if f.suggestion else "")},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": quote(f.path), "uriBaseId": "SRCROOT"},
                            "region": region,
                        }
                    }
                ],
                "partialFingerprints": {"qwenReview/v1": fingerprint},
            }
        )
    invocation: dict[str, Any] = {"executionSuccessful": result.reviewed}
    if not result.reviewed:
        invocation["toolExecutionNotifications"] = [{"level": "error", "message": {"text": result.error or "not reviewed"}}]
    elif held := held_back(result):
        invocation["toolExecutionNotifications"] = [{"level": "note", "message": {"text": f"findings held back: {held}"}}]
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL,
                        "version": __version__,
                        "rules": [{"id": r, "name": r, "shortDescription": {"text": f"{r} finding of the model review"}} for r in rules],
                    }
                },
                "originalUriBaseIds": {"SRCROOT": {"uri": root.resolve().as_uri() + "/"}},
                "invocations": [invocation],
                "results": results,
                "properties": {
                    "cached": result.cached,
                    "heldBack": {"alreadyReported": result.held_back_repeated, "overLimit": result.held_back_over_limit},
                },
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


# -- installing a plain git hook ---------------------------------------------------------


def hook_args(args: argparse.Namespace) -> list[str]:
    """The options given with --install that the hook should run with."""
    out: list[str] = []
    if args.think:
        out.append("--think")
    out += ["--fail-on", args.fail_on, "--on-unavailable", args.on_unavailable]
    if args.timeout is not None:
        out += ["--timeout", f"{args.timeout:g}"]
    if args.connect_timeout is not None:
        out += ["--connect-timeout", f"{args.connect_timeout:g}"]
    if args.base_url:
        out += ["--base-url", args.base_url]
    if args.no_cache:
        out.append("--no-cache")
    if args.all:
        out.append("--all")
    if args.max_findings is not None:
        out += ["--max-findings", str(args.max_findings)]
    return out


def install_hook(root: Path, args: list[str], *, force: bool = False) -> Path:
    """Write `.git/hooks/pre-commit` (or core.hooksPath's) running this interpreter's qwen-review."""
    hooks = Path(git(root, "rev-parse", "--git-path", "hooks").strip())
    hooks = hooks if hooks.is_absolute() else root / hooks
    hook = hooks / "pre-commit"
    if hook.exists() and HOOK_MARKER not in hook.read_text(errors="replace") and not force:
        raise FileExistsError(
            f"{hook} already exists and was not written by {TOOL}; use --force to replace it, "
            "or add the qwen-review hook to .pre-commit-config.yaml"
        )
    python = shlex.quote(sys.executable)
    command = " ".join(shlex.quote(a) for a in ["-m", "qwen_lsp.review.cli", *args])
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(
        "#!/bin/sh\n"
        f"# {HOOK_MARKER}: reviews the staged change with Qwen3.6 before each commit.\n"
        "# Skip it once with `git commit --no-verify`.\n"
        f"PYTHON={python}\n"
        'if [ ! -x "$PYTHON" ]; then\n'
        f'    echo "{TOOL}: $PYTHON is gone (qwen-lsp uninstalled or moved?): this commit was NOT reviewed. '
        f'Reinstall qwen-lsp and run {TOOL} --install again, or remove this hook: rm $0" >&2\n'
        "    exit 0\n"
        "fi\n"
        f'exec "$PYTHON" {command} "$@"\n',
        encoding="utf-8",
    )
    hook.chmod(0o755)
    _remember(hook)
    return hook


def _hooks_list() -> Path:
    """The hooks --install wrote, one path a line, so that `--uninstall --all` finds them again (in the
    per-user state folder qfix uses too: QFIX_STATE_DIR, else the platform's)."""
    from platformdirs import user_state_dir

    return Path(os.environ.get("QFIX_STATE_DIR") or user_state_dir("qwen-lsp")) / "review-hooks"


def _remembered() -> list[Path]:
    try:
        return [Path(line) for line in _hooks_list().read_text(encoding="utf-8").splitlines() if line]
    except OSError:
        return []


def _remember(hook: Path, forget: bool = False) -> None:
    hooks = [h for h in _remembered() if h != hook] + ([] if forget else [hook])
    try:
        _hooks_list().parent.mkdir(parents=True, exist_ok=True)
        _hooks_list().write_text("".join(f"{h}\n" for h in hooks), encoding="utf-8")
    except OSError:  # the list only helps --uninstall --all; the hook itself is written
        pass


def uninstall_hooks(root: Path | None) -> list[str]:
    """Remove the pre-commit hook --install wrote in `root` (None: every one it wrote); a hook someone
    else wrote, or changed so that it lost our marker, is left alone and named."""
    if root is not None:
        hooks = Path(git(root, "rev-parse", "--git-path", "hooks").strip())
        candidates = [(hooks if hooks.is_absolute() else root / hooks) / "pre-commit"]
    else:
        candidates = _remembered()
    said = []
    for hook in candidates:
        try:
            text = hook.read_text(errors="replace")
        except OSError:
            said.append(f"{hook}: not there")
            _remember(hook, forget=True)
            continue
        if HOOK_MARKER not in text:
            said.append(f"{hook}: not written by {TOOL}, left alone")
            continue
        hook.unlink()
        _remember(hook, forget=True)
        said.append(f"{hook}: removed")
    return said


# -- command line ------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=TOOL,
        description="Review the staged change (git diff --cached), or a range of commits (--from/--to), "
        "with Qwen3.6 on vLLM.",
        epilog="Exit codes: 0 pass (or review unavailable, with a warning), 1 blocking findings, "
        "2 usage or git error, 3 review unavailable with --on-unavailable block.",
    )
    parser.add_argument("--version", action="version", version=f"{TOOL} {__version__}")
    parser.add_argument("--think", action="store_true", help="deep review: the model thinks first (slower)")
    parser.add_argument("--from", dest="from_ref", metavar="REF",
                        help="review what --to changes since REF (git diff REF...TO) instead of the staged change; "
                        "pre-commit's --from-ref/--to-ref set this through PRE_COMMIT_FROM_REF/TO_REF")
    parser.add_argument("--to", dest="to_ref", metavar="REF", help="the end of the range (default HEAD)")
    parser.add_argument("--format", choices=("text", "json", "rdjsonl", "sarif"), default="text")
    parser.add_argument("--output", "-o", type=Path, help="write the report here instead of stdout")
    parser.add_argument("--fail-on", choices=("error", "warning", "never"), default="error")
    parser.add_argument("--on-unavailable", choices=("pass", "block"), default="pass",
                        help="when the model server is down or too slow (default: warn and pass)")
    parser.add_argument("--timeout", type=float, help=f"overall deadline in seconds (default {DEFAULT_TIMEOUT:g}, "
                        f"{DEFAULT_THINK_TIMEOUT:g} with --think)")
    parser.add_argument("--connect-timeout", type=float, help="seconds to wait for a connection (default 2)")
    parser.add_argument("--base-url", help="the vLLM OpenAI base URL (default: settings / QWEN_LSP_BASE_URL)")
    parser.add_argument("--no-cache", action="store_true", help="ignore the cached review of this diff")
    parser.add_argument("--all", action="store_true", help="also report findings already reported in this repository "
                        "for the same code (by default a finding is reported once: same file, cited lines, message); "
                        "with --uninstall: every hook --install wrote")
    parser.add_argument("--max-findings", type=_count, metavar="N", help="report at most N findings, the most "
                        "severe; the report says how many were held back")
    parser.add_argument("-C", dest="directory", type=Path, default=Path.cwd(), help="run as if started in this directory")
    parser.add_argument("--install", action="store_true", help="write .git/hooks/pre-commit running this review")
    parser.add_argument("--force", action="store_true", help="with --install: replace an existing hook")
    parser.add_argument("--uninstall", action="store_true", help="remove the hook --install wrote in this repository "
                        "(with --all: in every repository it was installed in)")
    return parser.parse_args(argv)


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def hook_settings(root: Path, args: argparse.Namespace, deadline: float) -> Settings:
    """Settings with a hook's patience: a short connect timeout, few retries, the deadline.
    A bad value is ignored with a warning: a typo in the settings must not block every commit."""
    settings, dropped = load_settings_lenient(root, {"base_url": args.base_url})
    for bad in dropped:
        print(f"{TOOL}: ignoring invalid setting {bad}", file=sys.stderr)
    connect = args.connect_timeout if args.connect_timeout is not None else min(settings.connect_timeout, 2.0)
    return settings.model_copy(
        update={
            "connect_timeout": connect,
            "request_timeout": min(settings.request_timeout, deadline),
            "max_retries": min(settings.max_retries, 1),
        }
    )


def open_cache(settings: Settings) -> StateCache | None:
    try:
        return StateCache(settings.cache_dir / "review", settings.cache_size_mb)
    except Exception:  # noqa: BLE001 - no cache (read-only home, odd filesystem) only costs time
        log.debug("review cache unavailable; reviewing uncached", exc_info=True)
        return None


async def run_review(diff: str, root: Path, settings: Settings, args: argparse.Namespace, deadline: float,
                     names: list[tuple[str, str]] | None = None) -> ReviewResult:
    client = ModelClient(settings)
    cache = None if args.no_cache else open_cache(settings)
    try:
        return await review_diff(
            diff, root, settings, client, think=args.think, cache=cache, read_file=IndexReader(root), deadline=deadline,
            names=names,
        )
    finally:
        await client.close()
        if cache is not None:
            cache.close()


def report(result: ReviewResult, reader: IndexReader, root: Path, args: argparse.Namespace) -> str:
    if args.format == "json":
        return json_safe(format_json(result)) + "\n"
    if args.format == "rdjsonl":
        return json_safe(format_rdjsonl(result, reader))
    if args.format == "sarif":
        return json_safe(format_sarif(result, reader, root))
    return format_text(result, reader, args.fail_on) + "\n" if result.reviewed else ""


def write(text: str, output: Path | None, stdout: TextIO) -> None:
    if output is None:
        stdout.write(text)
        stdout.flush()
    else:
        output.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.uninstall:
        try:
            said = uninstall_hooks(None if args.all else repo_root(args.directory))
        except GitError as exc:
            print(f"{TOOL}: {exc} (--uninstall --all removes the hooks of every repository)", file=sys.stderr)
            return EXIT_USAGE
        print("\n".join(f"{TOOL}: {line}" for line in said) if said else f"{TOOL}: no hook of {TOOL} --install found")
        return EXIT_OK
    try:
        root = repo_root(args.directory)
        if args.install:
            hook = install_hook(root, hook_args(args), force=args.force)
            print(f"{TOOL}: installed {hook}")
            return EXIT_OK
        refs = review_range(args, os.environ)
        diff = range_diff(root, *refs) if refs else staged_diff(root)
        names = diff_names(root, refs)
    except (GitError, FileExistsError) as exc:
        print(f"{TOOL}: {exc}", file=sys.stderr)
        return EXIT_USAGE

    what = f"the change {refs[0]}...{refs[1]}" if refs else "the staged change"
    reader = IndexReader(root, refs[1] if refs else "")
    if not diff.strip():
        print(f"{TOOL}: nothing to review: {what} is empty." + ("" if refs else NOTHING_STAGED_HINT), file=sys.stderr)
        if args.format != "text":  # an empty, valid report for the tools that read it
            write(report(ReviewResult(findings=[]), reader, root, args), args.output, sys.stdout)
        return EXIT_OK
    deadline = args.timeout or (DEFAULT_THINK_TIMEOUT if args.think else DEFAULT_TIMEOUT)
    try:
        settings = hook_settings(root, args, deadline)
    except ValidationError as exc:
        print(f"{TOOL}: invalid settings: {describe_invalid(exc)}", file=sys.stderr)
        return EXIT_USAGE
    try:
        files = [f for f in parse_diff(diff, names) if f.reviewable]
    except DiffError:
        files = []  # review_diff reports it
    mode = "thinking" if args.think else "non-thinking"
    print(f"{TOOL}: reviewing {len(files)} file(s) of {what} with {settings.base_url} ({mode})...", file=sys.stderr)
    result = asyncio.run(run_review(diff, root, settings, args, deadline, names))
    store = None if args.all else ReportedStore(settings.cache_dir, root)
    result = hold_back(result, reader.line, store, max_findings=args.max_findings)
    if store is not None and result.reviewed:
        store.save()

    write(report(result, reader, root, args), args.output, sys.stdout)
    if not result.reviewed:
        print(unavailable_warning(result, args.on_unavailable, what), file=sys.stderr)
    elif args.format != "text" or args.output is not None:
        print(summary(result, args.fail_on), file=sys.stderr)
    return exit_code(result, args.fail_on, args.on_unavailable)


if __name__ == "__main__":
    sys.exit(main())
