import "../fake/register";
import assert from "node:assert/strict";
import { beforeEach, describe, it } from "node:test";
import type * as vscode from "vscode";
import { FIX_APPLIED_COMMAND, FixFeedback, checksOf, fixedMessage, type AppliedFix } from "../../src/fixFeedback";
import { DiagnosticSeverity, FakeTerminal, Position, Range, Uri, fake, window } from "../fake/vscode";

const APP = Uri.file("/work/project/app.py");
const TITLE = "Fix AssertionError (✓ parses, ✓ python3 app.py)";
const RUN = { run: "3f2a", command: "python3 app.py", exit_code: 1, cwd: "" };

/** Like the language client's ProtocolDiagnostic: a class of its own carrying the server's `data`. */
class ProtocolDiagnostic {
  source = "qwen";
  constructor(
    public range: Range,
    public message: string,
    public severity: DiagnosticSeverity,
    public data?: unknown,
  ) {}
}

function failure(data: unknown = RUN): vscode.Diagnostic {
  const range = new Range(new Position(4, 0), new Position(4, 40));
  return new ProtocolDiagnostic(range, "AssertionError: add(2, 3) should be 5", DiagnosticSeverity.Error, data) as unknown as vscode.Diagnostic;
}

/** A DiagnosticCollection reduced to what the module uses. */
function collection(initial: vscode.Diagnostic[]) {
  const shown = new Map<string, vscode.Diagnostic[]>([[APP.toString(), initial]]);
  return {
    shown,
    forEach: (fn: (uri: vscode.Uri, d: readonly vscode.Diagnostic[]) => void) =>
      shown.forEach((d, uri) => fn(Uri.parse(uri) as unknown as vscode.Uri, d)),
    set: (uri: vscode.Uri, d: vscode.Diagnostic[]) => void shown.set(uri.toString(), d),
  } as unknown as vscode.DiagnosticCollection & { shown: Map<string, vscode.Diagnostic[]> };
}

function resolvedFix(diagnostics: vscode.Diagnostic[], entries: [unknown, unknown[]][] = [[APP, [{}]]]) {
  return { title: TITLE, edit: { entries: () => entries as [vscode.Uri, unknown[]][] }, diagnostics } as {
    title: string;
    edit: { entries(): [vscode.Uri, unknown[]][] };
    diagnostics: vscode.Diagnostic[];
    command?: vscode.Command;
  };
}

const relative = (uri: vscode.Uri) => uri.fsPath.replace("/work/project/", "");

describe("feedback after a Qwen quick fix lands", () => {
  beforeEach(() => fake.reset());

  it("says what was applied and what was validated", () => {
    assert.equal(checksOf(TITLE), "✓ parses, ✓ python3 app.py");
    assert.equal(checksOf("Fix NameError (x) (✓ parses (all files))"), "✓ parses (all files)");
    assert.equal(checksOf("Fix NameError"), undefined);
    assert.equal(fixedMessage({ title: TITLE, files: ["app.py"], runs: [] }), "Fixed app.py (✓ parses, ✓ python3 app.py)");
    assert.equal(fixedMessage({ title: "Fix it", files: ["a.py", "b.py"], runs: [] }), "Fixed a.py, b.py");
  });

  it("gives a resolved fix with an edit the command VS Code runs after applying it", () => {
    const feedback = new FixFeedback(() => undefined, relative);
    const action = feedback.attach(resolvedFix([failure(), failure()]));
    assert.equal(action.command?.command, FIX_APPLIED_COMMAND);
    const [fix] = action.command?.arguments as [AppliedFix];
    assert.deepEqual(fix, { title: TITLE, files: ["app.py"], runs: [{ run: "3f2a", command: "python3 app.py", cwd: "" }] });
  });

  it("leaves alone an action without an edit (nothing to report) or with a command of its own", () => {
    const feedback = new FixFeedback(() => undefined, relative);
    assert.equal(feedback.attach(resolvedFix([failure()], [])).command, undefined);
    const own = { title: "x", command: "qwen.runInTerminal" };
    assert.equal(feedback.attach({ ...resolvedFix([failure()]), command: own }).command, own);
  });

  it("marks the run's diagnostics as fixed pending a re-run, keeps their data, and re-runs on request", async () => {
    const shown = collection([failure(), failure({ other: true })]);
    const feedback = new FixFeedback(() => shown, relative);
    const terminal = new FakeTerminal("bash", true);
    window.activeTerminal = terminal;
    fake.answers.push("Re-run python3 app.py");

    await feedback.applied({ title: TITLE, files: ["app.py"], runs: [{ run: "3f2a", command: "python3 app.py" }] });

    const [marked, foreign] = shown.shown.get(APP.toString()) ?? [];
    assert.equal(marked.severity, DiagnosticSeverity.Information);
    assert.match(marked.message, /^Fixed by Qwen, re-run `python3 app\.py` to check\. AssertionError/);
    assert.ok(marked instanceof ProtocolDiagnostic);
    assert.deepEqual((marked as unknown as { data: unknown }).data, RUN);
    assert.equal(foreign.severity, DiagnosticSeverity.Error); // not from that run: as the server sent it

    assert.deepEqual(fake.dialogs.map((d) => [d.kind, d.message, d.items]), [
      ["information", "Fixed app.py (✓ parses, ✓ python3 app.py)", ["Re-run python3 app.py"]],
    ]);
    assert.deepEqual(terminal.executed, ["python3 app.py"]);
  });

  it("keeps marking what the server republishes until the command runs again", async () => {
    const feedback = new FixFeedback(() => undefined, relative);
    fake.answers.push(undefined); // the message is dismissed: nothing runs
    const terminal = new FakeTerminal("bash", true);
    window.activeTerminal = terminal;
    await feedback.applied({ title: TITLE, files: ["app.py"], runs: [{ run: "3f2a", command: "python3 app.py" }] });
    assert.deepEqual(terminal.executed, []);

    const [again] = feedback.mark([failure()]);
    assert.equal(again.severity, DiagnosticSeverity.Information);
    assert.equal(feedback.mark(feedback.mark([failure()]))[0].message.match(/Fixed by Qwen/g)?.length, 1);

    feedback.commandRan("python3 app.py "); // it failed again: the server's new diagnostics stand
    const [fresh] = feedback.mark([failure()]);
    assert.equal(fresh.severity, DiagnosticSeverity.Error);
    assert.doesNotMatch(fresh.message, /Fixed by Qwen/);
  });

  it("without a run to repeat (a fix for another tool's diagnostic), only the message", async () => {
    const feedback = new FixFeedback(() => undefined, relative);
    await feedback.applied({ title: "Fix W9999 (✓ parses)", files: ["calc.py"], runs: [] });
    assert.deepEqual(fake.dialogs.map((d) => [d.message, d.items]), [["Fixed calc.py (✓ parses)", []]]);
  });
});
