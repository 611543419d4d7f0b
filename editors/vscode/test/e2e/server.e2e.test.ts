import "../fake/register"; // the extension's own runInTerminal is used on what the server sends
// End to end: the real qwen-lsp server, the vLLM test double, a real buggy project and a real
// failing pytest run, driven over stdio with vscode-jsonrpc the way the VS Code client does.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, describe, it } from "node:test";
import { review } from "../../src/commands";
import { RUN, runInTerminal } from "../../src/runInTerminal";
import { FakeTerminal, Selection, Position, Uri, fake, window } from "../fake/vscode";
import { applyTextEdits, type TextEdit } from "./applyEdits";
import { LspSession, python, startDouble, withTimeout, type Double, type Raw } from "./harness";

const BUGGY = "def add(a, b):\n    total = a + c\n    return total\n";
const FIXED = "def add(a, b):\n    total = a + b\n    return total\n";
const TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";
const PLAN = {
  hypotheses: ["add() uses an undefined name c instead of b"],
  evidence: [{ path: "calc.py", start_line: 2, end_line: 2, reason: "NameError: name 'c' is not defined" }],
  steps: ["use b in add"],
  verify_command: null,
};
const FIX_SCRIPT = [
  { reasoning: "The traceback points at calc.py line 2: c is undefined; b was meant.", content: JSON.stringify(PLAN) },
  { tool_calls: [{ name: "read_file", arguments: { path: "calc.py" } }] },
  { tool_calls: [{ name: "edit_file", arguments: { path: "calc.py", old_string: "total = a + c", new_string: "total = a + b" } }] },
  { tool_calls: [{ name: "finish", arguments: { summary: "add() now adds b" } }] },
];
const VERSION = 7; // any version: the edit must carry back the one the engine read

