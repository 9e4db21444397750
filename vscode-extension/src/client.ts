/**
 * The language client: starts `remem lsp` (from the `remem.command` setting), restarts it,
 * passes the server's notifications on as events, and runs server commands. Consolidation
 * runs under a cancellable progress notification of its own, whatever triggered it (palette,
 * tree, code lens or code action), because the client library would otherwise show the
 * server's progress only in the status bar, where it cannot be cancelled. Its Cancel asks the
 * server to stop and waits for what happened: a commit already under way is not undone
 * (decision 0352). A consolidation the server's code action asks for goes through the extension's
 * flow first (`consolidateThrough`), as one from the palette does.
 */

import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';

import * as vscode from 'vscode';
import type {
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  WorkDoneProgressBegin,
  WorkDoneProgressReport,
} from 'vscode-languageclient/node';

import { ActionTitles } from './actionTitles';
import { notFoundMessage, notStringMessage, probe, resolveExecutable, serverFolder } from './executable';
import { FixableError, fixesOf, OPEN_COMMAND_SETTING, RESTART_SERVER, SHOW_LOG } from './fixes';
import type { Server } from './flows';
import { inert } from './format';
import { hidingKeys } from './hiddenKeys';
import { CommandTitles, paletteName, Settings } from './ids';
import {
  type ConsolidationOutcome,
  Notifications,
  ServerCommands,
  type SessionsProgressParams,
  PROTOCOL,
  type StatusParams,
  serverProtocol,
  TRANSCRIPT_SCHEME,
} from './protocol';
import type * as Library from './languageclient';
import { endProcess, spawnServer } from './serverProcess';
import { errorMessage, notify, tellWithFixes } from './vscodeapi';

function isDirectory(candidate: string): boolean {
  try {
    return fs.statSync(candidate).isDirectory();
  } catch {
    return false;
  }
}

const RESTART = paletteName(CommandTitles.restartServer);
const NOT_RUNNING = `remem: the language server is not running. Run "${RESTART}".`;
const STOPPED_ANSWERING =
  'remem: the language server stopped before it answered; what was asked may or may not have been ' +
  `done: look, then try again (if the server stays down, run "${RESTART}").`;

/** The server is down: restarting it is the way out, and the log says why it went down. */
const notRunning = (message: string) => new FixableError(message, [RESTART_SERVER, SHOW_LOG]);

/** The client library, read at the first start rather than with the extension (decision 0245). */
function library(): typeof Library {
  // A `require` at run time: esbuild leaves `./languageclient` out of the extension's bundle.
  return require('./languageclient') as typeof Library;
}

export class RememClient implements Server, vscode.Disposable {
  private client: LanguageClient | undefined;
  private ready: Promise<LanguageClient> | undefined;
  // A restart under way: the old server stopping (up to 2 s), then the new one starting. Requests
  // wait for it rather than be told to restart the server that is restarting.
  private restarting: Promise<void> | undefined;
  private server: ChildProcess | undefined; // the latest `remem lsp` the client runs
  private readonly treeChanged = new vscode.EventEmitter<void>();
  private readonly memoryChanged = new vscode.EventEmitter<void>();
  private readonly status = new vscode.EventEmitter<StatusParams>();
  private readonly sessionsProgress = new vscode.EventEmitter<SessionsProgressParams>();
  private readonly consolidated = new vscode.EventEmitter<ConsolidationOutcome>();
  private readonly runningAgain = new vscode.EventEmitter<void>();
  private latest: StatusParams = { state: 'starting' };
  private readonly actionTitles = new ActionTitles(); // of the server's code actions, for their failures
  readonly onTreeChanged = this.treeChanged.event;
  readonly onMemoryChanged = this.memoryChanged.event;
  readonly onStatus = this.status.event;
  readonly onSessionsProgress = this.sessionsProgress.event;
  /** A consolidation this window ran has ended: the extension tells its outcome (the server does not). */
  readonly onConsolidated = this.consolidated.event;
  /** The library started a new server after one that ran died: what the views found through the
   * old one (the folders above, decision 0488) is to be found again. Fired before the views are
   * told to read again. An explicit `restart` fires nothing: its caller reads the views again. */
  readonly onRunningAgain = this.runningAgain.event;

