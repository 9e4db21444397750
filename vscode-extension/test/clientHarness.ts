/**
 * What `src/client.ts` needs to run outside the editor: a `vscode` module whose progress
 * notification the test cancels and whose messages it records, and a client library whose
 * language client is a scripted server. Import this before `../src/client`: it installs both
 * into Node's module cache, where the client's `require`s find them.
 */

import type { ChildProcess } from 'node:child_process';
import Module from 'node:module';

import * as protocol from 'vscode-languageserver-protocol';

import { PROTOCOL } from '../src/protocol';

type Listener = () => void;

/** The progress notification's Cancel button. */
export class Cancel {
  isCancellationRequested = false;
  private readonly listeners: Listener[] = [];

  onCancellationRequested = (listener: Listener): { dispose(): void } => {
    this.listeners.push(listener);
    return { dispose: () => this.listeners.splice(this.listeners.indexOf(listener), 1) };
  };

  press(): void {
    this.isCancellationRequested = true;
    for (const listener of [...this.listeners]) listener();
  }
}

export interface Sent {
  method: string;
  params: unknown;
  token: unknown; // the cancellation token passed with a request
}

/** The server as the client library reaches it: each request waits until the test answers it. */
export class ScriptedServer {
  readonly requests: Sent[] = [];
  readonly notifications: Sent[] = [];
  private readonly answers: Array<(outcome: unknown, error?: unknown) => void> = [];

  async sendRequest(type: { method: string }, params: unknown, token?: unknown): Promise<unknown> {
    this.requests.push({ method: type.method, params, token });
    return new Promise((resolve, reject) => {
      this.answers.push((outcome, error) => (error === undefined ? resolve(outcome) : reject(error)));
    });
  }

  async sendNotification(type: { method: string }, params: unknown): Promise<void> {
    this.notifications.push({ method: type.method, params, token: undefined });
  }

  answer(outcome: unknown): void {
    this.next()(outcome);
  }

  fail(code: number, message: string): void {
    this.next()(undefined, new protocol.ResponseError(code, message));
  }

  private next(): (outcome: unknown, error?: unknown) => void {
    const answer = this.answers.shift();
    if (!answer) throw new Error('no request waits for an answer');
    return answer;
  }
}

type StateListener = (change: { newState: number }) => void;

export const ui = {
  cancels: [] as Cancel[],
  infos: [] as string[],
  errors: [] as string[], // error messages shown
  warnings: [] as string[], // warning messages shown
  buttons: [] as string[][], // the buttons of each message shown, in order
  choose: (_buttons: string[]): string | undefined => undefined, // the user's click on a message shown
  executed: [] as unknown[][], // the commands run: id, then arguments
  initializeResult: { capabilities: { experimental: { remem: { protocol: PROTOCOL } } } } as unknown, // the server's
  server: new ScriptedServer(),
  states: [] as StateListener[], // the language client's state listeners, latest client last
  setting: process.execPath as unknown, // `remem.command`: any executable will do
  folders: undefined as { uri: { scheme: string; fsPath: string } }[] | undefined, // the workspace's
  panels: [] as Array<{ title: string; webview: { html: string } }>, // webview panels created
  options: undefined as ClientOptions | undefined, // the latest language client's options
  spawn: undefined as (() => Promise<ChildProcess>) | undefined, // how the latest client starts its server
};

type Next = (command: string, args: unknown[]) => unknown;
type CodeActions = Array<{ title: string; command?: { title: string; command: string } }>;
type NextActions = (document: unknown, range: unknown, context: unknown, token: unknown) => Promise<CodeActions>;
/** The part of the client's options the tests drive: the middleware of `workspace/executeCommand`,
 * which a code lens or code action of the server's runs through, and of the code actions asked. */
export interface ClientOptions {
  middleware: {
    executeCommand(command: string, args: unknown[], next: Next): unknown;
    provideCodeActions?(document: unknown, range: unknown, context: unknown, token: unknown, next: NextActions): Promise<unknown>;
  };
}

