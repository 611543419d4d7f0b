import "../fake/register";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { FORWARDED_KEYS, USER_ONLY_KEYS, serverCommand, serverSettings, type ConfigReader } from "../../src/settings";

interface Scopes {
  defaultValue?: unknown;
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/** A configuration section as VS Code's `inspect` reports it, key by key. */
function config(values: Record<string, Scopes>): ConfigReader {
  return {
    inspect: ((key: string) => (key in values ? { key: `qwen.${key}`, ...values[key] } : undefined)) as ConfigReader["inspect"],
    get: ((key: string, fallback?: unknown) => {
      const v = values[key];
      if (!v) return fallback;
      return v.workspaceFolderValue ?? v.workspaceValue ?? v.globalValue ?? v.defaultValue ?? fallback;
    }) as ConfigReader["get"],
  };
}

describe("serverSettings (initializationOptions and the `qwen` section)", () => {
  it("forwards nothing when only the manifest defaults exist, so pyproject settings still apply", () => {
    const c = config({ baseUrl: { defaultValue: null }, reviewOnSave: { defaultValue: false }, maxRounds: { defaultValue: null } });
    assert.deepEqual(serverSettings(c), {});
  });

  it("forwards explicit values under the server's field names, presets and budgets as objects", () => {
    const c = config({
      baseUrl: { defaultValue: null, globalValue: "http://10.0.0.5:8000/v1" },
      model: { defaultValue: null, globalValue: "Qwen/Qwen3.6-27B" },
      reviewOnSave: { defaultValue: false, globalValue: false },
      thinking: { defaultValue: null, globalValue: { temperature: 0.6, topP: 0.95, topK: 20 } },
      nonThinking: { defaultValue: null, globalValue: { temperature: 0.7, topP: 0.8, presencePenalty: 1.5 } },
      budgets: { defaultValue: null, globalValue: { totalInput: 65536, files: 32768 } },
      maxRounds: { defaultValue: null, globalValue: 4 },
      maxTotalTokens: { defaultValue: null, globalValue: 200000 },
      requestTimeout: { defaultValue: null, globalValue: 300 },
    });
    assert.deepEqual(serverSettings(c), {
      baseUrl: "http://10.0.0.5:8000/v1",
      model: "Qwen/Qwen3.6-27B",
      reviewOnSave: false, // explicitly false is still a choice the user made
      thinking: { temperature: 0.6, topP: 0.95, topK: 20 },
      nonThinking: { temperature: 0.7, topP: 0.8, presencePenalty: 1.5 },
      budgets: { totalInput: 65536, files: 32768 },
      maxRounds: 4,
      maxTotalTokens: 200000,
      requestTimeout: 300,
    });
  });

  it("sends the user's values at the top and the workspace's apart, folder over workspace", () => {
    const c = config({
      reviewOnSave: { globalValue: false, workspaceValue: true },
      maxRounds: { globalValue: 4, workspaceValue: 6, workspaceFolderValue: 12 },
      budgets: { workspaceValue: { files: 1000 } },
    });
    assert.deepEqual(serverSettings(c), {
      reviewOnSave: false,
      maxRounds: 4,
      fromWorkspace: { reviewOnSave: true, maxRounds: 12, budgets: { files: 1000 } },
    });
  });

  it("never sends a workspace's model server or model: only the user's", () => {
    const c = config({
      baseUrl: { globalValue: "http://user/v1", workspaceValue: "http://attacker/v1", workspaceFolderValue: "http://folder/v1" },
      model: { workspaceValue: "workspace-model" },
    });
    assert.deepEqual(serverSettings(c), { baseUrl: "http://user/v1" });
    assert.ok(!JSON.stringify(serverSettings(c)).includes("attacker"));
  });

  it("drops nulls, also inside objects (null means 'server default')", () => {
    const c = config({
      model: { globalValue: null },
      budgets: { globalValue: { files: 1000, git: null } },
    });
    assert.deepEqual(serverSettings(c), { budgets: { files: 1000 } });
  });

  it("never forwards client-only settings", () => {
    const c = config({
      "server.command": { globalValue: ["x"] },
      "server.pythonPath": { globalValue: "/usr/bin/python3" },
      "trace.server": { globalValue: "verbose" },
      "terminal.reportFailures": { globalValue: false },
    });
    assert.deepEqual(serverSettings(c), {});
  });

  it("every forwarded key is a contributed setting in package.json", () => {
    const manifest = JSON.parse(readFileSync(path.join(__dirname, "../../../package.json"), "utf8"));
    const properties = Object.keys(manifest.contributes.configuration.properties);
    for (const key of FORWARDED_KEYS) assert.ok(properties.includes(`qwen.${key}`), `qwen.${key} missing`);
  });
});

describe("package.json and workspace trust", () => {
  const manifest = JSON.parse(readFileSync(path.join(__dirname, "../../../package.json"), "utf8"));
  const properties = manifest.contributes.configuration.properties;
  const sensitive = [...USER_ONLY_KEYS.map((k) => `qwen.${k}`), "qwen.server.command", "qwen.server.pythonPath"];

  it("gives every trust-sensitive setting a scope a workspace cannot set", () => {
    for (const key of sensitive) assert.ok(["machine", "application"].includes(properties[key].scope), `${key}: ${properties[key].scope}`);
  });

  it("names any setting about a URL, header, command or secret as user-only", () => {
    for (const key of Object.keys(properties)) {
      if (/url|header|command|secret|apikey|password|pythonpath/i.test(key)) assert.ok(sensitive.includes(key), `${key} is trust-sensitive`);
    }
  });

  it("supports untrusted workspaces in a limited way, restricting the trust-sensitive settings", () => {
    const untrusted = manifest.capabilities.untrustedWorkspaces;
    assert.equal(untrusted.supported, "limited");
    assert.ok(untrusted.description.length > 0);
    for (const key of sensitive) assert.ok(untrusted.restrictedConfigurations.includes(key), key);
  });
});

describe("serverCommand", () => {
  it("runs the module with the configured Python", () => {
    const c = config({ "server.pythonPath": { globalValue: " /opt/venv/bin/python " }, "server.command": { globalValue: ["ignored"] } });
    assert.deepEqual(serverCommand(c), { command: "/opt/venv/bin/python", args: ["-m", "qwen_lsp.cli"] });
  });

  it("splits the configured command into program and arguments", () => {
    const c = config({ "server.command": { globalValue: ["/usr/local/bin/qwen-lsp", "--log-level", "debug"] } });
    assert.deepEqual(serverCommand(c), { command: "/usr/local/bin/qwen-lsp", args: ["--log-level", "debug"] });
  });

  it("never runs a program a workspace names", () => {
    const c = config({
      "server.pythonPath": { workspaceValue: "/tmp/evil/python", workspaceFolderValue: "/tmp/evil/python" },
      "server.command": { globalValue: ["/usr/local/bin/qwen-lsp"], workspaceValue: ["/tmp/evil/marker"] },
    });
    assert.deepEqual(serverCommand(c), { command: "/usr/local/bin/qwen-lsp", args: [] });
    const only = config({ "server.command": { workspaceValue: ["/tmp/evil/marker"] } });
    assert.deepEqual(serverCommand(only), { command: "qwen-lsp", args: [] });
  });

  it("falls back to qwen-lsp on PATH", () => {
    assert.deepEqual(serverCommand(config({})), { command: "qwen-lsp", args: [] });
    assert.deepEqual(serverCommand(config({ "server.command": { globalValue: [""] } })), { command: "qwen-lsp", args: [] });
  });
});
