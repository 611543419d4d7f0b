// A tiny stand-in for the `vscode` module: only what the extension's logic touches, with
// scriptable dialogs and recorded effects. `register.ts` makes `require("vscode")` load it.

import { pathToFileURL, fileURLToPath } from "node:url";

type Listener<T> = (value: T) => unknown;

export class EventEmitter<T> {
  private listeners = new Set<Listener<T>>();
  readonly event = (listener: Listener<T>) => {
    this.listeners.add(listener);
    return new Disposable(() => this.listeners.delete(listener));
  };
  fire(value: T): void {
    for (const listener of [...this.listeners]) listener(value);
  }
  get listenerCount(): number {
    return this.listeners.size;
  }
}

export class Disposable {
  constructor(private readonly fn: () => unknown = () => undefined) {}
  dispose(): void {
    this.fn();
  }
}

export class CancellationError extends Error {
  constructor() {
    super("Canceled");
    this.name = "Canceled";
  }
}

export class CancellationTokenSource {
  private readonly cancelled = new EventEmitter<void>();
  readonly token = {
    isCancellationRequested: false,
    onCancellationRequested: this.cancelled.event,
  };
  cancel(): void {
    if (this.token.isCancellationRequested) return;
    this.token.isCancellationRequested = true;
    this.cancelled.fire();
  }
  dispose(): void {}
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(start: Position, end: Position) {
    this.start = start;
    this.end = end;
  }
  get isEmpty(): boolean {
    return this.start.line === this.end.line && this.start.character === this.end.character;
  }
}

export class Selection extends Range {
  constructor(
    readonly anchor: Position,
    readonly active: Position,
  ) {
    super(anchor, active);
  }
}

export class Uri {
  private constructor(private readonly href: string) {}
  static file(path: string): Uri {
    return new Uri(pathToFileURL(path).href);
  }
  static parse(value: string): Uri {
    return new Uri(value);
  }
  get fsPath(): string {
    return fileURLToPath(this.href);
  }
  toString(): string {
    return this.href;
  }
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export enum DiagnosticSeverity {
  Error = 0,
  Warning = 1,
  Information = 2,
  Hint = 3,
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

export class FakeStatusBarItem {
  name = "";
  text = "";
  tooltip: string | undefined;
  command: string | undefined;
  backgroundColor: ThemeColor | undefined;
  visible = false;
  disposed = false;
  show(): void {
    this.visible = true;
  }
  hide(): void {
    this.visible = false;
  }
  dispose(): void {
    this.disposed = true;
  }
}

export class FakeTerminal {
  shown = false;
  sent: string[] = [];
  shellIntegration: { executeCommand(command: string): void; cwd?: Uri } | undefined;
  executed: string[] = [];
  constructor(
    readonly name: string,
    withShellIntegration: boolean,
  ) {
    if (withShellIntegration) this.giveShellIntegration();
  }
  giveShellIntegration() {
    this.shellIntegration = { executeCommand: (command: string) => void this.executed.push(command) };
    return this.shellIntegration;
  }
  show(): void {
    this.shown = true;
  }
  sendText(text: string, addNewLine = true): void {
    this.sent.push(addNewLine ? `${text}\n` : text);
  }
}

export interface DialogCall {
  kind: "information" | "warning" | "error" | "input";
  message: string;
  options?: unknown;
  items: string[];
}

/** Test controls: answers for dialogs and everything the code under test did. */
export const fake = {
  dialogs: [] as DialogCall[],
  answers: [] as (string | undefined)[], // consumed in order by message boxes and input boxes
  terminals: [] as FakeTerminal[],
  newTerminalsHaveShellIntegration: true,
  config: {} as Record<string, unknown>,
  diagnostics: [] as unknown[], // what languages.getDiagnostics(uri) returns
  progress: [] as { options: unknown; source: CancellationTokenSource }[], // withProgress calls; cancel() = its Cancel button
  statusMessages: [] as string[], // window.setStatusBarMessage
  reset(): void {
    this.progress = [];
    this.statusMessages = [];
    this.diagnostics = [];
    this.dialogs = [];
    this.answers = [];
    this.terminals = [];
    this.newTerminalsHaveShellIntegration = true;
    this.config = {};
    window.activeTerminal = undefined;
    window.activeTextEditor = undefined;
    workspace.workspaceFolders = undefined;
  },
};

function dialog(kind: DialogCall["kind"]) {
  return async (message: string, ...rest: unknown[]): Promise<string | undefined> => {
    const options = rest.length > 0 && typeof rest[0] === "object" && rest[0] !== null ? rest.shift() : undefined;
    fake.dialogs.push({ kind, message, options, items: rest as string[] });
    return fake.answers.shift();
  };
}

const startExecution = new EventEmitter<unknown>();
const endExecution = new EventEmitter<unknown>();
const changeShellIntegration = new EventEmitter<unknown>();

export const window = {
  activeTerminal: undefined as FakeTerminal | undefined,
  activeTextEditor: undefined as unknown,
  createStatusBarItem: () => new FakeStatusBarItem(),
  createOutputChannel: (name: string) => ({ name, lines: [] as string[], appendLine() {}, show() {}, dispose() {} }),
  showInformationMessage: dialog("information"),
  showWarningMessage: dialog("warning"),
  showErrorMessage: dialog("error"),
  showInputBox: async (options: unknown): Promise<string | undefined> => {
    fake.dialogs.push({ kind: "input", message: "", options, items: [] });
    return fake.answers.shift();
  },
  withProgress: async <T>(options: unknown, task: (progress: unknown, token: unknown) => Promise<T>): Promise<T> => {
    const source = new CancellationTokenSource();
    fake.progress.push({ options, source });
    return task({ report() {} }, source.token);
  },
  setStatusBarMessage: (text: string) => {
    fake.statusMessages.push(text);
    return new Disposable();
  },
  createTerminal: (options: { name?: string } | string) => {
    const name = typeof options === "string" ? options : (options.name ?? "");
    const terminal = new FakeTerminal(name, fake.newTerminalsHaveShellIntegration);
    fake.terminals.push(terminal);
    return terminal;
  },
  onDidStartTerminalShellExecution: startExecution.event,
  onDidEndTerminalShellExecution: endExecution.event,
  onDidChangeTerminalShellIntegration: changeShellIntegration.event,
};

/** Fires the window events the way VS Code does. */
export const events = { startExecution, endExecution, changeShellIntegration };

export const workspace = {
  workspaceFolders: undefined as { uri: Uri; name: string; index: number }[] | undefined,
  getConfiguration: () => ({
    get: <T>(key: string, fallback?: T) => (key in fake.config ? (fake.config[key] as T) : fallback),
    inspect: () => undefined,
  }),
};

export const commands = {
  registerCommand: () => new Disposable(),
};

export const languages = {
  getDiagnostics: (_uri: unknown) => fake.diagnostics,
};
