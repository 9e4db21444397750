/**
 * Entry point: wires the language client, the two views, the transcript documents, the status
 * bar and the commands together, and starts the client once Session Branches is drawn. Client
 * command ids are `remem.*`; the server's own commands (`remem.lsp.*`) are registered by the
 * client library from the server's capabilities.
 */

import * as vscode from 'vscode';

import { keyedRow } from './args';
import { RememClient } from './client';
import { fixesOf } from './fixes';
import * as flows from './flows';
import { HistoryProvider } from './history';
import { ClientCommands, ContextKeys, Settings, STATUS_ITEM, Views } from './ids';
import { MemoryView } from './memoryView';
import { HISTORY_SCHEME, ServerCommands, TRANSCRIPT_SCHEME, type StatusParams } from './protocol';
import { ReceiptPanels } from './receipts';
import { archivedRows, findingSessionsAbove, SessionsView } from './sessionsView';
import { statusView } from './status';
import { TranscriptProvider } from './transcripts';
import { activeSession, editorUi, errorMessage, tellWithFixes, workspaceFolders } from './vscodeapi';

const REFRESH_DELAY_MS = 150; // coalesces a burst of change notifications into one re-read
const KEPT_TREE_DRAW_MS = 500; // how long a kept tree's drawing holds the server back
const FIRST_ROWS_WAIT_MS = 1500; // how long the view's first rows may hold the server back (a hidden view draws none)

let client: RememClient | undefined;

