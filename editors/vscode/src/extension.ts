// Entry point: starts qwen-lsp over stdio and wires the custom protocol into VS Code.

import { spawn, type ChildProcess } from "node:child_process";
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  State,
  type LanguageClientOptions,
  type ServerOptions,
} from "vscode-languageclient/node";
import { cancelCommand, cancellableRequests, InFlight } from "./cancel";
import * as commands from "./commands";
import { FIX_APPLIED_COMMAND, FixFeedback, type AppliedFix } from "./fixFeedback";
import {
  CLIENT_COMMANDS,
  STATUS_NOTIFICATION,
  TERMINAL_OUTPUT_NOTIFICATION,
  type ExecuteServerCommand,
  type StatusParams,
} from "./protocol";
import { runInTerminal } from "./runInTerminal";
import { RESTART_KEYS, serverCommand, serverSettings } from "./settings";
import { StatusItem } from "./status";
import { TerminalWatcher } from "./terminalWatcher";

let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("Qwen");
  const status = new StatusItem(vscode.window.createStatusBarItem("qwen.status", vscode.StatusBarAlignment.Right, 100));
  const feedback = new FixFeedback(() => lsp.diagnostics);
  const inflight = new InFlight();
  const lsp = createClient(output, feedback, inflight);
  client = lsp;

  const execute: ExecuteServerCommand = (command, arg, token) =>
    lsp.sendRequest(ExecuteCommandRequest.type, { command, arguments: [arg] }, token);
  const sendIfRunning = (method: string, params: unknown) => {
    if (lsp.isRunning()) void lsp.sendNotification(method, params);
  };

  context.subscriptions.push(
    output,
    status,
    lsp.onDidChangeState(({ newState }) => {
      if (newState === State.Starting) status.starting();
      else if (newState === State.Stopped) status.stopped();
      // Until the server's first qwen/status: running is all we know.
      else status.update({ state: "idle", message: "The Qwen language server is running" });
    }),
    lsp.onNotification(STATUS_NOTIFICATION, (params: StatusParams) => status.update(params)),
    vscode.commands.registerCommand(CLIENT_COMMANDS.runInTerminal, (arg: unknown) => runInTerminal(arg)),
    vscode.commands.registerCommand(CLIENT_COMMANDS.ask, (arg?: unknown) => commands.ask(execute, arg)),
    vscode.commands.registerCommand(CLIENT_COMMANDS.refine, (arg?: unknown) => commands.refine(execute, arg)),
    vscode.commands.registerCommand("qwen.fix", () => commands.fix(execute)),
    vscode.commands.registerCommand("qwen.review", () => commands.review(execute)),
    vscode.commands.registerCommand("qwen.cancel", () => cancelCommand(inflight)),
    vscode.commands.registerCommand("qwen.restart", () => restart(lsp, output)),
    vscode.commands.registerCommand("qwen.showOutput", () => output.show(true)),
    vscode.commands.registerCommand(FIX_APPLIED_COMMAND, (fix: AppliedFix) => feedback.applied(fix)),
    new TerminalWatcher(
      (params) => {
        feedback.commandRan(params.command); // before the server republishes that command's diagnostics
        sendIfRunning(TERMINAL_OUTPUT_NOTIFICATION, params);
      },
      () => qwenConfig().get<boolean>("terminal.reportFailures", true),
    ),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!event.affectsConfiguration("qwen")) return;
      // The server re-reads the `qwen` section on this notification; send the same explicit values.
      sendIfRunning(DidChangeConfigurationNotification.method, { settings: { qwen: serverSettings(qwenConfig()) } });
      if (RESTART_KEYS.some((key) => event.affectsConfiguration(key))) void offerRestart(lsp, output);
    }),
  );

  await start(lsp, output);
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}

function qwenConfig(scope?: vscode.Uri): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration("qwen", scope);
}

function createClient(output: vscode.OutputChannel, feedback: FixFeedback, inflight: InFlight): LanguageClient {
  // A function, not an Executable: each (re)start reads the current command settings.
  const serverOptions: ServerOptions = () => startServer(output);
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
    outputChannel: output,
    initializationOptions: () => serverSettings(qwenConfig()),
    middleware: {
      // Requests that run the model get a token `qwen.cancel` can cancel (see cancel.ts).
      sendRequest: cancellableRequests(inflight),
      resolveCodeAction: async (item, token, next) => {
        const resolved = await next(item, token);
        return resolved ? feedback.attach(resolved, item) : resolved;
      },
      handleDiagnostics: (uri, diagnostics, next) => next(uri, feedback.mark(diagnostics)),
      workspace: {
        // Answer the `qwen` section with explicit values only (see serverSettings).
        configuration: async (params, token, next) => {
          const answers = await next(params, token);
          if (!Array.isArray(answers)) return answers;
          return params.items.map((item, i) =>
            item.section === "qwen"
              ? serverSettings(qwenConfig(item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined))
              : answers[i],
          );
        },
      },
    },
  };
  // The id "qwen" makes the client honour the `qwen.trace.server` setting.
  return new LanguageClient("qwen", "Qwen", serverOptions, clientOptions);
}

async function startServer(output: vscode.OutputChannel): Promise<ChildProcess> {
  const { command, args } = serverCommand(qwenConfig());
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  output.appendLine(`Starting ${[command, ...args].join(" ")}${cwd ? ` in ${cwd}` : ""}`);
  const child = spawn(command, args, { cwd, env: process.env, stdio: "pipe" });
  // Fail start() with a readable reason (e.g. ENOENT) instead of an unhandled 'error' event.
  await new Promise<void>((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", (error) =>
      reject(new Error(`cannot run ${command}: ${error.message}. Set qwen.server.command or qwen.server.pythonPath.`)),
    );
  });
  return child;
}

async function start(lsp: LanguageClient, output: vscode.OutputChannel): Promise<void> {
  try {
    await lsp.start();
  } catch (error) {
    output.appendLine(`Qwen server failed to start: ${error instanceof Error ? error.message : String(error)}`);
    const choice = await vscode.window.showErrorMessage("Qwen: the language server failed to start.", "Show output");
    if (choice) output.show(true);
  }
}

async function restart(lsp: LanguageClient, output: vscode.OutputChannel): Promise<void> {
  if (lsp.state !== State.Stopped) {
    try {
      await lsp.stop();
    } catch (error) {
      output.appendLine(`Stopping the server: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  await start(lsp, output);
}

async function offerRestart(lsp: LanguageClient, output: vscode.OutputChannel): Promise<void> {
  const choice = await vscode.window.showInformationMessage("Qwen: restart the server to use the new command?", "Restart");
  if (choice) await restart(lsp, output);
}