  // What runs `remem.lsp.consolidate` when the server's code action asks for it (`consolidateThrough`).
  private consolidation: ((arg: object) => Promise<unknown>) | undefined;

  // Requests made before the first start wait for it: the views ask at once, and a kept tree is
  // drawn before the server is started (decision 0245).
  private readonly firstStart: Promise<void>;
  private firstStarted: () => void = () => undefined;

  constructor(readonly log: vscode.LogOutputChannel) {
    this.firstStart = new Promise((resolve) => {
      this.firstStarted = resolve;
    });
  }

  /** The latest status, for a listener that came after the server was started. */
  get currentStatus(): StatusParams {
    return this.latest;
  }

  /** Starts the server, unless it is started; a missing executable is reported (with a fix-it)
   * and leaves it stopped. */
  start(): Promise<LanguageClient> {
    if (this.ready) return this.ready; // a restart came first
    this.ready = this.launch();
    this.firstStarted();
    this.ready.catch((error: unknown) => this.log.error(`remem lsp did not start: ${String(error)}`));
    return this.ready;
  }

  /** Stops the server and starts it again. A start that fails is no error of the restart's: the
   * start has reported it (status bar, a message with its fix, the log) and the views, read again,
   * show why. */
  async restart(): Promise<void> {
    const restarting = (async () => {
      await this.stop();
      await this.start().catch(() => undefined);
    })();
    this.restarting = restarting;
    try {
      await restarting;
    } finally {
      if (this.restarting === restarting) this.restarting = undefined;
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    const server = this.server;
    this.client = undefined;
    this.ready = undefined;
    this.server = undefined;
    if (client) {
      await client.stop().catch((error: unknown) => this.log.warn(`stopping remem lsp: ${String(error)}`));
    }
    if (server) void endProcess(server);
  }

  async request<R>(method: string, params: object): Promise<R> {
    return answered((await this.running()).sendRequest<R>(method, params));
  }

  async command<R>(id: string, arg: object): Promise<R> {
    const client = await this.running();
    if (id === ServerCommands.consolidate) return answered(this.consolidate(client, arg)) as Promise<R>;
    const params = { command: id, arguments: [arg] };
    return answered(client.sendRequest(library().ExecuteCommandRequest.type, params)) as Promise<R>;
  }

  /** The server's own `remem.lsp.consolidate` (its code action's) runs `flow`, the extension's
   * consolidation flow: the route checked first, refusals explained. The flow's consolidation
   * comes back through `command`, which runs it. */
  consolidateThrough(flow: (arg: object) => Promise<unknown>): void {
    this.consolidation = flow;
  }

  dispose(): void {
    void this.stop();
    this.treeChanged.dispose();
    this.sessionsProgress.dispose();
    this.consolidated.dispose();
    this.runningAgain.dispose();
    this.memoryChanged.dispose();
    this.status.dispose();
  }

  private async running(): Promise<LanguageClient> {
    await this.firstStart;
    // A restart's, awaited until none is under way (one may begin while another ends).
    while (this.restarting) await this.restarting;
    if (!this.ready) throw notRunning(NOT_RUNNING);
    return this.ready;
  }

  private async launch(): Promise<LanguageClient> {
    const setting = vscode.workspace.getConfiguration(Settings.section).get<unknown>(Settings.command, 'remem');
    // A folder gone from disk, or not on this machine, would fail the spawn with ENOENT naming remem.
    const cwd = serverFolder(vscode.workspace.workspaceFolders ?? [], isDirectory, os.homedir());
    const resolved = typeof setting === 'string' ? resolveExecutable(setting, process.env, cwd, probe) : null;
    if (!resolved || !('executable' in resolved)) {
      const message = resolved ? notFoundMessage(resolved) : notStringMessage(setting);
      this.tell({ state: 'no-server', message });
      const fixes = [OPEN_COMMAND_SETTING, SHOW_LOG];
      void tellWithFixes('error', message, fixes);
      throw new FixableError(message, fixes);
    }
    const { executable } = resolved;
    this.tell({ state: 'starting', message: `starting ${executable} lsp` });
    this.log.info(`starting ${executable} lsp`);
    const lsp = library();
    // The id is the settings section: the library reads `<id>.trace.server` itself.
    const client = new lsp.LanguageClient(Settings.section, 'Remem', this.serverOptions(executable, cwd), this.clientOptions());
    client.onNotification(Notifications.treeChanged, () => this.treeChanged.fire());
    client.onNotification(Notifications.memoryChanged, () => this.memoryChanged.fire());
    client.onNotification(Notifications.status, (params: StatusParams) => this.tell(params));
    client.onNotification(Notifications.sessionsProgress, (params: SessionsProgressParams) =>
      this.sessionsProgress.fire(params),
    );
    let ran = false;
    client.onDidChangeState(({ newState }) => {
      if (this.client !== client) return;
      if (newState === lsp.State.Stopped) {
        this.tell({ state: 'no-server', message: 'The language server stopped; see the log.' });
      } else if (newState === lsp.State.Running) {
        // The library restarted a server that died: the views may show what it refused while it
        // was down, and the new server has no gap of its own to tell them about.
        if (ran) {
          this.runningAgain.fire();
          this.treeChanged.fire();
          this.memoryChanged.fire();
        }
        ran = true;
      }
    });
    this.client = client;
    await client.start();
    this.checkProtocol(client, executable);
    return client;
  }

  /** A server older than the extension refuses what it does not know (an undo of a first change);
   * one newer answers what the extension does not know (a new review state, a new kind of error),
   * which it may show wrongly. Either is said once at start, with the way out, rather than as a
   * refusal or a wrong row at each request. */
  private checkProtocol(client: LanguageClient, executable: string): void {
    const spoken = serverProtocol(client.initializeResult?.capabilities);
    if (spoken === PROTOCOL) return;
    const newer = spoken !== null && spoken > PROTOCOL;
    const message = newer
      ? `remem: ${executable} is newer than this extension (protocol ${spoken}; the extension speaks ${PROTOCOL}), ` +
        'so some of what it answers may be shown wrongly or not at all. Update the extension, then reload the window.'
      : `remem: ${executable} is older than this extension (protocol ${spoken ?? '30 or older'}; the extension ` +
        `speaks ${PROTOCOL}), so some actions will be refused. Update remem (or set "${Settings.commandName}" ` +
        'to a newer one), then restart the server.';
    this.log.warn(message);
    void tellWithFixes('warn', message, newer ? [] : [RESTART_SERVER, OPEN_COMMAND_SETTING]);
  }

  private serverOptions(executable: string, cwd: string): ServerOptions {
    // Called by `client.start()` (again on each automatic restart), which spawns it at once.
    return async () => {
      const server = await spawnServer(executable, cwd, serverEnvironment(process.env));
      server.on('error', (error) => this.log.error(`remem lsp: ${error.message}`));
      this.server = server;
      return server;
    };
  }

  private clientOptions(): LanguageClientOptions {
    return {
      documentSelector: [
        { scheme: 'file', language: 'markdown' },
        { scheme: TRANSCRIPT_SCHEME },
      ],
      // One channel, its writes through `hidingKeys`: a traced request's parameters are printed whole.
      outputChannel: hidingKeys(this.log),
      revealOutputChannelOn: library().RevealOutputChannelOn.Never,
      middleware: {
        provideCodeActions: async (document, range, context, token, next) => {
          const actions = await next(document, range, context, token);
          this.actionTitles.seen(actions);
          return actions;
        },
        executeCommand: (command, args, next) => {
          if (command !== ServerCommands.consolidate) return this.told(command, () => next(command, args));
          const arg = (args[0] ?? {}) as object;
          if (this.consolidation) return this.consolidation(arg);
          return this.client ? this.consolidate(this.client, arg) : next(command, args);
        },
      },
    };
  }

  /** A server command the library runs (a quick fix's), whose failure the library only logs: the
   * user clicked and saw nothing. It is shown, then failed as before. The user clicked the action
   * by its title, which the command's id (`remem.lsp.…`) is not: that goes to the log, the title
   * to the message (one no code action offered, run by another extension say, is "the action"). */
  private async told(command: string, run: () => unknown): Promise<unknown> {
    try {
      return await answered(Promise.resolve(run()));
    } catch (error) {
      const message = errorMessage(error); // the library's own failures said as ours are
      this.log.error(`${command} failed: ${message}`);
      const title = this.actionTitles.of(command);
      const action = title === undefined ? 'the action' : `“${title}”`;
      const shown = message.startsWith('remem:') ? message : `Remem: ${action} failed: ${message}`;
      void tellWithFixes('error', shown, fixesOf(error));
      throw error;
    }
  }

  private tell(status: StatusParams): void {
    this.latest = status;
    this.status.fire(status);
  }

  /** `remem.lsp.consolidate` with a work-done token we show as a cancellable notification. */
  private consolidate(client: LanguageClient, arg: object): Thenable<unknown> {
    const options = {
      location: vscode.ProgressLocation.Notification,
      title: 'Remem: consolidating',
      cancellable: true,
    };
    const { ExecuteCommandRequest, LSPErrorCodes, WorkDoneProgress, WorkDoneProgressCancelNotification } = library();
    return vscode.window.withProgress(options, async (progress, cancel) => {
      const token = randomUUID();
      let done = 0;
      const listener = client.onProgress(WorkDoneProgress.type, token, (value) => {
        if (value.kind === 'end') return;
        const step = value as WorkDoneProgressBegin | WorkDoneProgressReport;
        const increment = step.percentage === undefined ? undefined : Math.max(0, step.percentage - done);
        done = step.percentage ?? done;
        // The server's text, shown in a notification: inert, as every notification's (decision 0417).
        progress.report({ message: step.message === undefined ? undefined : inert(step.message), increment });
      });
      // Cancel stops the run, not the request: once committing has begun the run goes on, and
      // only the answer says whether memory changed.
      const stopping = cancel.onCancellationRequested(
        () => void client.sendNotification(WorkDoneProgressCancelNotification.type, { token }),
      );
      progress.report({ message: 'starting…' });
      try {
        const told = { ...arg, announce: false }; // we tell the outcome, with a diff the server cannot open
        const params = { command: ServerCommands.consolidate, arguments: [told], workDoneToken: token };
        const outcome = (await client.sendRequest(ExecuteCommandRequest.type, params)) as ConsolidationOutcome;
        this.consolidated.fire(outcome); // a cancelled run too: its message and receipt say so
        return outcome;
      } catch (error) {
        // The server answers RequestCancelled only for a run stopped before its attempt began.
        if ((error as { code?: unknown } | undefined)?.code === LSPErrorCodes.RequestCancelled) {
          void notify.info('Remem: consolidation cancelled; memory is unchanged.');
          return undefined;
        }
        throw error;
      } finally {
        stopping.dispose();
        listener.dispose();
      }
    });
  }
}

/** A request's answer; the library's "Client is not running" (it gave up restarting a server that
 * kept crashing, or it is stopping) and "Pending response rejected since connection got disposed"
 * (the server died while answering) say what to do instead. */
async function answered<R>(answer: Thenable<R>): Promise<R> {
  try {
    return await answer;
  } catch (error) {
    const code = (error as { code?: unknown } | undefined)?.code;
    const codes = library().ErrorCodes;
    if (code === codes.ConnectionInactive) throw notRunning(NOT_RUNNING);
    if (code === codes.PendingResponseRejected) throw notRunning(STOPPED_ANSWERING);
    throw error;
  }
}

/** The editor's environment but `REMEM_NO_DAEMON`: the command line's switch, which a login shell
 * may export for the terminal (where the CLI suggests `--no-daemon`), would turn the daemon's
 * features off in the editor too, and nothing in the editor could turn them back on (decision 0507). */
function serverEnvironment(editor: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env = { ...editor };
  delete env.REMEM_NO_DAEMON;
  return env;
}
