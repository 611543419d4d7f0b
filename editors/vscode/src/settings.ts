// `qwen.*` settings → what the server receives (initializationOptions and the `qwen`
// configuration section), and the command that starts the server.

import type * as vscode from "vscode";

/** The settings forwarded to the server: the field names of its settings model, camelCase. */
export const FORWARDED_KEYS = [
  "baseUrl",
  "model",
  "thinking",
  "nonThinking",
  "reviewOnSave",
  "budgets",
  "maxRounds",
  "maxTotalTokens",
  "requestTimeout",
] as const;

/** Settings whose change needs a server restart (they decide which process runs). */
export const RESTART_KEYS = ["qwen.server.command", "qwen.server.pythonPath"] as const;

/** The part of `vscode.WorkspaceConfiguration` used here. */
export type ConfigReader = Pick<vscode.WorkspaceConfiguration, "get" | "inspect">;

export interface ServerCommand {
  command: string;
  args: string[];
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * Only the values the user set explicitly. Forwarding the defaults from package.json would
 * override the project's `[tool.qwen-lsp]` in pyproject.toml, which ranks below editor values
 * on the server; `null` means "unset" everywhere and is dropped.
 */
export function serverSettings(config: ConfigReader): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const key of FORWARDED_KEYS) {
    const value = explicitValue(config, key);
    const cleaned = value === undefined ? undefined : withoutNulls(value as Json);
    if (cleaned !== undefined) out[key] = cleaned;
  }
  return out;
}

/** The most specific scope the user set: folder > workspace > user. */
function explicitValue(config: ConfigReader, key: string): unknown {
  const info = config.inspect(key);
  if (!info) return undefined;
  for (const value of [info.workspaceFolderValue, info.workspaceValue, info.globalValue]) {
    if (value !== undefined) return value;
  }
  return undefined;
}

function withoutNulls(value: Json): Json | undefined {
  if (value === null) return undefined;
  if (Array.isArray(value)) return value;
  if (typeof value === "object") {
    const entries = Object.entries(value)
      .map(([k, v]) => [k, withoutNulls(v)] as const)
      .filter((entry): entry is readonly [string, Json] => entry[1] !== undefined);
    return Object.fromEntries(entries);
  }
  return value;
}

/** `<python> -m qwen_lsp.cli` when a Python is configured, else the configured command. */
export function serverCommand(config: ConfigReader): ServerCommand {
  const python = (config.get<string>("server.pythonPath") ?? "").trim();
  if (python) return { command: python, args: ["-m", "qwen_lsp.cli"] };
  const words = (config.get<string[]>("server.command") ?? []).filter((w) => w.trim() !== "");
  if (words.length === 0) return { command: "qwen-lsp", args: [] };
  return { command: words[0], args: words.slice(1) };
}
