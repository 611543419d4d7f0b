"""The packaged extension inside a real VS Code (code-server 4.100.3), driven through headless Chromium.

What a user does, step by step, against the real language server and the vLLM test double: the
extension activates and says it is ready; a failing `python3 app.py` in the integrated terminal
becomes a `qwen` diagnostic, Ctrl+. offers "Fix with Qwen", Enter applies it, the file is fixed on
disk and a message says what was validated; a fix cancelled while it runs (from the busy status
bar item, or the Cancel button of a palette command's notification) closes the model stream and
leaves the file alone; with the model server down one clear message appears and the extension
keeps working once it is back. The project is hostile throughout: its .vscode/settings.json points
qwen.baseUrl at a second double and qwen.server.command/pythonPath at a marker script; every fix
reaches only the user's server and the marker never runs. Run with -s to see the time each flow took.

Needs code-server (`bash scripts/code-server`, run by scripts/test), Debian's chromium and the PyPI
`playwright` package; each missing piece skips the tier saying which. Screenshots of every step are
kept in a temp dir named in the failure message (or always, with QWEN_LSP_KEEP_SCREENSHOTS=1).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.editors._run import REPO, run_suite
from tests.vllm_double import Reply, VLLMDouble

VSCODE = REPO / "editors" / "vscode"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "qwen-lsp-build"
CODE_SERVER = os.environ.get("QWEN_LSP_CODE_SERVER") or str(CACHE / "code-server-4.100.3" / "node_modules" / ".bin" / "code-server")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _missing() -> str | None:
    """Why the tier cannot run here, or None."""
    if not Path(CODE_SERVER).is_file():
        return f"code-server is not installed at {CODE_SERVER}: run `bash scripts/code-server` (scripts/test does)"
    if not CHROMIUM:
        return "chromium is not installed (Debian package chromium; scripts/test installs it)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed (dev extra)"
    if not shutil.which("npm"):
        return "npm is not installed: the .vsix cannot be packaged"
    return None


pytestmark = [pytest.mark.vscode_real, pytest.mark.skipif(bool(_missing()), reason=f"real VS Code tier: {_missing()}"), pytest.mark.timeout(300)]

APP = 'def add(a, b):\n    return a - b\n\n\nassert add(2, 3) == 5, "add(2, 3) should be 5"\nprint("ok")\n'
CALC = 'def mul(a, b):\n    return a + b\n\n\nassert mul(2, 3) == 6, "mul(2, 3) should be 6"\nprint("ok")\n'
REPORT = 'import pathlib\n\nprint(pathlib.Path("out/report.txt").read_text())\n'
UTIL = 'def first(xs):\n    # qwen: handle the empty list\n    return xs[0]\n'
PLAN = {
    "hypotheses": ["add() subtracts; the assertion expects the sum"],
    "evidence": [{"path": "app.py", "start_line": 2, "end_line": 2, "reason": "return a - b"}],
    "steps": ["return a + b"],
    "verify_command": None,
}
FIX = [
    Reply(reasoning="app.py line 5 asserts add(2, 3) == 5; add subtracts.", content=json.dumps(PLAN)),
    Reply(tool_calls=[("read_file", {"path": "app.py"})]),
    Reply(tool_calls=[("edit_file", {"path": "app.py", "old_string": "return a - b", "new_string": "return a + b"})]),
    Reply(tool_calls=[("finish", {"summary": "add() now adds"})]),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Session:
    """One code-server + one browser page; every step leaves a numbered screenshot in `artifacts`."""

    def __init__(self, page, artifacts: Path, user_data: Path, double: VLLMDouble, project: Path,
                 attacker: VLLMDouble, marker: Path) -> None:
        self.page = page
        self.artifacts = artifacts
        self.user_data = user_data
        self.double = double
        self.project = project
        self.attacker = attacker  # the server the workspace's settings name
        self.marker = marker  # created if the program the workspace's settings name ever runs
        self.shots = 0
        self.timings: dict[str, float] = {}
        self.failed = False  # the temp dir (screenshots, logs) is kept only then

    def shot(self, name: str) -> None:
        self.shots += 1
        with contextlib.suppress(Exception):
            self.page.screenshot(path=str(self.artifacts / f"{self.shots:02d}-{name}.png"))

    @contextlib.contextmanager
    def flow(self, name: str) -> Iterator[None]:
        """Times a flow; on failure adds a screenshot, the Qwen output log and where both are."""
        start = time.monotonic()
        try:
            yield
        except Exception as error:
            self.failed = True
            self.shot(f"{name}-FAILED")
            raise AssertionError(
                f"{name} failed: {error}\nscreenshots: {self.artifacts}\nQwen output (end):\n{self.output_log()[-3000:]}"
            ) from error
        finally:
            self.timings[name] = time.monotonic() - start
            (self.artifacts / "timings.json").write_text(json.dumps(self.timings, indent=1))

    def output_log(self) -> str:
        """The extension's Output channel, from its log file (the Output view's text is out of order)."""
        logs = sorted(self.user_data.glob("logs/**/*Qwen*.log"))
        return "\n".join(p.read_text(errors="replace") for p in logs)

    def wait_for(self, what: str, predicate, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
            self.page.wait_for_timeout(250)

    def palette(self, command: str) -> None:
        self.page.keyboard.press("F1")
        self.page.locator(".quick-input-widget input").wait_for(state="visible")
        self.page.keyboard.type(command)
        self.page.locator(".quick-input-list .monaco-list-row.focused", has_text=command).wait_for(timeout=10_000)
        self.page.keyboard.press("Enter")

    def open_file(self, name: str, text: str) -> None:
        self.page.keyboard.press("Control+p")
        self.page.locator(".quick-input-widget input").wait_for(state="visible")
        self.page.keyboard.type(name)
        self.page.locator(".quick-input-list .monaco-list-row.focused", has_text=name).wait_for()
        self.page.keyboard.press("Enter")
        self.page.locator(".monaco-editor .view-lines", has_text=text).wait_for()

    def run_in_terminal(self, command: str, settle_ms: int = 300) -> None:
        """Type `command` into the terminal that "Focus on Terminal View" shows (a new one when none),
        after `settle_ms` for the shell's prompt and shell integration."""
        self.palette("Terminal: Focus on Terminal View")
        # Type only once the terminal has the keyboard: on a loaded machine the focus moves late, and
        # the keys would land in the editor instead (the command never runs, the buffer is changed).
        self.wait_for("the terminal to take the keyboard", lambda: self.page.evaluate(
            "() => !!document.activeElement && !!document.activeElement.closest('.terminal, .xterm')"), 15)
        self.page.wait_for_timeout(settle_ms)
        self.page.keyboard.type(command + "\n")

    def quick_fix(self, title: str) -> None:
        """Ctrl+. and the first action whose title has `title`, chosen with the keyboard (an overlay
        takes mouse clicks on the rows)."""
        self.page.keyboard.press("Control+.")
        menu = self.page.locator(".action-widget")
        menu.locator(".monaco-list-row", has_text=title).first.wait_for()
        self.shot("quick-fix-menu")
        for _ in range(10):
            if title in menu.locator(".monaco-list-row.focused").inner_text():
                break
            self.page.keyboard.press("ArrowDown")
        self.page.keyboard.press("Enter")

    def go_to_line(self, line: int) -> None:
        self.page.keyboard.press("Control+g")
        self.page.locator(".quick-input-widget input").wait_for(state="visible")
        self.page.keyboard.type(str(line))
        self.page.keyboard.press("Enter")

    def notifications(self) -> list[str]:
        return self.page.locator(".notification-list-item-message").all_inner_texts()

    def notification(self, text: str, timeout: float = 60) -> str:
        self.wait_for(f"a notification with {text!r}", lambda: any(text in n for n in self.notifications()), timeout)
        return next(n for n in self.notifications() if text in n)

    def clear_notifications(self) -> None:
        self.palette("Notifications: Clear All Notifications")

    def status_item(self):
        """The extension's status bar item (not the client's progress item, which also says "Qwen")."""
        return self.page.locator("[id='qwen-lsp.qwen-lsp.qwen.status']")

    def status_icon(self) -> str:
        """The codicon of the Qwen status bar item (sparkle = ready, loading = starting/busy)."""
        icon = self.status_item().locator(".codicon").first
        classes = icon.get_attribute("class") or "" if icon.count() else ""
        return next((c.removeprefix("codicon-") for c in classes.split() if c.startswith("codicon-")), "")


