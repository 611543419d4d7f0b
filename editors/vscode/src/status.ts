// The status bar item: what the server last said in `qwen/status`, or that it is not running.

import * as vscode from "vscode";
import type { StatusParams } from "./protocol";

const MAX_TEXT = 40; // the status bar is shared; the full message is in the tooltip

export class StatusItem implements vscode.Disposable {
  constructor(private readonly item: vscode.StatusBarItem) {
    item.name = "Qwen";
    this.starting();
    item.show();
  }

  /** Applies one `qwen/status` notification. Unknown states are shown as errors, not ignored. */
  update(params: StatusParams): void {
    const message = typeof params?.message === "string" ? params.message : "";
    switch (params?.state) {
      case "idle":
        this.set("$(sparkle) Qwen", message || "Qwen is idle", "qwen.showOutput");
        break;
      case "busy": // a click cancels: the progress VS Code shows for the server has no Cancel button
        this.set(`$(loading~spin) Qwen: ${shorten(message || "working")}`, `${message || "Qwen is working"}\nClick to cancel.`, "qwen.cancel");
        break;
      case "error":
        this.set("$(error) Qwen", message || "Qwen reported an error", "qwen.showOutput", true);
        break;
      default:
        this.set("$(error) Qwen", `Unexpected qwen/status: ${JSON.stringify(params)}`, "qwen.showOutput", true);
    }
  }

  starting(): void {
    this.set("$(loading~spin) Qwen", "Starting the Qwen language server…", "qwen.showOutput");
  }

  stopped(): void {
    this.set("$(circle-slash) Qwen", "The Qwen language server is not running. Click to restart.", "qwen.restart", true);
  }

  dispose(): void {
    this.item.dispose();
  }

  private set(text: string, tooltip: string, command: string, error = false): void {
    this.item.text = text;
    this.item.tooltip = tooltip;
    this.item.command = command;
    this.item.backgroundColor = error ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
  }
}

function shorten(text: string): string {
  const line = text.split("\n", 1)[0].replace(/^Qwen: /, ""); // the server's titles name it: not "Qwen: Qwen: fixing …"
  return line.length <= MAX_TEXT ? line : `${line.slice(0, MAX_TEXT - 1)}…`;
}
