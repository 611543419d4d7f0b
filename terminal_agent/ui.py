"""What qfix shows and asks: the spinner, the plan, colored diffs, risk-labelled
shell suggestions and the one-letter questions. With --json everything here goes
to stderr so stdout carries only the JSON.

Everything shown passes through qwen_lsp.sanitize: model text with escape
sequences, carriage returns or bidi overrides is shown, not obeyed, so the diff
on screen is exactly what [a]pply writes."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Literal

from rich.console import Console, Group
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from qwen_lsp.engine.thinking import Thought, decode as decode_thought
from qwen_lsp.sanitize import diff_lines, parts
from qwen_lsp.types import NOTICE, FileChange, Plan, Risk, ShellSuggestion, Validation

Choice = Literal["apply", "skip", "edit", "quit", "refine"]
CHOICES: dict[str, Choice] = {"a": "apply", "s": "skip", "e": "edit", "q": "quit", "r": "refine"}
RISK_STYLE = {
    Risk.read_only: "green",
    Risk.modifies_files: "yellow",
    Risk.network: "magenta",
    Risk.destructive: "bold white on red",
}


class UI:
    def __init__(self, *, to_stderr: bool) -> None:
        self.console = Console(stderr=to_stderr, highlight=False)
        self.fd = 2 if to_stderr else 1  # where a re-run command's live output goes
        self.interactive = sys.stdin.isatty() and not to_stderr

    # -- messages ------------------------------------------------------------------------------

    def say(self, message: str, style: str = "") -> None:
        self.console.print(_shown(message, style), soft_wrap=True)  # the terminal wraps; logs stay greppable

    def ok(self, message: str) -> None:
        self.say(f"✓ {message}", "bold green")

    def fail(self, message: str) -> None:
        self.say(f"✗ {message}", "bold red")

    # -- the model at work ---------------------------------------------------------------------

    @contextlib.contextmanager
    def working(self, indexing: Callable[[], tuple[int, int] | None] | None = None) -> Iterator[Callable[[str], None]]:
        """A spinner with the engine's current phase and the elapsed time; yields the progress callback.
        `indexing`: (files parsed, files to parse) of a workspace index build under way, shown instead
        of the phase while there is one."""
        # The live thinking line only on a terminal, and never with --json (everything goes to stderr then).
        status = _Status(indexing, thoughts=self.console.is_terminal and self.fd == 1)

        def progress(phase: str) -> None:
            if phase.startswith(NOTICE):  # a retry the user should see afterwards too: a line of its own
                self.say(f"qfix: {phase.removeprefix(NOTICE)}", "yellow")
            else:
                status.set_phase(phase)

        if not self.console.is_terminal:  # a log or a pipe (`--json 2>log`): no spinner, no cursor codes
            yield progress
            return
        with Live(status, console=self.console, refresh_per_second=8, transient=True):
            yield progress

    def indexed(self, files: int, seconds: float) -> None:
        """The line a long first index build leaves behind, on a terminal only (a log or a pipe gets
        nothing extra)."""
        if self.console.is_terminal:
            self.say(f"indexed {files:,} files in {seconds:.0f} s (the first qfix here; the next starts from this index)",
                     "dim")

    # -- the result ----------------------------------------------------------------------------

    def show_plan(self, plan: Plan | None, summary: str, by_model: bool = True) -> None:
        if plan and plan.hypotheses:
            self.say("Cause: " + plan.hypotheses[0], "bold")
        for step in plan.steps if plan else []:
            self.say(f"  • {step}")
        if summary.strip():  # the model's claims are labelled as its own, never shown as qfix's verdict
            self.say(f"The model says: {summary.strip()}" if by_model else summary.strip(), "italic")

    def show_changes(self, changes: list[FileChange]) -> None:
        for change in changes:
            self.say(f"\n{'new file' if change.created else 'changes'}: {change.path}", "bold")
            for line, shown in diff_lines(change.diff):
                self.console.print(_highlighted(shown, _diff_style(line)), soft_wrap=True)

    def show_checks(self, validation: Validation) -> None:
        """What the engine already checked, in the sandbox on a temporary copy of the workspace."""
        for check in validation.checks:
            where = "" if check.name.startswith("parses:") else "  (ran sandboxed in a temporary copy)"
            self.say(f"{'✓' if check.ok else '✗'} {check.name}{where}", "green" if check.ok else "red")
            if check.stopped_by:
                self.say(f"  {check.detail.splitlines()[0]}", "red")
            if check.not_copied:
                self.say("  not in the temporary copy: " + ", ".join(check.not_copied), "yellow")
        if validation.not_verified:
            self.say(f"! not verified: {validation.not_verified}", "bold yellow")
            if validation.not_verified_detail:
                self.say(f"  {validation.not_verified_detail}", "yellow")
        for item in validation.runs_during_verification:
            self.say(f"⚠ runs during verification: {item}", "bold yellow")

    def show_suggestion(self, suggestion: ShellSuggestion) -> None:
        label = Text(f" {suggestion.risk.value.upper()} ", style=RISK_STYLE[suggestion.risk])
        if suggestion.risk == Risk.destructive:
            label = Text(" ⚠ DESTRUCTIVE ", style=RISK_STYLE[Risk.destructive])
        self.console.print(Text("\nSuggested command ").append(label).append(":"))
        self.say(f"  $ {suggestion.command}", "bold")
        if suggestion.reason:
            self.say(f"  why: {suggestion.reason}", "dim")
        for danger in suggestion.dangers:
            self.say(f"  ⚠ {danger}", "bold red")

    # -- questions -----------------------------------------------------------------------------

    def choose(self, question: str, *, refine: bool = False) -> Choice:
        """[a]pply / [s]kip / [e]dit command / [q]uit (/ [r]efine when `refine`); end of input counts as quit."""
        asked = f"\n{question} [a]pply / [s]kip / [e]dit command / [q]uit{' / [r]efine' if refine else ''}: "
        while True:
            try:
                answer = self.console.input(_shown(asked, "bold"))
            except EOFError:
                return "quit"
            choice = CHOICES.get(answer.strip().lower()[:1])
            if choice and (refine or choice != "refine"):
                return choice

    def confirm(self, question: str, *, word: str = "y") -> bool:
        """True only for an explicit answer: `y`, or the whole `word` (e.g. "yes" for dangerous things)."""
        try:
            answer = self.console.input(_shown(f"{question} ", "bold")).strip().lower()
        except EOFError:
            return False
        return answer == word or (word == "y" and answer == "yes")

    def edit(self, prompt: str, text: str) -> str:
        """An editable line pre-filled with `text` (readline)."""
        import readline  # noqa: PLC0415 - only here: it touches the terminal on import

        readline.set_startup_hook(lambda: readline.insert_text(text))
        try:
            return input(prompt).strip() or text
        except EOFError:
            return text
        finally:
            readline.set_startup_hook()


class _Status:
    """Rendered by Live several times a second, so the elapsed time keeps moving."""

    def __init__(self, indexing: Callable[[], tuple[int, int] | None] | None = None, thoughts: bool = False) -> None:
        self.started = time.monotonic()
        self.phase = "reading the workspace"
        self.spinner = Spinner("dots")
        self.indexing = indexing
        self.thoughts = thoughts  # show the live thinking line (engine/thinking.py) under the spinner
        self.thought: Thought | None = None

    def set_phase(self, phase: str) -> None:
        if (thought := decode_thought(phase)) is not None:
            self.thought = thought if self.thoughts else None
            return
        self.phase = phase
        self.thought = None  # a new phase: the thinking is over

    def __rich__(self) -> Spinner | Group:
        elapsed = time.monotonic() - self.started
        phase = self.phase
        if (found := self.indexing() if self.indexing is not None else None) is not None:
            phase = f"indexing the workspace: {found[0]:,}/{found[1]:,} files (first run here)"
        self.spinner.update(text=_shown(f"{phase} · {elapsed:.0f}s  (Ctrl-C cancels)", "cyan"))  # a phase may quote the model
        if self.thought is None:
            return self.spinner
        line = Text("  " + self.thought.line(), style="dim", no_wrap=True, overflow="ellipsis")
        return Group(self.spinner, line)


def _shown(message: str, style: str = "") -> Text:
    """`message` with hidden characters replaced, the replacements in reverse video."""
    return _highlighted(list(parts(message)), style)


def _highlighted(runs: list[tuple[str, bool]], style: str) -> Text:
    text = Text(style=style)
    for shown, replaced in runs:
        text.append(shown, style="reverse" if replaced else "")
    return text


def _diff_style(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    if line.startswith("@@"):
        return "cyan"
    return ""