@pytest.fixture(scope="module")
def vsix() -> Path:
    """The extension packaged from this tree (compile, then `npm run package`, as the extension tests do)."""
    npm = shutil.which("npm")
    assert npm
    if not (VSCODE / "node_modules").is_dir():
        run_suite([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=VSCODE, timeout=600)
    run_suite([npm, "run", "compile"], cwd=VSCODE, timeout=300)
    run_suite([npm, "run", "package"], cwd=VSCODE, timeout=300)
    return VSCODE / "qwen-lsp.vsix"


@pytest.fixture(scope="module")
def session(vsix: Path) -> Iterator[Session]:
    from playwright.sync_api import sync_playwright

    root = Path(tempfile.mkdtemp(prefix="qwen-vscode-real-"))
    session: Session | None = None
    artifacts, user_data, extensions, project, home = (root / d for d in ("artifacts", "user-data", "extensions", "project", "home"))
    for d in (artifacts, user_data / "User", extensions, project, home):
        d.mkdir(parents=True)
    (project / "app.py").write_text(APP)
    (project / "report.py").write_text(REPORT)
    (project / "calc.py").write_text(CALC)  # before start: quick open's file list is read then
    (project / "util.py").write_text(UTIL)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)

    double = VLLMDouble().start()
    attacker = VLLMDouble().start()
    marker, program = root / "MARKER-RAN", root / "workspace-program"
    program.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    program.chmod(0o755)
    (project / ".vscode").mkdir()
    (project / ".vscode" / "settings.json").write_text(json.dumps({  # what a cloned repository may ship
        "qwen.baseUrl": attacker.base_url,
        "qwen.model": "attacker-model",
        "qwen.server.command": [str(program)],
        "qwen.server.pythonPath": str(program),
    }))
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),  # the language server the extension starts imports this tree
        "SHELL": "/bin/bash",
        "HOME": str(home),
        # qwen-lsp's plan cache (and code-server's own state) in the test's dir: a cache hit from the
        # real home would never ask the scripted double.
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
    }
    (user_data / "User" / "settings.json").write_text(json.dumps({
        "qwen.server.pythonPath": sys.executable,
        "qwen.baseUrl": double.base_url,
        "security.workspace.trust.enabled": False,
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": False,
        "telemetry.telemetryLevel": "off",
        "terminal.integrated.shellIntegration.enabled": True,
        "extensions.autoCheckUpdates": False,
        "extensions.autoUpdate": False,
        "chat.commandCenter.enabled": False,
    }))
    dirs = ["--user-data-dir", str(user_data), "--extensions-dir", str(extensions)]
    install = subprocess.run([CODE_SERVER, *dirs, "--install-extension", str(vsix)],
                             env=env, capture_output=True, text=True, timeout=120)
    assert install.returncode == 0, install.stdout + install.stderr

    port = _free_port()
    server = subprocess.Popen(
        [CODE_SERVER, *dirs, "--bind-addr", f"127.0.0.1:{port}", "--auth", "none", "--disable-telemetry",
         "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override", str(project)],
        env=env, stdout=(root / "code-server.log").open("w"), stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).read()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, (root / "code-server.log").read_text()
                time.sleep(0.3)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(30_000)
            page.goto(f"http://127.0.0.1:{port}/?folder={project}")
            session = Session(page, artifacts, user_data, double, project, attacker, marker)
            yield session
            browser.close()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, 15)
        server.wait(timeout=30)
        double.stop()
        attacker.stop()
    if session is not None:
        print("\nflow timings (s):", json.dumps({k: round(v, 1) for k, v in session.timings.items()}))
        if session.failed or os.environ.get("QWEN_LSP_KEEP_SCREENSHOTS"):
            print(f"screenshots and logs kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def test_activates_and_says_ready(session: Session) -> None:
    with session.flow("activation"):
        session.page.locator(".monaco-workbench").wait_for(timeout=60_000)
        session.shot("workbench-loaded")
        session.wait_for("the Qwen status item to say ready", lambda: session.status_icon() == "sparkle", 60)
        session.shot("qwen-ready")
        assert "Starting" in session.output_log()  # the extension started the server and logged how


def test_terminal_failure_becomes_a_diagnostic_and_quick_fix_fixes_the_file(session: Session) -> None:
    page, app = session.page, session.project / "app.py"
    session.double.script(*FIX)
    with session.flow("terminal-failure-to-fix"):
        page.keyboard.press("Control+p")
        page.locator(".quick-input-widget input").wait_for(state="visible")
        page.keyboard.type("app.py")
        page.locator(".quick-input-list .monaco-list-row.focused", has_text="app.py").wait_for()
        page.keyboard.press("Enter")
        page.locator(".monaco-editor .view-lines", has_text="assert add").wait_for()
        session.shot("app-open")

        session.palette("Terminal: Create New Terminal")
        page.locator(".terminal-wrapper.active, .terminal.xterm").first.wait_for()
        session.run_in_terminal("python3 app.py", settle_ms=1500)  # a new shell: its prompt and shell integration
        session.wait_for("the qwen diagnostic (a red squiggle)", lambda: page.locator(".squiggly-error").count() > 0, 60)
        session.shot("diagnostic-from-terminal")

        page.locator(".monaco-editor .view-lines", has_text="assert add").click()
        session.go_to_line(5)
        page.keyboard.press("Control+.")
        menu = page.locator(".action-widget")
        menu.wait_for()
        menu.locator(".monaco-list-row", has_text="Fix with Qwen").first.wait_for()
        session.shot("quick-fix-menu")
        for _ in range(10):  # the keyboard, not the mouse: an overlay takes clicks on the rows
            if "Fix with Qwen" in menu.locator(".monaco-list-row.focused").inner_text():
                break
            page.keyboard.press("ArrowDown")
        page.keyboard.press("Enter")

        session.wait_for("app.py fixed on disk", lambda: "return a + b" in app.read_text(), 60)
        session.shot("fixed")
        message = session.notification("Fixed app.py")
        assert "✓ parses" in message and "python3 app.py" in message, message
        # The failure's diagnostic no longer shows as an error: fixed, pending a re-run.
        session.wait_for("the red squiggle to turn into 'fixed, re-run'",
                         lambda: page.locator(".squiggly-error").count() == 0 and page.locator(".squiggly-info").count() > 0)
        session.shot("fixed-message-and-pending-diagnostic")

    with session.flow("re-run-from-the-message"):
        toast = page.locator(".notification-toast", has_text="Fixed app.py")
        toast.locator(".monaco-button", has_text="Re-run python3 app.py").click()
        # It runs in the terminal and passes (exit 0: the only way the server clears that run's diagnostics).
        session.wait_for("the diagnostics to clear after the passing re-run",
                         lambda: page.locator(".squiggly-error, .squiggly-info").count() == 0, 60)
        session.shot("re-run-passed")


def test_the_workspace_settings_chose_neither_the_model_server_nor_the_program(session: Session) -> None:
    """After activation and a fix: the prompts went to the user's server only, and the extension
    started the user's Python, never the program the workspace's .vscode/settings.json names."""
    with session.flow("workspace-settings-ignored"):
        assert session.double.chat_requests(), "the fix did not reach the user's model server"
        assert session.attacker.requests == [], "a request reached the server the workspace named"
        assert not session.marker.exists(), "the program the workspace named ran"
        assert f"Starting {sys.executable} -m qwen_lsp.cli" in session.output_log()


def test_a_suggested_command_runs_only_after_the_user_confirms_it(session: Session) -> None:
    page, project = session.page, session.project
    session.double.script(
        Reply(reasoning="out/report.txt does not exist.", content=json.dumps({**PLAN, "evidence": [], "steps": ["create it"]})),
        Reply(tool_calls=[("suggest_command", {"command": "mkdir -p out && touch out/report.txt",
                                               "reason": "report.py reads out/report.txt"})]),
        Reply(tool_calls=[("finish", {"summary": "create the report file"})]),
    )
    with session.flow("suggestion-confirmation"):
        session.open_file("report.py", "read_text")
        session.run_in_terminal("python3 report.py")
        session.wait_for("the FileNotFoundError diagnostic", lambda: page.locator(".squiggly-error").count() > 0, 60)
        page.locator(".monaco-editor .view-lines", has_text="read_text").click()
        session.go_to_line(3)
        session.quick_fix("Fix with Qwen")
        dialog = page.locator(".monaco-dialog-box")
        dialog.wait_for(timeout=60_000)
        session.shot("confirmation-dialog")
        assert "mkdir -p out && touch out/report.txt" in dialog.inner_text() and "modifies files" in dialog.inner_text()
        assert not (project / "out").exists()  # nothing ran before the user's click
        dialog.locator(".monaco-button", has_text="Run").first.click()
        session.wait_for("the confirmed command to run", lambda: (project / "out" / "report.txt").exists(), 30)
        session.shot("suggestion-ran")


def test_ask_and_explain_on_a_selection(session: Session) -> None:
    page = session.page
    session.double.script(
        Reply(reasoning="Swap the operands as asked.", content=json.dumps({**PLAN, "steps": ["return b + a"]})),
        Reply(tool_calls=[("read_file", {"path": "app.py"})]),
        Reply(tool_calls=[("edit_file", {"path": "app.py", "old_string": "return a + b", "new_string": "return b + a"})]),
        Reply(tool_calls=[("finish", {"summary": "add() returns b + a"})]),
    )
    with session.flow("ask-on-selection"):
        session.open_file("app.py", "assert add")
        session.go_to_line(1)
        page.keyboard.press("Shift+ArrowDown")
        page.keyboard.press("Shift+End")
        session.palette("Qwen: Ask about selection")
        page.locator(".quick-input-widget input").wait_for(state="visible")
        page.keyboard.type("put b first")
        session.shot("ask-instruction")
        page.keyboard.press("Enter")
        page.locator(".monaco-editor .view-lines", has_text="return b + a").wait_for(timeout=60_000)
        session.notification("add() returns b + a")
        session.shot("ask-applied")

    session.double.script(Reply(content="add() returns the sum of its arguments."))
    with session.flow("explain-on-selection"):
        session.go_to_line(1)
        page.keyboard.press("Shift+ArrowDown")
        page.keyboard.press("Shift+End")
        session.quick_fix("Explain with Qwen")
        session.notification("add() returns the sum of its arguments.")
        session.shot("explained")


def test_model_server_down_gives_one_message_and_the_extension_keeps_working(session: Session) -> None:
    page, double = session.page, session.double
    with session.flow("model-server-down"):
        session.clear_notifications()
        double.stop()
        session.palette("Qwen: Review file")
        session.notification("Cannot reach the model server", 90)
        page.wait_for_timeout(2000)  # a second message would come now
        session.shot("server-down-message")
        messages = [n for n in session.notifications() if "Qwen" in n]
        assert len(messages) == 1, messages
        assert session.status_icon() != "circle-slash", "the language server stopped"

        double.start()  # the same port: the model server is back
        double.script(Reply(content=json.dumps({"findings": []})))
        session.clear_notifications()
        session.palette("Qwen: Review file")
        session.notification("Qwen review:")
        session.shot("review-after-recovery")


def test_cancel_while_a_fix_runs_leaves_the_file_alone_and_the_next_fix_works(session: Session) -> None:
    page, double, calc = session.page, session.double, session.project / "calc.py"
    plan = {**PLAN, "hypotheses": ["mul() adds"], "evidence": [], "steps": ["return a * b"]}
    # ~50 s of streamed thinking unless the client closes the stream first.
    double.script(Reply(reasoning="thinking " * 200, content=json.dumps(plan), chunk_delay=0.25))
    with session.flow("cancel-while-fixing"):
        session.clear_notifications()
        session.open_file("calc.py", "assert mul")
        session.run_in_terminal("python3 calc.py")
        session.wait_for("the AssertionError diagnostic", lambda: page.locator(".squiggly-error").count() > 0, 60)
        page.locator(".monaco-editor .view-lines", has_text="assert mul").click()
        session.go_to_line(5)
        requests, aborted = len(double.chat_requests()), double.aborted_streams
        session.quick_fix("Fix with Qwen")
        session.wait_for("the model call", lambda: len(double.chat_requests()) > requests, 60)
        session.wait_for("the busy status", lambda: session.status_icon() == "loading", 10)
        session.shot("fixing")
        session.status_item().click()  # busy: the item runs Qwen: Cancel
        session.wait_for("the model stream to be closed", lambda: double.aborted_streams > aborted, 15)
        session.wait_for("the status to say ready again", lambda: session.status_icon() == "sparkle", 15)
        page.wait_for_timeout(2000)  # a late message, edit or model request would come now
        session.shot("cancelled")
        assert calc.read_text() == CALC, "the cancelled fix changed calc.py"
        assert len(double.chat_requests()) == requests + 1, "a model request after the cancel"
        assert not [n for n in session.notifications() if "Qwen" in n or "rror" in n], session.notifications()

    double.script(
        Reply(reasoning="mul() adds.", content=json.dumps(plan)),
        Reply(tool_calls=[("edit_file", {"path": "calc.py", "old_string": "return a + b", "new_string": "return a * b"})]),
        Reply(tool_calls=[("finish", {"summary": "mul() now multiplies"})]),
    )
    with session.flow("fix-after-cancel"):
        page.locator(".monaco-editor .view-lines", has_text="assert mul").click()
        session.go_to_line(5)
        session.quick_fix("Fix with Qwen")
        session.wait_for("calc.py fixed on disk", lambda: "return a * b" in calc.read_text(), 60)
        session.notification("Fixed calc.py")
        session.shot("fixed-after-cancel")


def test_a_palette_fix_is_cancelled_from_its_notification(session: Session) -> None:
    page, double, calc = session.page, session.double, session.project / "calc.py"
    double.script(Reply(reasoning="thinking " * 200, content=json.dumps(PLAN), chunk_delay=0.25))
    with session.flow("cancel-from-the-notification"):
        session.clear_notifications()
        session.open_file("calc.py", "assert mul")
        before = calc.read_text()
        session.go_to_line(2)
        requests, aborted = len(double.chat_requests()), double.aborted_streams
        session.palette("Qwen: Fix")
        toast = page.locator(".notification-toast", has_text="Qwen is fixing")
        toast.wait_for()
        session.wait_for("the model call", lambda: len(double.chat_requests()) > requests, 60)
        session.shot("fixing-notification")
        toast.locator(".monaco-button", has_text="Cancel").click()
        session.wait_for("the model stream to be closed", lambda: double.aborted_streams > aborted, 15)
        session.wait_for("the status to say ready again", lambda: session.status_icon() == "sparkle", 15)
        page.wait_for_timeout(2000)  # a late message, edit or model request would come now
        session.shot("cancelled-from-notification")
        assert calc.read_text() == before
        assert len(double.chat_requests()) == requests + 1, "a model request after the cancel"
        assert not [n for n in session.notifications() if "Qwen" in n or "rror" in n], session.notifications()


def shown(editor) -> str:
    """The editor's text as shown: Monaco renders spaces as no-break spaces."""
    return editor.inner_text().replace("\xa0", " ")


def test_an_ai_comment_gets_a_hint_and_its_quick_fix_does_it(session: Session) -> None:
    page, util = session.page, session.project / "util.py"
    plan = {"hypotheses": [], "evidence": [], "steps": ["return None for []"], "verify_command": None}
    session.double.script(
        Reply(reasoning="An empty list has no first item.", content=json.dumps(plan)),
        Reply(tool_calls=[("edit_file", {"path": "util.py", "old_string": "return xs[0]",
                                         "new_string": "return xs[0] if xs else None"})]),
        Reply(tool_calls=[("finish", {"summary": "first() handles []"})]),
    )
    with session.flow("ai-comment"):
        session.wait_for("the Qwen status item to say ready", lambda: session.status_icon() == "sparkle", 60)
        requests = len(session.double.chat_requests())
        session.open_file("util.py", "handle the empty list")
        session.wait_for("the hint on the comment (dots under it)", lambda: page.locator(".squiggly-hint").count() > 0, 60)
        session.shot("ai-comment-hint")
        assert len(session.double.chat_requests()) == requests  # a marked comment alone runs nothing
        editor = page.locator(".monaco-editor .view-lines", has_text="def first")
        editor.click()
        session.go_to_line(2)
        session.quick_fix("Do it with Qwen")
        session.wait_for("the instruction done and its comment gone",
                         lambda: "if xs else None" in shown(editor) and "qwen:" not in shown(editor), 60)
        session.shot("ai-comment-done")
        page.keyboard.press("Control+s")
        session.wait_for("util.py saved", lambda: util.read_text() == "def first(xs):\n    return xs[0] if xs else None\n", 30)
