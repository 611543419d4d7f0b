// Shell integration → `qwen/terminalOutput`. VS Code only streams what a command writes after
// `read()` is called, so reading starts when the execution starts and is collected at its end.

import * as vscode from "vscode";
import type { TerminalOutputParams } from "./protocol";
import { plainText, tail } from "./terminalText";

/** The server parses the end of the output; this bounds memory and message size. */
export const MAX_OUTPUT_CHARS = 100_000;
/** Don't hold up reporting if the stream does not close right after the end event. */
export const READ_SETTLE_MS = 2000;

export type Send = (params: TerminalOutputParams) => void;

export class TerminalWatcher implements vscode.Disposable {
  private readonly outputs = new Map<vscode.TerminalShellExecution, OutputReader>();
  /** Commands (by cwd) whose failure we reported: their next success clears the diagnostics. */
  private readonly failed = new Set<string>();
  private readonly subscriptions: vscode.Disposable[];

  constructor(
    private readonly send: Send,
    private readonly enabled: () => boolean = () => true,
  ) {
    this.subscriptions = [
      vscode.window.onDidStartTerminalShellExecution((event) => this.started(event.execution)),
      vscode.window.onDidEndTerminalShellExecution((event) => void this.ended(event)),
    ];
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
    this.outputs.clear();
  }

  private started(execution: vscode.TerminalShellExecution): void {
    if (!this.enabled()) return;
    this.outputs.set(execution, new OutputReader(execution.read()));
  }

  /** Exposed for tests: resolves once the notification (if any) was sent. */
  async ended(event: vscode.TerminalShellExecutionEndEvent): Promise<void> {
    const reading = this.outputs.get(event.execution);
    this.outputs.delete(event.execution);
    if (!reading || event.exitCode === undefined) return; // not watched, or the shell didn't say

    const command = event.execution.commandLine.value.trim();
    const cwd = event.execution.cwd?.fsPath ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? "";
    const key = `${cwd}\0${command}`;
    if (event.exitCode === 0) {
      // Only a command that failed before is worth a message: the server then clears its diagnostics.
      if (this.failed.delete(key)) this.send({ command, exitCode: 0, output: "", cwd });
      return;
    }
    const output = tail(plainText(await reading.settled()), MAX_OUTPUT_CHARS);
    this.failed.add(key);
    this.send({ command, exitCode: event.exitCode, output, cwd });
  }
}

/** Accumulates an execution's output; `text` is usable before the stream closes. */
class OutputReader {
  text = "";
  readonly done: Promise<void>;

  constructor(stream: AsyncIterable<string>) {
    this.done = this.consume(stream);
  }

  /** The output once the stream closes, or what arrived within `READ_SETTLE_MS`. */
  async settled(): Promise<string> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, READ_SETTLE_MS)));
    await Promise.race([this.done, timeout]);
    clearTimeout(timer);
    return this.text;
  }

  private async consume(stream: AsyncIterable<string>): Promise<void> {
    try {
      for await (const chunk of stream) {
        this.text += chunk;
        if (this.text.length > 2 * MAX_OUTPUT_CHARS) this.text = this.text.slice(-MAX_OUTPUT_CHARS);
      }
    } catch {
      // A closed terminal ends the stream with an error; what was read is still useful.
    }
  }
}