export const State = { Stopped: 1, Running: 2, Starting: 3 }; // as the library numbers them

class EventEmitter<T> {
  private listeners: Array<(value: T) => void> = [];
  event = (listener: (value: T) => void): { dispose(): void } => {
    this.listeners.push(listener);
    return { dispose: () => undefined };
  };
  fire(value: T): void {
    for (const listener of this.listeners) listener(value);
  }
  dispose(): void {
    this.listeners = [];
  }
}

const vscode = {
  EventEmitter,
  ProgressLocation: { Notification: 15 },
  window: {
    withProgress<R>(_options: unknown, task: (progress: { report(): void }, cancel: Cancel) => Promise<R>): Promise<R> {
      const cancel = new Cancel();
      ui.cancels.push(cancel);
      return task({ report: () => undefined }, cancel);
    },
    async showInformationMessage(message: string, ...buttons: string[]): Promise<string | undefined> {
      ui.infos.push(message);
      return shown(buttons);
    },
    async showErrorMessage(message: string, ...buttons: string[]): Promise<string | undefined> {
      ui.errors.push(message);
      return shown(buttons);
    },
    async showWarningMessage(message: string, ...buttons: unknown[]): Promise<string | undefined> {
      ui.warnings.push(message);
      return shown(buttons.filter((b): b is string => typeof b === 'string')); // a modal one's options first
    },
    createWebviewPanel(_type: string, title: string) {
      const panel = { title, webview: { html: '' }, reveal: () => undefined, onDidDispose: () => undefined, dispose: () => undefined };
      ui.panels.push(panel);
      return panel;
    },
  },
  ViewColumn: { Active: -1 },
  workspace: {
    get workspaceFolders() {
      return ui.folders;
    },
    getConfiguration: () => ({ get: () => ui.setting }),
  },
  commands: {
    async executeCommand(...command: unknown[]): Promise<undefined> {
      ui.executed.push(command);
      return undefined;
    },
  },
  // The tree items the views make, as plain data.
  TreeItem: class {
    command: unknown;
    tooltip: unknown;
    iconPath: unknown;
    constructor(
      public label: string,
      public collapsibleState: number,
    ) {}
  },
  ThemeIcon: class {
    constructor(
      public id: string,
      public color?: unknown,
    ) {}
  },
  TreeItemCollapsibleState: { None: 0, Collapsed: 1, Expanded: 2 },
};

function shown(buttons: string[]): string | undefined {
  ui.buttons.push(buttons);
  return ui.choose(buttons);
}

class LanguageClient {
  constructor(_id: string, _name: string, server: unknown, options: ClientOptions) {
    ui.spawn = server as () => Promise<ChildProcess>;
    ui.options = options;
  }
  start = async (): Promise<void> => undefined;
  get initializeResult(): unknown {
    return ui.initializeResult;
  }
  stop = async (): Promise<void> => undefined;
  onNotification = (): void => undefined;
  onDidChangeState = (listener: StateListener): void => {
    ui.states.push(listener);
  };
  onProgress = (): { dispose(): void } => ({ dispose: () => undefined });
  sendRequest = (type: { method: string }, params: unknown, token?: unknown) =>
    ui.server.sendRequest(type, params, token);
  sendNotification = (type: { method: string }, params: unknown) => ui.server.sendNotification(type, params);
}

const library = { ...protocol, LanguageClient, State, RevealOutputChannelOn: { Never: 4 } };

const stubs: Record<string, unknown> = { vscode, './languageclient': library };
const loader = Module as unknown as {
  _resolveFilename(request: string, ...rest: unknown[]): string;
  _cache: Record<string, unknown>;
};
const resolve = loader._resolveFilename;
loader._resolveFilename = function (request: string, ...rest: unknown[]): string {
  return request in stubs ? `stub:${request}` : resolve.call(this, request, ...rest);
};
for (const [name, exports] of Object.entries(stubs)) {
  loader._cache[`stub:${name}`] = { id: `stub:${name}`, exports, loaded: true };
}
