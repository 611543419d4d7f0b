// The manifest's promises: the VS Code range matches the client library and the APIs used.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

const ROOT = path.join(__dirname, "../../..");
const read = (file: string) => JSON.parse(readFileSync(path.join(ROOT, file), "utf8"));
const minimum = (range: string) => (/(\d+)\.(\d+)\.(\d+)/.exec(range) ?? []).slice(1).map(Number);
const atLeast = (a: number[], b: number[]) => a[0] !== b[0] ? a[0] > b[0] : a[1] !== b[1] ? a[1] > b[1] : a[2] >= b[2];

describe("package.json", () => {
  const manifest = read("package.json");

  it("engines.vscode is within what vscode-languageclient needs", () => {
    const client = read("node_modules/vscode-languageclient/package.json");
    assert.ok(atLeast(minimum(manifest.engines.vscode), minimum(client.engines.vscode)), `${manifest.engines.vscode} vs ${client.engines.vscode}`);
  });

  it("engines.vscode is 1.93 or later (the terminal shell-execution API) and matches @types/vscode", () => {
    assert.ok(atLeast(minimum(manifest.engines.vscode), [1, 93, 0]));
    // vsce refuses a @types/vscode newer than engines.vscode: we'd compile against APIs users lack.
    assert.deepEqual(minimum(read("node_modules/@types/vscode/package.json").version), minimum(manifest.engines.vscode));
  });

  it("contributes every command the extension registers", () => {
    const contributed = manifest.contributes.commands.map((c: { command: string }) => c.command);
    const source = readFileSync(path.join(ROOT, "src/extension.ts"), "utf8");
    const registered = [...source.matchAll(/registerCommand\("([^"]+)"/g)].map((m) => m[1]);
    for (const command of registered) assert.ok(contributed.includes(command), `${command} is not contributed`);
    for (const title of ["Fix", "Ask about selection…", "Review file", "Restart server"]) {
      assert.ok(manifest.contributes.commands.some((c: { title: string; category: string }) => c.title === title && c.category === "Qwen"), title);
    }
  });
});
