// End to end: the real qwen-lsp server, the vLLM test double, a real buggy project and a real
// failing pytest run, driven over stdio with vscode-jsonrpc the way the VS Code client does.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, describe, it } from "node:test";
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

  // A known gap, reported: the server does not implement qwen.server.review yet. `todo` keeps
  // the failure visible in the output without failing the suite; drop it once the server has it.
  it("advertises every server command of docs/protocol.md", { todo: "server lacks qwen.server.review" }, () => {
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
});
