import "../fake/register";
import assert from "node:assert/strict";
import { beforeEach, describe, it, mock } from "node:test";
import { RUN, RUN_DESTRUCTIVE, SHELL_INTEGRATION_WAIT_MS, parseArgs, runInTerminal } from "../../src/runInTerminal";
import { FakeTerminal, events, fake, window } from "../fake/vscode";

const readOnly = { command: "git status", reason: "see what changed", risk: "read-only", dangers: [] };
const destructive = {
  command: "rm -rf build && git reset --hard",
  reason: "start from a clean tree",
  risk: "destructive",
  dangers: ["rm with -r/-f deletes files for good", "git reset --hard discards uncommitted work"],
};

function activeTerminal(): FakeTerminal {
  const terminal = new FakeTerminal("bash", true);
  window.activeTerminal = terminal;
  return terminal;
}

describe("qwen.runInTerminal", () => {
  beforeEach(() => fake.reset());

  it("asks first, then runs in the active terminal through shell integration", async () => {
    const terminal = activeTerminal();
    fake.answers.push(RUN);
    assert.equal(await runInTerminal(readOnly), true);
    assert.equal(fake.dialogs.length, 1);
    const [asked] = fake.dialogs;
    assert.equal(asked.kind, "information");
    assert.match(asked.message, /read-only/);
    assert.match(asked.message, /git status/);
    assert.deepEqual(asked.options, { modal: true, detail: "see what changed" });
    assert.deepEqual(asked.items, [RUN]);
    assert.deepEqual(terminal.executed, ["git status"]);
    assert.equal(terminal.shown, true);
  });

  it("runs nothing when the user cancels", async () => {
    const terminal = activeTerminal();
    fake.answers.push(undefined);
    assert.equal(await runInTerminal(readOnly), false);
    assert.deepEqual(terminal.executed, []);
    assert.deepEqual(terminal.sent, []);
    assert.equal(fake.terminals.length, 0);
  });

  it("labels a destructive command loudly, with its dangers, and needs the explicit button", async () => {
    const terminal = activeTerminal();
    fake.answers.push(undefined);
    assert.equal(await runInTerminal(destructive), false);
    const [asked] = fake.dialogs;
    assert.equal(asked.kind, "warning");
    assert.match(asked.message, /DESTRUCTIVE/);
    assert.deepEqual(asked.items, [RUN_DESTRUCTIVE]);
    const detail = (asked.options as { modal: boolean; detail: string }).detail;
    assert.equal((asked.options as { modal: boolean }).modal, true);
    assert.match(detail, /deletes files for good/);
    assert.match(detail, /discards uncommitted work/);
    assert.deepEqual(terminal.executed, []);

    fake.answers.push(RUN); // the ordinary button is not a confirmation of a destructive command
    assert.equal(await runInTerminal(destructive), false);
    assert.deepEqual(terminal.executed, []);

    fake.answers.push(RUN_DESTRUCTIVE);
    assert.equal(await runInTerminal(destructive), true);
    assert.deepEqual(terminal.executed, [destructive.command]);
  });

  it("treats an unknown risk label as destructive", async () => {
    activeTerminal();
    fake.answers.push(RUN);
    assert.equal(await runInTerminal({ ...readOnly, risk: "harmless, trust me" }), false);
    assert.deepEqual(fake.dialogs[0].items, [RUN_DESTRUCTIVE]);
  });

  it("warns (not informs) for commands that modify files or use the network", async () => {
    activeTerminal();
    fake.answers.push(undefined, undefined);
    await runInTerminal({ ...readOnly, command: "pip install requests", risk: "network" });
    await runInTerminal({ ...readOnly, command: "ruff format .", risk: "modifies files" });
    assert.deepEqual(
      fake.dialogs.map((d) => [d.kind, d.items]),
      [
        ["warning", [RUN]],
        ["warning", [RUN]],
      ],
    );
  });

  it("rejects a malformed argument without asking or running", async () => {
    activeTerminal();
    assert.equal(await runInTerminal({ reason: "no command" }), false);
    assert.equal(await runInTerminal(undefined), false);
    assert.deepEqual(
      fake.dialogs.map((d) => d.kind),
      ["error", "error"],
    );
  });

  it("opens a Qwen terminal when none is active", async () => {
    fake.answers.push(RUN);
    assert.equal(await runInTerminal(readOnly), true);
    assert.equal(fake.terminals.length, 1);
    assert.equal(fake.terminals[0].name, "Qwen");
    assert.deepEqual(fake.terminals[0].executed, ["git status"]);
  });

  it("waits for a new terminal's shell integration", async () => {
    fake.newTerminalsHaveShellIntegration = false;
    fake.answers.push(RUN);
    const running = runInTerminal(readOnly);
    await new Promise((resolve) => setImmediate(resolve));
    const [terminal] = fake.terminals;
    events.changeShellIntegration.fire({ terminal, shellIntegration: terminal.giveShellIntegration() });
    assert.equal(await running, true);
    assert.deepEqual(terminal.executed, ["git status"]);
    assert.deepEqual(terminal.sent, []);
  });

  it("types the command with sendText when the shell has no integration", async () => {
    mock.timers.enable({ apis: ["setTimeout"] });
    try {
      fake.newTerminalsHaveShellIntegration = false;
      fake.answers.push(RUN);
      const running = runInTerminal(readOnly);
      await new Promise((resolve) => setImmediate(resolve));
      mock.timers.tick(SHELL_INTEGRATION_WAIT_MS);
      assert.equal(await running, true);
      assert.deepEqual(fake.terminals[0].sent, ["git status\n"]);
      assert.equal(events.changeShellIntegration.listenerCount, 0);
    } finally {
      mock.timers.reset();
    }
  });
});

describe("parseArgs", () => {
  it("accepts the protocol's argument, also wrapped in an arguments array", () => {
    assert.deepEqual(parseArgs([readOnly]), readOnly);
    assert.deepEqual(parseArgs({ command: "ls" }), { command: "ls", reason: "", risk: "destructive", dangers: [] });
  });
});
