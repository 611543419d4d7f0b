// Cancelling what Qwen is doing. The server's work-done progress is cancellable, but
// vscode-languageclient shows it in the status bar, where VS Code has no Cancel button. So every
// Qwen request (a Quick Fix being resolved, a palette command) is sent with a token of ours, and
// `qwen.cancel` (the busy status bar item, or the palette) cancels them: the client then sends
// `$/cancelRequest`, which stops the fix on the server and closes its model stream.

import * as vscode from "vscode";

/** The requests that run the model. */
export const CANCELLABLE_METHODS: ReadonlySet<string> = new Set(["codeAction/resolve", "workspace/executeCommand"]);

const REQUEST_CANCELLED = -32800; // LSP's RequestCancelled

export class InFlight {
  private readonly sources = new Set<vscode.CancellationTokenSource>();

  /** Runs `send` with a token that `cancelAll` cancels, as does `outer` (the caller's own token). */
  async run<T>(outer: vscode.CancellationToken | undefined, send: (token: vscode.CancellationToken) => Promise<T>): Promise<T> {
    const source = new vscode.CancellationTokenSource();
    const link = outer?.onCancellationRequested(() => source.cancel());
    if (outer?.isCancellationRequested) source.cancel();
    this.sources.add(source);
    try {
      return await send(source.token);
    } finally {
      this.sources.delete(source);
      link?.dispose();
      source.dispose();
    }
  }

  get size(): number {
    return this.sources.size;
  }

  /** Cancels every request in flight; returns how many there were. */
  cancelAll(): number {
    const sources = [...this.sources];
    for (const source of sources) source.cancel();
    return sources.length;
  }
}

type Token = vscode.CancellationToken;

/** The client's `sendRequest` middleware: requests that run the model get a token of `inflight`. */
export function cancellableRequests(inflight: InFlight) {
  return <M extends string | { method: string }, P, R>(
    type: M,
    param: P | undefined,
    token: Token | undefined,
    next: (type: M, param?: P, token?: Token) => Promise<R>,
  ): Promise<R> =>
    CANCELLABLE_METHODS.has(typeof type === "string" ? type : type.method)
      ? inflight.run(token, (ours) => next(type, param, ours))
      : next(type, param, token);
}

/** `qwen.cancel`: says so when there was nothing to cancel; a cancelled fix itself stays quiet. */
export function cancelCommand(inflight: InFlight): void {
  if (inflight.cancelAll() === 0) void vscode.window.showInformationMessage("Qwen: nothing to cancel.");
  else vscode.window.setStatusBarMessage("Qwen: cancelled", 3000);
}

/** A request that ended because it was cancelled (by the user): not an error to show. */
export function isCancellation(error: unknown): boolean {
  return error instanceof vscode.CancellationError || (error as { code?: unknown } | null)?.code === REQUEST_CANCELLED;
}
