// Palette commands and the `qwen.ask` client command. Each one turns the editor state into the
// argument of a server command (docs/protocol.md) and reports the result.

import * as vscode from "vscode";
import { isCancellation } from "./cancel";
import {
  SERVER_COMMANDS,
  type ApplyResult,
  type ExecuteServerCommand,
  type LspRange,
  type RangeArgs,
} from "./protocol";

export function toLspRange(range: vscode.Range): LspRange {
  return {
    start: { line: range.start.line, character: range.start.character },
    end: { line: range.end.line, character: range.end.character },
  };
}

/** The selection, or the whole cursor line when nothing is selected (what "fix here" means). */
export function editorTarget(editor: vscode.TextEditor): RangeArgs {
  const selection = editor.selection;
  const range = selection.isEmpty ? editor.document.lineAt(selection.active.line).range : selection;
  return { uri: editor.document.uri.toString(), range: toLspRange(range) };
}

function activeEditor(): vscode.TextEditor | undefined {
  const editor = vscode.window.activeTextEditor;
  if (!editor) void vscode.window.showWarningMessage("Qwen: open a file first.");
  return editor;
}

/**
 * `qwen.ask`: from a code action the argument is `{uri, range}`; from the palette it is the
 * selection. The instruction is asked here and passed on to `qwen.server.ask`.
 */
export async function ask(execute: ExecuteServerCommand, arg?: unknown): Promise<void> {
  const target = isRangeArgs(arg) ? arg : withEditor(editorTarget);
  if (!target) return;
  const instruction = await vscode.window.showInputBox({
    title: "Ask Qwen",
    prompt: "What should Qwen do with the selected code?",
    placeHolder: "e.g. handle the empty list case",
    ignoreFocusOut: true,
  });
  if (!instruction || instruction.trim() === "") return; // cancelled
  await reportApply("Asking Qwen…", (token) =>
    execute(SERVER_COMMANDS.ask, { ...target, instruction: instruction.trim() }, token),
  );
}

/**
 * `qwen.refine`: a follow-up note on the last change Qwen proposed for the file (from the
 * "Refine Qwen's change…" code action `{uri}`, or the palette: the active file).
 */
export async function refine(execute: ExecuteServerCommand, arg?: unknown): Promise<void> {
  const uri =
    typeof arg === "object" && arg !== null && typeof (arg as { uri?: unknown }).uri === "string"
      ? (arg as { uri: string }).uri
      : withEditor((editor) => editor.document.uri.toString());
  if (!uri) return;
  const note = await vscode.window.showInputBox({
    title: "Refine Qwen's change",
    prompt: "What should be different?",
    placeHolder: "e.g. not like that, keep the old signature",
    ignoreFocusOut: true,
  });
  if (!note || note.trim() === "") return; // cancelled
  await reportApply("Refining…", (token) => execute(SERVER_COMMANDS.refine, { uri, note: note.trim() }, token));
}

export async function fix(execute: ExecuteServerCommand): Promise<void> {
  const target = withEditor(editorTarget);
  if (!target) return;
  // The editor's diagnostics there, from any extension: the server fixes one of them when it has none of its own.
  const editor = activeEditor();
  const diagnostics = editor
    ? vscode.languages
        .getDiagnostics(editor.document.uri)
        .filter((d) => d.range.start.line <= editor.selection.end.line && d.range.end.line >= editor.selection.start.line)
        .map((d) => ({
          range: {
            start: { line: d.range.start.line, character: d.range.start.character },
            end: { line: d.range.end.line, character: d.range.end.character },
          },
          severity: d.severity + 1, // vscode counts from 0 (Error), LSP from 1
          message: d.message,
          source: d.source,
          code: typeof d.code === "object" ? d.code.value : d.code,
        }))
    : [];
  await reportApply("Qwen is fixing…", (token) => execute(SERVER_COMMANDS.fix, { ...target, diagnostics }, token));
}

export async function review(execute: ExecuteServerCommand): Promise<void> {
  const uri = withEditor((editor) => editor.document.uri.toString());
  if (!uri) return;
  const result = await withProgress("Qwen is reviewing…", (token) => execute(SERVER_COMMANDS.review, { uri }, token));
  // Not reviewed (e.g. the model server is down): the server's own message already said why.
  if (result === undefined || (result as { reviewed?: unknown } | null)?.reviewed === false) return;
  const findings = (result as { findings?: unknown } | null)?.findings;
  const count = typeof findings === "number" ? findings : 0;
  void vscode.window.showInformationMessage(
    count === 0 ? "Qwen review: no findings." : `Qwen review: ${count} finding${count === 1 ? "" : "s"} (see Problems).`,
  );
}

function withEditor<T>(fn: (editor: vscode.TextEditor) => T): T | undefined {
  const editor = activeEditor();
  return editor ? fn(editor) : undefined;
}

async function reportApply(title: string, send: Send): Promise<void> {
  const result = (await withProgress(title, send)) as Partial<ApplyResult> | undefined | null;
  if (result === undefined) return;
  const summary = typeof result?.summary === "string" && result.summary ? result.summary : "no summary";
  if (result?.applied) void vscode.window.showInformationMessage(`Qwen: ${summary}`);
  else void vscode.window.showWarningMessage(`Qwen made no change: ${summary}`);
}

type Send = (token: vscode.CancellationToken) => Promise<unknown>;

/** Shows a notification, with a Cancel button, while the server works; errors become messages,
 * not rejections, and a cancelled request ends quietly (undefined). */
async function withProgress(title: string, send: Send): Promise<unknown> {
  try {
    return await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable: true },
      (_progress, token) => send(token),
    );
  } catch (error) {
    if (isCancellation(error)) return undefined;
    void vscode.window.showErrorMessage(`Qwen: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
}

function isRangeArgs(value: unknown): value is RangeArgs {
  if (typeof value !== "object" || value === null) return false;
  const { uri, range } = value as Partial<RangeArgs>;
  return typeof uri === "string" && typeof range?.start?.line === "number" && typeof range?.end?.line === "number";
}