describe("qwen-lsp over stdio (vscode-jsonrpc) against the vLLM double", () => {
  let work: string;
  let project: string;
  let calc: string;
  let calcUri: string;
  let double: Double;
  let lsp: LspSession;
  let pytestCommand: string;
  let capabilities: Raw;

  before(async () => {
    work = mkdtempSync(path.join(tmpdir(), "qwen-vscode-e2e-"));
    project = path.join(work, "proj");
    mkdirSync(project);
    calc = path.join(project, "calc.py");
    calcUri = pathToFileURL(calc).href;
    writeFileSync(calc, BUGGY);
    writeFileSync(path.join(project, "test_calc.py"), TEST);
    pytestCommand = `${python()} -m pytest -q -p no:cacheprovider test_calc.py`;

    double = await startDouble();
    lsp = new LspSession(["-m", "qwen_lsp.cli"], { QWEN_LSP_CACHE_DIR: path.join(work, "cache-env") }, project);
    const init = await withTimeout(
      lsp.connection.sendRequest("initialize", {
        processId: process.pid,
        clientInfo: { name: "qwen-vscode-e2e" },
        rootUri: pathToFileURL(project).href,
        workspaceFolders: [{ uri: pathToFileURL(project).href, name: "proj" }],
        initializationOptions: { baseUrl: double.baseUrl, cacheDir: path.join(work, "cache"), maxRetries: 0 },
        capabilities: {
          workspace: {
            applyEdit: true,
            configuration: true,
            workspaceFolders: true,
            workspaceEdit: { documentChanges: true, changeAnnotationSupport: { groupsOnLabel: true } },
            executeCommand: {},
          },
          textDocument: {
            synchronization: { didSave: true },
            publishDiagnostics: { relatedInformation: true, versionSupport: true },
            codeAction: {
              codeActionLiteralSupport: {
                codeActionKind: { valueSet: ["", "quickfix", "refactor", "refactor.rewrite", "source"] },
              },
              resolveSupport: { properties: ["edit"] },
              dataSupport: true,
            },
          },
          window: { workDoneProgress: true, showMessage: {} },
        },
      }),
      60_000,
      "initialize",
    );
    capabilities = (init as Raw).capabilities;
    assert.ok(capabilities.codeActionProvider?.resolveProvider, "the server must offer lazily resolved code actions");
    await lsp.connection.sendNotification("initialized", {});
    await lsp.connection.sendNotification("textDocument/didOpen", {
      textDocument: { uri: calcUri, languageId: "python", version: VERSION, text: BUGGY },
    });
  });

  after(async () => {
    await lsp?.shutdown();
    await double?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it("advertises no client command (VS Code's client would fail to register it twice)", () => {
    const advertised: string[] = capabilities.executeCommandProvider?.commands ?? [];
    for (const command of ["qwen.runInTerminal", "qwen.ask"]) {
      assert.ok(!advertised.includes(command), `the server advertises the client command ${command}`);
    }
  });

  it("advertises every server command of docs/protocol.md", () => {
    const advertised: string[] = capabilities.executeCommandProvider?.commands ?? [];
    for (const command of ["qwen.server.ask", "qwen.server.explain", "qwen.server.review", "qwen.server.fix"]) {
      assert.ok(advertised.includes(command), `${command} is not among ${JSON.stringify(advertised)}`);
    }
  });

  it("turns a failing terminal command into diagnostics, then fixes the file with the code action", async (t) => {
    const started = Date.now();
    const lap = (what: string) => t.diagnostic(`${what} at ${Date.now() - started} ms`);
    const run = spawnSync(python(), ["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_calc.py"], {
      cwd: project,
      encoding: "utf8",
    });
    assert.notEqual(run.status, 0, "the project's test must fail before the fix");
    assert.match(run.stdout, /NameError/);

    lap("pytest ran");
    await double.script(FIX_SCRIPT);
    const from = lsp.notifications.length;
    await lsp.connection.sendNotification("qwen/terminalOutput", {
      command: pytestCommand,
      exitCode: run.status,
      output: run.stdout + run.stderr,
      cwd: project,
    });
    const published = await lsp.waitFor(
      "textDocument/publishDiagnostics",
      (p) => p.uri === calcUri && p.diagnostics.length > 0,
      30_000,
      from,
    );
    lap("diagnostics published");
    const diagnostic = published.diagnostics.find((d: Raw) => d.source === "qwen");
    assert.ok(diagnostic, `a diagnostic with source qwen: ${JSON.stringify(published)}`);
    assert.equal(diagnostic.range.start.line, 1, "at calc.py line 2, where the traceback points");
    assert.match(diagnostic.message, /NameError/);

    const actions = (await lsp.connection.sendRequest("textDocument/codeAction", {
      textDocument: { uri: calcUri },
      range: diagnostic.range,
      context: { diagnostics: [diagnostic], triggerKind: 1 },
    })) as Raw[];
    const fix = actions.find((a) => a.kind === "quickfix" && String(a.title).startsWith("Fix with Qwen"));
    assert.ok(fix, `a "Fix with Qwen" quickfix among ${JSON.stringify(actions.map((a) => a.title))}`);
    assert.equal(fix.edit, undefined, "the edit is computed lazily, on resolve");

    const resolved = (await withTimeout(
      lsp.connection.sendRequest("codeAction/resolve", fix),
      90_000,
      "codeAction/resolve",
    )) as Raw;
    lap(`code action resolved: "${resolved.title}"`);
    const changes = resolved.edit?.documentChanges as Raw[] | undefined;
    assert.ok(changes && changes.length === 1, `one document change: ${JSON.stringify(resolved.edit)}`);
    const [change] = changes;
    assert.deepEqual(change.textDocument, { uri: calcUri, version: VERSION });
    for (const edit of change.edits) {
      assert.ok(edit.annotationId === undefined || edit.annotationId in (resolved.edit.changeAnnotations ?? {}));
    }
    assert.ok(!String(resolved.title).startsWith("Fix with Qwen:"), `the resolved title says what was validated: ${resolved.title}`);
    assert.match(resolved.title, /✓/);

    writeFileSync(calc, applyTextEdits(readFileSync(calc, "utf8"), change.edits as TextEdit[]));
    assert.equal(readFileSync(calc, "utf8"), FIXED);
    const rerun = spawnSync(python(), ["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_calc.py"], { cwd: project });
    assert.equal(rerun.status, 0, "the fixed project's test passes");

    // The server said what it was doing, and is idle again.
    const states = lsp.notifications.slice(from).filter((n) => n.method === "qwen/status").map((n) => n.params.state);
    assert.ok(states.includes("busy"), `qwen/status busy during the fix: ${states}`);
    assert.equal(states.at(-1), "idle");
  });

  it("clears the command's diagnostics when it succeeds (exit 0)", async () => {
    const from = lsp.notifications.length;
    await lsp.connection.sendNotification("qwen/terminalOutput", { command: pytestCommand, exitCode: 0, output: "", cwd: project });
    await lsp.waitFor("textDocument/publishDiagnostics", (p) => p.uri === calcUri && p.diagnostics.length === 0, 30_000, from);
  });

  it("runs qwen.server.ask and applies the result with a versioned workspace/applyEdit", async () => {
    const text = readFileSync(calc, "utf8");
    await lsp.connection.sendNotification("textDocument/didChange", {
      textDocument: { uri: calcUri, version: VERSION + 1 },
      contentChanges: [{ text }],
    });
    await double.script([
      { reasoning: "Add a docstring.", content: JSON.stringify({ ...PLAN, steps: ["add a docstring"] }) },
      {
        tool_calls: [
          {
            name: "edit_file",
            arguments: { path: "calc.py", old_string: "def add(a, b):\n", new_string: 'def add(a, b):\n    """Sum of a and b."""\n' },
          },
        ],
      },
      { tool_calls: [{ name: "finish", arguments: { summary: "documented add()" } }] },
    ]);
    const applied: Raw[] = [];
    lsp.onApplyEdit = async (edit) => {
      applied.push(edit);
      const [change] = edit.documentChanges;
      writeFileSync(calc, applyTextEdits(readFileSync(calc, "utf8"), change.edits));
      return true;
    };
    const result = (await withTimeout(
      lsp.connection.sendRequest("workspace/executeCommand", {
        command: "qwen.server.ask",
        arguments: [
          {
            uri: calcUri,
            range: { start: { line: 0, character: 0 }, end: { line: 2, character: 16 } },
            instruction: "add a docstring",
          },
        ],
      }),
      90_000,
      "qwen.server.ask",
    )) as Raw;
    assert.equal(applied.length, 1, "one workspace/applyEdit");
    assert.deepEqual(applied[0].documentChanges[0].textDocument, { uri: calcUri, version: VERSION + 1 });
    assert.equal(result.applied, true, JSON.stringify(result));
    assert.equal(typeof result.summary, "string");
    assert.equal(readFileSync(calc, "utf8"), 'def add(a, b):\n    """Sum of a and b."""\n    total = a + b\n    return total\n');
  });

  it("a fix that needs a shell command resolves to qwen.runInTerminal, which runs it only when confirmed", async () => {
    const check = path.join(project, "check.py");
    writeFileSync(check, 'import os\n\nassert os.path.exists("suggested.marker"), "suggested.marker is missing"\n');
    const checkUri = pathToFileURL(check).href;
    await lsp.connection.sendNotification("textDocument/didOpen", {
      textDocument: { uri: checkUri, languageId: "python", version: 1, text: readFileSync(check, "utf8") },
    });
    const run = spawnSync(python(), ["check.py"], { cwd: project, encoding: "utf8" });
    assert.equal(run.status, 1);
    await double.script([
      { reasoning: "A file is missing; nothing to edit.", content: JSON.stringify({ ...PLAN, steps: ["create it"] }) },
      {
        tool_calls: [
          { name: "suggest_command", arguments: { command: "touch suggested.marker", reason: "the check wants this file" } },
          { name: "finish", arguments: { summary: "needs a file the user must create" } },
        ],
      },
    ]);
    const from = lsp.notifications.length;
    await lsp.connection.sendNotification("qwen/terminalOutput", {
      command: `${python()} check.py`,
      exitCode: run.status,
      output: run.stderr,
      cwd: project,
    });
    const published = await lsp.waitFor("textDocument/publishDiagnostics", (p) => p.uri === checkUri && p.diagnostics.length > 0, 30_000, from);
    const actions = (await lsp.connection.sendRequest("textDocument/codeAction", {
      textDocument: { uri: checkUri },
      range: published.diagnostics[0].range,
      context: { diagnostics: published.diagnostics, triggerKind: 1 },
    })) as Raw[];
    const fix = actions.find((a) => String(a.title).startsWith("Fix with Qwen"));
    const resolved = (await withTimeout(lsp.connection.sendRequest("codeAction/resolve", fix), 90_000, "codeAction/resolve")) as Raw;
    assert.equal(resolved.edit, undefined, "nothing to edit");
    assert.equal(resolved.command?.command, "qwen.runInTerminal", JSON.stringify(resolved));

    // What VS Code does with the command: the extension's handler, with the fake vscode module.
    fake.reset();
    const terminal = new FakeTerminal("bash", true);
    window.activeTerminal = terminal;
    fake.answers.push(undefined); // cancelled first
    assert.equal(await runInTerminal(resolved.command.arguments[0]), false);
    assert.deepEqual(terminal.executed, []);
    fake.answers.push(RUN);
    assert.equal(await runInTerminal(resolved.command.arguments[0]), true);
    assert.deepEqual(terminal.executed, ["touch suggested.marker"]);
    assert.match(fake.dialogs[1].message, /modifies files/);
    assert.match(String((fake.dialogs[1].options as { detail: string }).detail), /the check wants this file/);
  });

  it("Qwen: Review file runs qwen.server.review; the findings arrive as qwen-review diagnostics", async () => {
    await double.script([
      {
        content: JSON.stringify({
          findings: [{ path: "calc.py", line: 2, severity: "warning", category: "bug", message: "add() ignores overflow" }],
        }),
      },
    ]);
    fake.reset();
    window.activeTextEditor = {
      selection: new Selection(new Position(0, 0), new Position(0, 0)),
      document: { uri: Uri.parse(calcUri) },
    };
    const from = lsp.notifications.length;
    await withTimeout(review((command, arg) => lsp.connection.sendRequest("workspace/executeCommand", { command, arguments: [arg] })), 60_000, "review");
    assert.match(fake.dialogs[0]?.message ?? "", /1 finding/, JSON.stringify(fake.dialogs));
    const published = await lsp.waitFor(
      "textDocument/publishDiagnostics",
      (p) => p.uri === calcUri && p.diagnostics.some((d: Raw) => d.source === "qwen-review"),
      30_000,
      from,
    );
    const finding = published.diagnostics.find((d: Raw) => d.source === "qwen-review");
    assert.equal(finding.message.includes("add() ignores overflow"), true, finding.message);
  });
});