type CommandKey = keyof typeof ClientCommands;
type Handler = (...args: unknown[]) => Promise<unknown>;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel('Remem', { log: true });
  const server = new RememClient(log);
  client = server;
  const above = findingSessionsAbove(server); // both views' empty states name the folder above it finds
  const sessions = new SessionsView(server, workspaceFolders, context.workspaceState, above);
  const sessionsTree = vscode.window.createTreeView(Views.sessions, { treeDataProvider: sessions, showCollapseAll: true });
  sessions.onDescription = (text) => {
    sessionsTree.description = text;
  };
  // A keybinding on the tree names no row: it means the selected one, or the last one selected
  // while a refresh empties the selection (decision 0181), if its folder is still open.
  let selected: unknown;
  const row = (arg: unknown): unknown => keyedRow(arg, sessionsTree.selection, selected, workspaceFolders());
  const showArchived = async (show: boolean): Promise<void> => {
    await vscode.commands.executeCommand('setContext', ContextKeys.showArchived, show);
    sessions.setShowArchived(show);
  };
  const memory = new MemoryView(server, workspaceFolders, above);
  const transcripts = new TranscriptProvider(server, (id) => sessions.labelOf(id), log);
  const receipts = new ReceiptPanels(server);
  sessions.onRelabel = (labels) => {
    receipts.relabel(labels);
    refreshMemory(); // its recent receipts are named by session
    void transcripts.relabel(labels); // never rejects: a tab that fails is logged
  };
  // A tab is named as the tree names its session. One the tree names only while it opens (a
  // branch just made) is retitled once open, by the transcripts' watch on the tabs.
  const openTranscript: flows.Ui['openTranscript'] = (session, title, turn, keepFocus) =>
    editorUi.openTranscript(session, sessions.labelOf(session) ?? title, turn, keepFocus);
  const statusItem = vscode.window.createStatusBarItem(STATUS_ITEM, vscode.StatusBarAlignment.Left, 10);
  statusItem.name = 'Remem';
  statusItem.command = ClientCommands.showLog;

  const refreshSessions = debounce(() => {
    sessions.refresh();
    transcripts.refreshOpen();
  });
  const refreshMemory = debounce(() => memory.refresh());
  const ctx: flows.FlowContext = {
    ui: { ...editorUi, openReceipt: (review, title) => receipts.show(review, title), openTranscript },
    server,
    folders: workspaceFolders,
    now: Date.now,
    activeSession,
    refreshSessions,
    refreshMemory,
  };

  let consolidating: string | null = null;
  const showStatus = (status: StatusParams): void => {
    const view = statusView(status);
    statusItem.text = view.text;
    statusItem.tooltip = view.tooltip;
    statusItem.backgroundColor = view.warning ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    statusItem.show();
    const now = status.consolidating ?? null;
    if (consolidating !== null && now !== consolidating) {
      // A consolidation ended, whoever started it (palette, code lens, another window).
      refreshSessions();
      refreshMemory();
    }
    consolidating = now;
  };
  showStatus(server.currentStatus);

  /** A flow's error is logged and shown, with its fixes (the server not running: Restart Server,
   * Show Log); a dismissal (flows.run) is not an error. */
  const reported = async (what: string, flow: () => Promise<unknown>): Promise<void> => {
    try {
      await flows.run(flow);
    } catch (error) {
      log.error(`${what}: ${errorMessage(error)}`);
      void tellWithFixes('error', errorMessage(error), fixesOf(error));
    }
  };
  const command = (id: string, handler: Handler): vscode.Disposable =>
    vscode.commands.registerCommand(id, (...args: unknown[]) => reported(id, () => handler(...args)));
  // Each command of `ClientCommands` (which `package.json` contributes, as test/manifest.test.ts
  // checks) by its key: one added without its handler here fails the type check.
  const handlers: Record<CommandKey, Handler> = {
    consolidateSession: (arg) => flows.consolidateSession(ctx, arg),
    branchFromTurn: (arg) => flows.branchFromTurn(ctx, arg),
    openGlobalMemory: () => flows.openGlobalMemory(ctx),
    openWorkspaceMemory: (arg) => flows.openWorkspaceMemory(ctx, arg),
    openTranscript: (arg) => flows.openTranscript(ctx, arg),
    showReceipt: (arg) => flows.showReceipt(ctx, arg),
    showMemoryHistory: (arg) => flows.showMemoryHistory(ctx, arg),
    selectModel: () => flows.selectModel(ctx),
    enterApiKey: () => flows.enterApiKey(ctx),
    renameSession: (arg) => flows.renameSession(ctx, row(arg)),
    archiveSession: (arg) => flows.setArchived(ctx, row(arg), true),
    restoreSession: (arg) => flows.setArchived(ctx, row(arg), false),
    showArchived: () => showArchived(true),
    hideArchived: () => showArchived(false),
    openFile: (path) => editorUi.openFile(String(path)),
    learnMore: () => learnMore(context.extensionUri),
    restartServer: () => restart(),
    showLog: async () => log.show(),
    // A view's Refresh button: what it found above its empty folders is found again too.
    refreshSessions: async () => {
      sessions.forgetAbove();
      refreshSessions();
    },
    refreshMemory: async () => {
      memory.forgetAbove();
      refreshMemory();
    },
  };

  // A memory file's source action runs the server's command: it gets the palette's checks too.
  server.consolidateThrough((arg) => reported(ServerCommands.consolidate, () => flows.consolidateAsked(ctx, arg)));

  context.subscriptions.push(
    log,
    server,
    sessions,
    memory,
    transcripts,
    receipts,
    statusItem,
    sessionsTree,
    vscode.window.createTreeView(Views.memory, { treeDataProvider: memory }),
    vscode.workspace.registerTextDocumentContentProvider(TRANSCRIPT_SCHEME, transcripts),
    vscode.workspace.registerTextDocumentContentProvider(HISTORY_SCHEME, new HistoryProvider(server)),
    sessionsTree.onDidChangeSelection(({ selection }) => {
      selected = selection[0];
    }),
    server.onStatus(showStatus),
    server.onRunningAgain(forgetAbove),
    server.onTreeChanged(refreshSessions),
    server.onSessionsProgress((params) => sessions.progress(params)),
    server.onConsolidated((outcome) => void reported('consolidation result', () => flows.showConsolidation(ctx, outcome))),
    server.onMemoryChanged(() => {
      refreshMemory();
      refreshSessions(); // review badges follow memory commits
    }),
    // The Memory view judges open memory files with their unsaved text, as the squiggles do.
    vscode.workspace.onDidChangeTextDocument(({ document }) => {
      if (document.uri.scheme === 'file' && memory.shows(document.uri.fsPath)) refreshMemory();
    }),
    vscode.workspace.onDidCloseTextDocument((document) => {
      if (document.uri.scheme === 'file' && memory.shows(document.uri.fsPath)) refreshMemory();
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => {
      refreshSessions();
      refreshMemory();
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(Settings.commandName)) void restart();
    }),
    vscode.window.registerFileDecorationProvider(archivedRows),
    ...Object.entries(handlers).map(([key, handler]) => command(ClientCommands[key as CommandKey], handler)),
  );

  void startAfterFirstRows(server, sessions);

  /** Never rejects: a server that cannot start was reported by the client (once, with its fix),
   * and the views, read again, show why instead of the old server's rows. */
  async function restart(): Promise<void> {
    await server.restart();
    forgetAbove(); // what the old server said of the folders above: ask the new one
    refreshSessions();
    refreshMemory();
  }

  /** A server started anew: the folders above the empty ones are asked again at their next draw. */
  function forgetAbove(): void {
    sessions.forgetAbove();
    memory.forgetAbove();
  }
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}

/** Starts `remem lsp` once Session Branches has answered its first rows (the kept tree or the
 * loading row), or after a while when the view is not shown and asks for none. Python's start
 * takes a core for a second or more, and begun while the window drew those rows it held them
 * back by up to 2 s on two cores (decision 0245). The views' requests wait for the start. */
async function startAfterFirstRows(server: RememClient, sessions: SessionsView): Promise<void> {
  await Promise.race([sessions.firstRows, new Promise((resolve) => setTimeout(resolve, FIRST_ROWS_WAIT_MS))]);
  // A turn of the event loop first: reading the client library and spawning the server block it,
  // and the rows are sent to the window before that. Kept rows need no server to be seen, so the
  // window is left to draw them before Python's start takes a core (decision 0282).
  await new Promise((resolve) => setTimeout(resolve, sessions.showsKeptTree ? KEPT_TREE_DRAW_MS : 0));
  await server.start().catch(() => undefined); // a failure to start is reported by the client
}

/** The extension's README (it travels in the package), where sessions and their roots are explained. */
async function learnMore(extension: vscode.Uri): Promise<void> {
  await vscode.commands.executeCommand('markdown.showPreview', vscode.Uri.joinPath(extension, 'README.md'));
}

function debounce(action: () => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  return () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      action();
    }, REFRESH_DELAY_MS);
  };
}
