// `qwen.*` settings → what the server receives (initializationOptions and the `qwen`
// configuration section), and the command that starts the server.
//
// A workspace's own settings (.vscode/settings.json, a .code-workspace file) come with the
// repository: they are not the user's. Trust-sensitive settings (which server gets the prompts,
// which program runs) are taken from the user's settings only (`inspect().globalValue`); the
// other settings a workspace sets are sent apart, under `fromWorkspace`, and the server treats
// them as repository settings (they may lower limits, never raise them).

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

/** Forwarded settings a workspace may never set: where the prompts (and the API key) go, and which model. */
export const USER_ONLY_KEYS: readonly string[] = ["baseUrl", "model"];

/** Where workspace-level values of the other forwarded settings go (the server's repository layer). */
export const FROM_WORKSPACE = "fromWorkspace";

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
 * on the server; `null` means "unset" everywhere and is dropped. The user's values at the top;
 * what the workspace sets (folder over workspace) under `fromWorkspace`, never for USER_ONLY_KEYS.
 */
export function serverSettings(config: ConfigReader): Record<string, Json> {
  const out: Record<string, Json> = {};
  const fromWorkspace: Record<string, Json> = {};
  for (const key of FORWARDED_KEYS) {
    const info = config.inspect(key);
    const user = cleaned(info?.globalValue);
    if (user !== undefined) out[key] = user;
    if (USER_ONLY_KEYS.includes(key)) continue;
    const workspace = cleaned(info?.workspaceFolderValue ?? info?.workspaceValue);
    if (workspace !== undefined) fromWorkspace[key] = workspace;
  }
  if (Object.keys(fromWorkspace).length > 0) out[FROM_WORKSPACE] = fromWorkspace;
  return out;
}

function cleaned(value: unknown): Json | undefined {
  return value === undefined ? undefined : withoutNulls(value as Json);
}

/** The user's own value of a setting (never the workspace's), or undefined. */
function userValue<T>(config: ConfigReader, key: string): T | undefined {
  return config.inspect<T>(key)?.globalValue;
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

/** `<python> -m qwen_lsp.cli` when a Python is configured, else the configured command: both from
 * the user's settings only, so that no repository chooses the program the extension starts. */
export function serverCommand(config: ConfigReader): ServerCommand {
  const python = (userValue<string>(config, "server.pythonPath") ?? "").trim();
  if (python) return { command: python, args: ["-m", "qwen_lsp.cli"] };
  const words = (userValue<string[]>(config, "server.command") ?? []).filter((w) => w.trim() !== "");
  if (words.length === 0) return { command: "qwen-lsp", args: [] };
  return { command: words[0], args: words.slice(1) };
}
