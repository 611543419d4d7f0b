import "../fake/register";
import assert from "node:assert/strict";
import { beforeEach, describe, it } from "node:test";
import type * as vscode from "vscode";
import { cancelCommand, cancellableRequests, InFlight, isCancellation } from "../../src/cancel";
import { fix, review } from "../../src/commands";
import { CancellationError, CancellationTokenSource, Position, Range, Selection, Uri, fake, window } from "../fake/vscode";

type Token = vscode.CancellationToken;

/** A request that stays pending until its token is cancelled, then fails as the LSP client does. */
function pendingUntilCancelled(token: Token | undefined): Promise<never> {
  return new Promise((_, reject) => {
    assert.ok(token, "a token was passed");
    token.onCancellationRequested(() => reject(Object.assign(new Error("Request cancelled"), { code: -32800 })));
  });
}

describe("InFlight", () => {
  it("cancelAll cancels the running requests and counts them; finished ones are forgotten", async () => {
    const inflight = new InFlight();
    let seen: Token | undefined;
    const running = inflight.run(undefined, (token) => ((seen = token), pendingUntilCancelled(token)));
    await inflight.run(undefined, async () => "done");
    assert.equal(inflight.size, 1);
    assert.equal(inflight.cancelAll(), 1);
    assert.equal(seen?.isCancellationRequested, true);
    await assert.rejects(running, (error) => isCancellation(error));
    assert.equal(inflight.size, 0);
    assert.equal(inflight.cancelAll(), 0);
  });

  it("the caller's own token still cancels", async () => {
    const inflight = new InFlight();
    const outer = new CancellationTokenSource();
    const running = inflight.run(outer.token as unknown as Token, pendingUntilCancelled);
    outer.cancel();
    await assert.rejects(running, (error) => isCancellation(error));
  });
});

describe("the sendRequest middleware", () => {
  it("gives the requests that run the model a token qwen.cancel reaches, and leaves the others alone", async () => {
    const inflight = new InFlight();
    const middleware = cancellableRequests(inflight);
    const theirs = new CancellationTokenSource().token as unknown as Token;
    const sent: [string, Token | undefined][] = [];
    const next = async (type: string | { method: string }, _param?: unknown, token?: Token) => {
      const method = typeof type === "string" ? type : type.method;
      sent.push([method, token]);
      return method === "codeAction/resolve" ? pendingUntilCancelled(token) : "answer";
    };

    const resolving = middleware({ method: "codeAction/resolve" }, { title: "Fix with Qwen" }, theirs, next);
    assert.equal(await middleware("textDocument/codeAction", {}, theirs, next), "answer");
    assert.notEqual(sent[0][1], theirs);
    assert.equal(sent[1][1], theirs);
    assert.equal(inflight.size, 1); // only the resolve

    cancelCommand(inflight);
    await assert.rejects(resolving, (error) => isCancellation(error));
  });
});

describe("qwen.cancel", () => {
  beforeEach(() => fake.reset());

  it("says when there is nothing to cancel", () => {
    cancelCommand(new InFlight());
    assert.deepEqual(fake.dialogs.map((d) => d.message), ["Qwen: nothing to cancel."]);
  });

  it("cancels quietly: a status bar message, no dialog", async () => {
    const inflight = new InFlight();
    const running = inflight.run(undefined, pendingUntilCancelled);
    cancelCommand(inflight);
    await assert.rejects(running);
    assert.deepEqual(fake.dialogs, []);
    assert.deepEqual(fake.statusMessages, ["Qwen: cancelled"]);
  });
});

describe("a palette command cancelled from its notification", () => {
  beforeEach(() => fake.reset());

  it("sends the notification's token with the request and ends without any message", async () => {
    const file = Uri.file("/proj/calc.py");
    window.activeTextEditor = {
      selection: new Selection(new Position(1, 0), new Position(1, 0)),
      document: { uri: file, lineAt: (line: number) => ({ range: new Range(new Position(line, 0), new Position(line, 9)) }) },
    };
    const tokens: (Token | undefined)[] = [];
    const execute = (_command: string, _arg: unknown, token?: Token) => (tokens.push(token), pendingUntilCancelled(token));

    const fixing = fix(execute);
    const reviewing = review(execute);
    assert.equal(fake.progress.length, 2);
    assert.ok(fake.progress.every((p) => (p.options as { cancellable?: boolean }).cancellable === true));
    for (const progress of fake.progress) progress.source.cancel(); // the Cancel buttons
    await Promise.all([fixing, reviewing]);

    assert.deepEqual(tokens.map((t) => t?.isCancellationRequested), [true, true]);
    assert.deepEqual(fake.dialogs, []); // no "Qwen: Request cancelled", no "made no change"
  });

  it("tells a cancellation from a failure", () => {
    assert.equal(isCancellation(new CancellationError()), true);
    assert.equal(isCancellation(Object.assign(new Error("boom"), { code: -32603 })), false);
    assert.equal(isCancellation(undefined), false);
  });
});
