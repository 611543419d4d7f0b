import "../fake/register";
import assert from "node:assert/strict";
import { beforeEach, describe, it } from "node:test";
import { ask, fix, review } from "../../src/commands";
import { SERVER_COMMANDS } from "../../src/protocol";
import { Position, Range, Selection, Uri, fake, window } from "../fake/vscode";

const FILE = Uri.file("/proj/calc.py");

function editor(selection: Selection) {
  return {
    selection,
    document: {
      uri: FILE,
      lineAt: (line: number) => ({ range: new Range(new Position(line, 0), new Position(line, 17)) }),
    },
  };
}

function recorder(result: unknown = { applied: true, summary: "add now adds" }) {
  const calls: [string, unknown][] = [];
  const execute = async (command: string, arg: unknown) => {
    calls.push([command, arg]);
    return result;
  };
  return { calls, execute };
}

const RANGE = { start: { line: 1, character: 4 }, end: { line: 1, character: 17 } };

describe("qwen.ask", () => {
  beforeEach(() => fake.reset());

  it("asks for an instruction and passes it to qwen.server.ask with the code action's {uri, range}", async () => {
    const { calls, execute } = recorder();
    fake.answers.push("  handle negative numbers ");
    await ask(execute, { uri: FILE.toString(), range: RANGE });
    assert.equal(fake.dialogs[0].kind, "input");
    assert.deepEqual(calls, [[SERVER_COMMANDS.ask, { uri: FILE.toString(), range: RANGE, instruction: "handle negative numbers" }]]);
    assert.equal(fake.dialogs[1].kind, "information");
    assert.match(fake.dialogs[1].message, /add now adds/);
  });

  it("does nothing when the prompt is cancelled or left empty", async () => {
    const { calls, execute } = recorder();
    fake.answers.push(undefined, "   ");
    await ask(execute, { uri: FILE.toString(), range: RANGE });
    await ask(execute, { uri: FILE.toString(), range: RANGE });
    assert.deepEqual(calls, []);
  });

  it("from the palette, asks about the editor's selection", async () => {
    window.activeTextEditor = editor(new Selection(new Position(0, 0), new Position(2, 5)));
    const { calls, execute } = recorder();
    fake.answers.push("rename total to result");
    await ask(execute);
    assert.deepEqual(calls[0][1], {
      uri: FILE.toString(),
      range: { start: { line: 0, character: 0 }, end: { line: 2, character: 5 } },
      instruction: "rename total to result",
    });
  });

  it("says when the server made no change", async () => {
    const { execute } = recorder({ applied: false, summary: "the code already does that" });
    fake.answers.push("x");
    await ask(execute, { uri: FILE.toString(), range: RANGE });
    assert.equal(fake.dialogs[1].kind, "warning");
    assert.match(fake.dialogs[1].message, /already does that/);
  });
});

describe("qwen.fix and qwen.review", () => {
  beforeEach(() => fake.reset());

  it("fix sends the cursor line when nothing is selected", async () => {
    window.activeTextEditor = editor(new Selection(new Position(1, 3), new Position(1, 3)));
    const { calls, execute } = recorder();
    await fix(execute);
    assert.deepEqual(calls, [
      [
        SERVER_COMMANDS.fix,
        { uri: FILE.toString(), range: { start: { line: 1, character: 0 }, end: { line: 1, character: 17 } }, diagnostics: [] },
      ],
    ]);
  });

  it("fix sends the editor's diagnostics on those lines, from any extension, in LSP form", async () => {
    window.activeTextEditor = editor(new Selection(new Position(1, 3), new Position(1, 3)));
    const pylint = { range: new Range(new Position(1, 4), new Position(1, 9)), severity: 1, message: "unused", source: "pylint", code: { value: "W0612" } };
    const elsewhere = { range: new Range(new Position(5, 0), new Position(5, 1)), severity: 0, message: "far away", source: "x" };
    fake.diagnostics = [pylint, elsewhere];
    const { calls, execute } = recorder();
    await fix(execute);
    const sent = (calls[0][1] as { diagnostics: unknown[] }).diagnostics;
    assert.deepEqual(sent, [
      { range: { start: { line: 1, character: 4 }, end: { line: 1, character: 9 } }, severity: 2, message: "unused", source: "pylint", code: "W0612" },
    ]);
  });

  it("fix without an editor asks to open a file and sends nothing", async () => {
    const { calls, execute } = recorder();
    await fix(execute);
    assert.deepEqual(calls, []);
    assert.equal(fake.dialogs[0].kind, "warning");
  });

  it("review sends the file and reports the number of findings", async () => {
    window.activeTextEditor = editor(new Selection(new Position(0, 0), new Position(0, 0)));
    const { calls, execute } = recorder({ findings: 2 });
    await review(execute);
    assert.deepEqual(calls, [[SERVER_COMMANDS.review, { uri: FILE.toString() }]]);
    assert.match(fake.dialogs[0].message, /2 findings/);
  });

  it("review that did not happen (model server down) adds nothing to the server's own message", async () => {
    window.activeTextEditor = editor(new Selection(new Position(0, 0), new Position(0, 0)));
    await review(recorder({ findings: 0, reviewed: false }).execute);
    assert.deepEqual(fake.dialogs, []); // not a misleading "no findings"
  });

  it("turns a server error into an error message", async () => {
    window.activeTextEditor = editor(new Selection(new Position(0, 0), new Position(0, 0)));
    await fix(async () => {
      throw new Error("Request failed: model server unreachable");
    });
    assert.equal(fake.dialogs[0].kind, "error");
    assert.match(fake.dialogs[0].message, /model server unreachable/);
  });
});
