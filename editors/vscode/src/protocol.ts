// The custom part of the qwen-lsp protocol (docs/protocol.md), as the client sees it.

import type { CancellationToken } from "vscode";

/** LSP position/range as JSON on the wire (0-based, UTF-16 characters). */
export interface LspPosition {
  line: number;
  character: number;
}
export interface LspRange {
  start: LspPosition;
  end: LspPosition;
}

/** `qwen/status`, server → client. */
export type StatusState = "idle" | "busy" | "error";
export interface StatusParams {
  state: StatusState;
  message: string;
}
export const STATUS_NOTIFICATION = "qwen/status";

/** `qwen/terminalOutput`, client → server: a command finished in a terminal. */
export interface TerminalOutputParams {
  command: string;
  exitCode: number;
  output: string;
  cwd: string;
}
export const TERMINAL_OUTPUT_NOTIFICATION = "qwen/terminalOutput";

/** Argument of the client command `qwen.runInTerminal`. */
export type Risk = "read-only" | "modifies files" | "destructive" | "network";
export interface RunInTerminalArgs {
  command: string;
  reason: string;
  risk: Risk;
  dangers: string[];
}

/** Argument of the client command `qwen.ask` (and of the server commands that take a range). */
export interface RangeArgs {
  uri: string;
  range: LspRange;
}

/** What `qwen.server.ask` and `qwen.server.fix` return. */
export interface ApplyResult {
  applied: boolean;
  summary: string;
}

export const CLIENT_COMMANDS = {
  runInTerminal: "qwen.runInTerminal",
  ask: "qwen.ask",
  refine: "qwen.refine",
} as const;

export const SERVER_COMMANDS = {
  ask: "qwen.server.ask",
  explain: "qwen.server.explain",
  review: "qwen.server.review",
  fix: "qwen.server.fix",
  refine: "qwen.server.refine",
} as const;

/** Sends `workspace/executeCommand` to the server; the one seam commands are tested through. */
export type ExecuteServerCommand = (command: string, arg: unknown, token?: CancellationToken) => Promise<unknown>;
