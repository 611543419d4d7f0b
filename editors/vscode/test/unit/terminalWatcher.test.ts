import "../fake/register";
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";
import type * as vscode from "vscode";
import type { TerminalOutputParams } from "../../src/protocol";
import { MAX_OUTPUT_CHARS, TerminalWatcher } from "../../src/terminalWatcher";
import { Uri, events, fake, workspace } from "../fake/vscode";

const PYTEST_OUTPUT =
  "\x1b]633;C\x07F\x1b[0m                                                        [100%]\r\n" +
  "test_calc.py:5: AssertionError\r\n" +
  "\x1b[31mFAILED test_calc.py::test_add - assert -1 == 5\x1b[0m\r\n";

/** A shell execution whose output stream yields `chunks`, then closes. */
function execution(command: string, chunks: string[], cwd: string | null = "/proj") {
  return {
    commandLine: { value: command, isTrusted: true, confidence: 2 },
    cwd: cwd === null ? undefined : Uri.file(cwd),
    read: async function* () {
      for (const chunk of chunks) {
        await new Promise((resolve) => setImmediate(resolve));
        yield chunk;
      }
    },
  };
}

describe("TerminalWatcher", () => {
  let sent: TerminalOutputParams[];
  let enabled: boolean;
  let watcher: TerminalWatcher;

  beforeEach(() => {
    fake.reset();
    sent = [];
    enabled = true;
    watcher = new TerminalWatcher((p) => sent.push(p), () => enabled);
  });
  afterEach(() => watcher.dispose());

  async function run(exec: ReturnType<typeof execution>, exitCode: number | undefined): Promise<void> {
    events.startExecution.fire({ execution: exec });
    await watcher.ended({ execution: exec, exitCode } as unknown as vscode.TerminalShellExecutionEndEvent);
  }

  it("sends a failing command's plain output as qwen/terminalOutput", async () => {
    await run(execution(" python -m pytest -q test_calc.py ", [PYTEST_OUTPUT.slice(0, 40), PYTEST_OUTPUT.slice(40)]), 1);
    assert.deepEqual(sent, [
      {
        command: "python -m pytest -q test_calc.py",
        exitCode: 1,
        output:
          "F                                                        [100%]\n" +
          "test_calc.py:5: AssertionError\n" +
          "FAILED test_calc.py::test_add - assert -1 == 5\n",
        cwd: "/proj",
      },
    ]);
  });

  it("sends nothing for a successful command that never failed", async () => {
    await run(execution("ls", ["a b c\r\n"]), 0);
    assert.deepEqual(sent, []);
  });

  it("after a failure, the same command's success clears (exit 0, no output)", async () => {
    await run(execution("pytest", ["boom\r\n"]), 2);
    await run(execution("pytest", ["ok\r\n"], "/elsewhere"), 0); // another directory: another command
    await run(execution("pytest", ["ok\r\n"]), 0);
    await run(execution("pytest", ["ok\r\n"]), 0); // already cleared
    assert.deepEqual(
      sent.map((p) => [p.exitCode, p.output, p.cwd]),
      [
        [2, "boom\n", "/proj"],
        [0, "", "/proj"],
      ],
    );
  });

  it("ignores executions whose exit code the shell did not report", async () => {
    await run(execution("make", ["error\r\n"]), undefined);
    assert.deepEqual(sent, []);
  });

  it("ignores executions it did not see start (their output was not read)", async () => {
    const exec = execution("make", ["error\r\n"]);
    await watcher.ended({ execution: exec, exitCode: 2 } as unknown as vscode.TerminalShellExecutionEndEvent);
    assert.deepEqual(sent, []);
  });

  it("sends nothing while reporting is switched off", async () => {
    enabled = false;
    await run(execution("make", ["error\r\n"]), 2);
    assert.deepEqual(sent, []);
  });

  it("keeps the end of very long output", async () => {
    const noise = "x".repeat(99) + "\n";
    const chunks = Array.from({ length: 3000 }, () => noise);
    chunks.push("Traceback (most recent call last):\n  File \"a.py\", line 1\nNameError: name 'y' is not defined\n");
    await run(execution("python a.py", chunks), 1);
    assert.equal(sent.length, 1);
    assert.ok(sent[0].output.length <= MAX_OUTPUT_CHARS);
    assert.ok(sent[0].output.endsWith("NameError: name 'y' is not defined\n"));
  });

  it("falls back to the workspace folder when the shell reports no cwd", async () => {
    workspace.workspaceFolders = [{ uri: Uri.file("/ws"), name: "ws", index: 0 }];
    await run(execution("false", [""], null), 1);
    assert.equal(sent[0].cwd, "/ws");
  });
});
