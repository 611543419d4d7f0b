// What the user sees once a "Fix with Qwen" quick fix lands. VS Code applies a code action's edit
// silently and the failing command's diagnostics stay red until it runs again, which looks like the
// fix failed. So: a message says what was applied and validated, the diagnostics of the run the fix
// answered are shown as "fixed, re-run to check" until that command runs again, and the message
// offers to re-run it in the terminal.

import * as vscode from "vscode";
import { runCommand } from "./runInTerminal";

export const FIX_APPLIED_COMMAND = "qwen.fixApplied";

/** What the server puts in `data` of a diagnostic from a failing terminal command (wire.DiagnosticData). */
export interface RunData {
  run: string;
  command: string;
  cwd?: string;
}

/** The argument of `qwen.fixApplied`. */
export interface AppliedFix {
  title: string;
  files: string[];
  runs: RunData[];
}

/** The structural part of a resolved vscode.CodeAction this module reads and completes. */
export interface FixAction {
  title: string;
  edit?: { entries(): [vscode.Uri, unknown[]][] };
  diagnostics?: readonly vscode.Diagnostic[];
  command?: vscode.Command;
}

export function runData(diagnostic: vscode.Diagnostic): RunData | undefined {
  const data = (diagnostic as { data?: unknown }).data as Partial<RunData> | undefined;
  if (typeof data?.run !== "string" || typeof data.command !== "string" || !data.command.trim()) return undefined;
  return { run: data.run, command: data.command.trim(), cwd: typeof data.cwd === "string" ? data.cwd : undefined };
}

/** "✓ parses, ✓ python3 app.py" from the resolved title "Fix AssertionError (✓ parses, ✓ python3 app.py)". */
export function checksOf(title: string): string | undefined {
  if (!title.endsWith(")")) return undefined;
  let depth = 0;
  for (let i = title.length - 1; i >= 0; i--) {
    if (title[i] === ")") depth++;
    else if (title[i] === "(" && --depth === 0) return title.slice(i + 1, -1).trim() || undefined;
  }
  return undefined;
}

/** "Fixed app.py (✓ parses, ✓ python3 app.py)". */
export function fixedMessage(fix: AppliedFix): string {
  const files = fix.files.length ? fix.files.join(", ") : "the code";
  const checks = checksOf(fix.title);
  return `Fixed ${files}${checks ? ` (${checks})` : ""}`;
}

export function rerunLabel(command: string): string {
  return `Re-run ${command.length <= 40 ? command : `${command.slice(0, 39)}…`}`;
}

/**
 * Tracks the runs a fix answered. `mark` rewrites their diagnostics (as the server publishes them)
 * until `commandRan` says the command ran again; the server's new diagnostics then stand as sent.
 */
export class FixFeedback {
  private readonly pending = new Map<string, RunData>(); // by run key

  constructor(
    private readonly diagnostics: () => vscode.DiagnosticCollection | undefined,
    private readonly relativePath: (uri: vscode.Uri) => string = (uri) => vscode.workspace.asRelativePath(uri),
  ) {}

  /** resolveCodeAction middleware: a resolved fix with an edit reports itself once VS Code applied it. */
  attach<T extends FixAction>(resolved: T, unresolved?: FixAction): T {
    const entries = resolved.edit?.entries() ?? [];
    if (entries.length === 0 || resolved.command) return resolved;
    const diagnostics = resolved.diagnostics?.length ? resolved.diagnostics : (unresolved?.diagnostics ?? []);
    const runs = [...new Map(diagnostics.flatMap((d) => runData(d) ?? []).map((r) => [r.run, r])).values()];
    const fix: AppliedFix = { title: resolved.title, files: entries.map(([uri]) => this.relativePath(uri)), runs };
    // VS Code runs an action's command right after applying its edit.
    resolved.command = { title: "Qwen fix applied", command: FIX_APPLIED_COMMAND, arguments: [fix] };
    return resolved;
  }

  /** `qwen.fixApplied`: mark, say, offer the re-run. */
  async applied(fix: AppliedFix): Promise<void> {
    for (const run of fix.runs) this.pending.set(run.run, run);
    this.remark();
    const rerun = fix.runs[0]?.command;
    const items = rerun ? [rerunLabel(rerun)] : [];
    const choice = await vscode.window.showInformationMessage(fixedMessage(fix), ...items);
    if (rerun && choice === items[0]) await runCommand(rerun);
  }

  /** A terminal command finished (reported to the server): its runs are no longer pending. */
  commandRan(command: string): void {
    for (const [key, run] of this.pending) if (run.command === command.trim()) this.pending.delete(key);
  }

  /** handleDiagnostics middleware. */
  mark(diagnostics: vscode.Diagnostic[]): vscode.Diagnostic[] {
    if (this.pending.size === 0) return diagnostics;
    return diagnostics.map((d) => {
      const run = runData(d);
      if (!run || !this.pending.has(run.run) || d.message.startsWith(PENDING_PREFIX)) return d;
      // A copy of the same class, so `data` (and the client's own bookkeeping) travel with it.
      const copy = Object.assign(Object.create(Object.getPrototypeOf(d)) as vscode.Diagnostic, d);
      copy.severity = vscode.DiagnosticSeverity.Information;
      copy.message = `${PENDING_PREFIX}re-run \`${run.command}\` to check. ${d.message}`;
      return copy;
    });
  }

  /** Applies `mark` to what is shown now (the server will not republish until something changes). */
  private remark(): void {
    const collection = this.diagnostics();
    if (!collection) return;
    const updates: [vscode.Uri, vscode.Diagnostic[]][] = [];
    collection.forEach((uri, diagnostics) => updates.push([uri, this.mark([...diagnostics])]));
    for (const [uri, diagnostics] of updates) collection.set(uri, diagnostics);
  }
}

export const PENDING_PREFIX = "Fixed by Qwen, ";
