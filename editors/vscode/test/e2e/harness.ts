// Processes for the end-to-end test: the vLLM test double and the real qwen-lsp server, the
// latter spoken to with vscode-jsonrpc exactly as vscode-languageclient would over stdio.

import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import * as path from "node:path";
import * as readline from "node:readline";
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from "vscode-jsonrpc/node";

/** editors/vscode/out/test/e2e → the repository root, unless QWEN_LSP_REPO says otherwise. */
export const REPO = process.env.QWEN_LSP_REPO ?? path.resolve(__dirname, "../../../../..");

/** The Python with qwen-lsp installed: the pytest wrapper passes its own interpreter. */
export function python(): string {
  if (process.env.QWEN_LSP_PYTHON) return process.env.QWEN_LSP_PYTHON;
  const venv = path.join(REPO, ".venv", "bin", "python");
  return existsSync(venv) ? venv : "python3";
}

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill("SIGKILL"), 5000);
    child.once("exit", () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

export interface Double {
  baseUrl: string;
  script(replies: unknown[]): Promise<void>;
  requests(): Promise<{ method: string; path: string; body: unknown }[]>;
  stop(): Promise<void>;
}

/** Starts `python -m tests.vllm_double --port 0` and waits for its READY line. */
export async function startDouble(): Promise<Double> {
  const child = spawn(python(), ["-m", "tests.vllm_double", "--port", "0"], {
    cwd: REPO,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stdout! });
    const timer = setTimeout(() => reject(new Error("the vLLM double printed no READY line within 60 s")), 60_000);
    lines.on("line", (line) => {
      const match = /^READY (\S+)/.exec(line);
      if (!match) return;
      clearTimeout(timer);
      resolve(match[1]);
    });
    child.once("exit", (code) => reject(new Error(`the vLLM double exited early (${code})`)));
  });
  const root = baseUrl.replace(/\/v1\/?$/, "");
  return {
    baseUrl,
    async script(replies) {
      const response = await fetch(`${root}/_double/script`, { method: "POST", body: JSON.stringify(replies) });
      if (!response.ok) throw new Error(`scripting the double: ${response.status} ${await response.text()}`);
    },
    async requests() {
      return (await (await fetch(`${root}/_double/requests`)).json()) as { method: string; path: string; body: unknown }[];
    },
    stop: () => stopProcess(child),
  };
}

/** JSON as the server sent it; the tests check its shape field by field. */
export type Raw = any;

interface Received {
  method: string;
  params: Raw;
}

/** An LSP connection to the real server that records what it sends and answers its requests. */
export class LspSession {
  readonly connection: MessageConnection;
  readonly notifications: Received[] = [];
  readonly serverRequests: Received[] = [];
  readonly stderr: string[] = [];
  /** What the client answers to `workspace/applyEdit`; the test applies edits itself. */
  onApplyEdit: (edit: Raw) => Promise<boolean> = async () => false;
  private waiters: (() => void)[] = [];
  private readonly child: ChildProcess;

  constructor(args: string[], env: NodeJS.ProcessEnv, cwd: string) {
    this.child = spawn(python(), args, { cwd, env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"] });
    this.child.stderr!.on("data", (data: Buffer) => this.stderr.push(data.toString()));
    this.connection = createMessageConnection(
      new StreamMessageReader(this.child.stdout!),
      new StreamMessageWriter(this.child.stdin!),
    );
    this.connection.onNotification((method, params) => this.record(this.notifications, method, params));
    this.connection.onRequest((method, params) => {
      this.record(this.serverRequests, method, params);
      return this.answer(method, params);
    });
    this.connection.listen();
  }

  private record(into: Received[], method: string, params: unknown): void {
    into.push({ method, params });
    for (const wake of this.waiters.splice(0)) wake();
  }

  private async answer(method: string, params: Raw): Promise<unknown> {
    switch (method) {
      case "workspace/configuration":
        return (params.items as unknown[]).map(() => ({}));
      case "workspace/applyEdit":
        return { applied: await this.onApplyEdit(params.edit) };
      case "window/showMessageRequest":
        return null;
      default: // window/workDoneProgress/create, client/registerCapability, …
        return null;
    }
  }

  /** Resolves with the first recorded notification (from `from` on) that matches. */
  async waitFor(method: string, match: (params: Raw) => boolean = () => true, timeoutMs = 30_000, from = 0): Promise<Raw> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.notifications.slice(from).find((n) => n.method === method && match(n.params));
      if (found) return found.params;
      const left = deadline - Date.now();
      if (left <= 0) {
        const seen = this.notifications.map((n) => n.method).join(", ");
        throw new Error(`no ${method} within ${timeoutMs} ms; got: ${seen}\nserver stderr:\n${this.stderr.join("")}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  async shutdown(): Promise<void> {
    try {
      await withTimeout(this.connection.sendRequest("shutdown"), 10_000, "shutdown");
      await this.connection.sendNotification("exit");
    } catch {
      // Killed below either way.
    }
    this.connection.dispose();
    await stopProcess(this.child);
  }
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
