// The client command `qwen.runInTerminal`: the server only suggests shell commands; the user
// sees the risk label and decides. Nothing runs without an explicit click on the run button.

import * as vscode from "vscode";
import type { Risk, RunInTerminalArgs } from "./protocol";

export const RUN = "Run";
export const RUN_DESTRUCTIVE = "Run destructive command";
const KNOWN_RISKS: readonly Risk[] = ["read-only", "modifies files", "destructive", "network"];
/** How long a new terminal gets to report shell integration before we fall back to sendText. */
export const SHELL_INTEGRATION_WAIT_MS = 3000;

/** Returns whether the command was sent to a terminal. */
export async function runInTerminal(raw: unknown): Promise<boolean> {
  const args = parseArgs(raw);
  if (!args) {
    void vscode.window.showErrorMessage(`Qwen: qwen.runInTerminal got an invalid argument: ${JSON.stringify(raw)}`);
    return false;
  }
  if (!(await confirm(args))) return false;
  await runCommand(args.command);
  return true;
}

/** Runs a command the user chose in the active terminal (or a new one), through shell integration. */
export async function runCommand(command: string): Promise<void> {
  const terminal = vscode.window.activeTerminal ?? createTerminal();
  terminal.show();
  await execute(terminal, command);
}

/** Validates the argument; an unknown risk label is treated as destructive, never as safe. */
export function parseArgs(raw: unknown): RunInTerminalArgs | undefined {
  const arg = Array.isArray(raw) ? raw[0] : raw; // tolerate an unwrapped arguments array
  if (typeof arg !== "object" || arg === null) return undefined;
  const { command, reason, risk, dangers } = arg as Record<string, unknown>;
  if (typeof command !== "string" || command.trim() === "") return undefined;
  return {
    command,
    reason: typeof reason === "string" ? reason : "",
    risk: KNOWN_RISKS.includes(risk as Risk) ? (risk as Risk) : "destructive",
    dangers: Array.isArray(dangers) ? dangers.filter((d): d is string => typeof d === "string") : [],
  };
}

async function confirm(args: RunInTerminalArgs): Promise<boolean> {
  const detail = [args.reason, ...args.dangers.map((d) => `⚠ ${d}`)].filter(Boolean).join("\n");
  if (args.risk === "destructive") {
    const choice = await vscode.window.showWarningMessage(
      `Qwen suggests a DESTRUCTIVE command:\n\n${args.command}`,
      { modal: true, detail: detail || "This command can destroy data." },
      RUN_DESTRUCTIVE,
    );
    return choice === RUN_DESTRUCTIVE;
  }
  const show = args.risk === "read-only" ? vscode.window.showInformationMessage : vscode.window.showWarningMessage;
  const choice = await show(`Run in terminal (${args.risk})?\n\n${args.command}`, { modal: true, detail }, RUN);
  return choice === RUN;
}

function createTerminal(): vscode.Terminal {
  const folder = vscode.workspace.workspaceFolders?.[0];
  return vscode.window.createTerminal({ name: "Qwen", cwd: folder?.uri });
}

/**
 * Prefers shell integration, so the command's end (and exit code) comes back through the
 * terminal watcher like any command the user typed; a fresh terminal needs a moment to get it.
 */
async function execute(terminal: vscode.Terminal, command: string): Promise<void> {
  const integration = terminal.shellIntegration ?? (await waitForShellIntegration(terminal));
  if (integration) integration.executeCommand(command);
  else terminal.sendText(command, true);
}

function waitForShellIntegration(terminal: vscode.Terminal): Promise<vscode.TerminalShellIntegration | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      listener.dispose();
      resolve(undefined);
    }, SHELL_INTEGRATION_WAIT_MS);
    const listener = vscode.window.onDidChangeTerminalShellIntegration((event) => {
      if (event.terminal !== terminal) return;
      clearTimeout(timer);
      listener.dispose();
      resolve(event.shellIntegration);
    });
  });
}
