/** The Session Branches view: the lineage forest of each workspace folder as a tree. */

import * as os from 'node:os';

import * as vscode from 'vscode';

import { FoldersAbove, nearestAbove } from './ancestors';
import type { Fix } from './fixes';
import { type FolderElement, FolderView } from './folderView';
import type { Folder, Server } from './flows';
import { ClientCommands } from './ids';
import { Requests, type FlatNode, type SessionsProgressParams, type SessionTreeResult, unreadSessions } from './protocol';
import { emptyRows, errorRows, FolderSessions, type KeptState, loadingRow, type NoteRow, relabelled, settingsRows } from './sessionsState';
import { SessionForest, inParentTranscript, sessionItem, visibleNodes } from './sessionTree';
import { errorMessage } from './vscodeapi';

type SessionEntry =
  | { type: 'session'; cwd: string; node: FlatNode; label?: string }
  | { type: 'note'; cwd: string; row: NoteRow; index: number }
  | { type: 'message'; cwd: string; text: string; fix: Fix };

export type SessionElement = FolderElement | SessionEntry;

const ROW_SCHEME = 'remem-session-row';

/** Archived sessions' rows in the disabled color. */
export const archivedRows: vscode.FileDecorationProvider = {
  provideFileDecoration(uri) {
    if (uri.scheme !== ROW_SCHEME || uri.query !== 'archived') return undefined;
    return { color: new vscode.ThemeColor('disabledForeground'), tooltip: 'Archived' };
  },
};

/** The nearest folder above each workspace folder whose workspace has sessions, found once per
 * window with the folders' own request (decision 0488): the Memory view's hint starts from it too. */
export function findingSessionsAbove(server: Server): FoldersAbove {
  const hasSessions = async (folder: string) =>
    (await server.request<SessionTreeResult>(Requests.sessionTree, { cwd: folder })).nodes.length > 0;
  return new FoldersAbove((cwd) => nearestAbove(cwd, os.homedir(), hasSessions));
}

export class SessionsView extends FolderView<SessionEntry> {
  private readonly forests = new Map<string, SessionForest>();
  private readonly state: FolderSessions;
  private readonly hiddenArchived = new Map<string, number>();
  private showArchived = false;
  /** Called with the view's description: "indexing N of M…" or "refreshing…" while folders wait,
   * archived hidden. */
  onDescription: (text: string | undefined) => void = () => undefined;
  /** Called with the sessions whose label an answer changed (a rename) or gave anew: id → new label. */
  onRelabel: (labels: Map<string, string>) => void = () => undefined;
  private labels = new Map<string, string>();
  private drawnFolders: string[] | undefined; // the workspace folders of the rows last drawn
  // Whether each folder's rows last drawn were the empty state (its hint found then is drawn).
  private readonly drawnEmpty = new Map<string, boolean>();
  private drawn: () => void = () => undefined;
  /** Settles once the view has answered its first rows (the kept tree or the loading row). */
  readonly firstRows = new Promise<void>((resolve) => {
    this.drawn = resolve;
  });

  constructor(
    server: Server,
    folders: () => Folder[],
    kept: KeptState,
    private readonly above: FoldersAbove = findingSessionsAbove(server), // the window's, shared with Memory
  ) {
    super(server, folders);
    const ask = (cwd: string) => server.request<SessionTreeResult>(Requests.sessionTree, { cwd });
    this.state = new FolderSessions(kept, ask, () => this.answered(), errorMessage);
    above.onChanged((cwd) => {
      if (this.drawnEmpty.get(cwd)) super.refresh();
    });
  }

  /** Before an explicit Refresh: the folders above the empty ones are asked again at their next draw. */
  forgetAbove(): void {
    this.above.forget();
  }

  private answered(): void {
    super.refresh();
    const labels = this.state.labels();
    const changed = relabelled(this.labels, labels);
    this.labels = labels;
    if (changed.size) this.onRelabel(changed);
  }

  /** Whether a folder shows the tree kept from the last window, its answer still to come. */
  get showsKeptTree(): boolean {
    return this.state.refreshing;
  }

  /** How the tree names session `id`, once it has shown it. */
  labelOf(id: string): string | undefined {
    return this.labels.get(id);
  }

  /** Ask the server again; the rows shown stay until its answer replaces them. Workspace folders
   * added or removed since are drawn anew at once (an answer that changes nothing would not
   * redraw): a new one is asked when drawn, and a removed one's rows, labels and archived count go. */
  override refresh(): void {
    const folders = this.folders().map((f) => f.cwd);
    if (folders.join('\n') !== (this.drawnFolders ?? []).join('\n')) {
      for (const cwd of this.state.forget(new Set(folders))) {
        this.forests.delete(cwd);
        this.hiddenArchived.delete(cwd);
        this.drawnEmpty.delete(cwd);
      }
      this.labels = this.state.labels();
      super.refresh();
    }
    this.state.refresh();
  }

  /** The daemon's indexing progress: the loading row (or the description) says how far it is. */
  progress(params: SessionsProgressParams): void {
    this.state.progress(params);
  }

  /** Archived sessions are hidden unless asked for; the choice holds until the window closes. */
  setShowArchived(show: boolean): void {
    this.showArchived = show;
    super.refresh();
  }

  override async getChildren(element?: SessionElement): Promise<SessionElement[]> {
    if (!element) {
      const folders = this.folders().map((f) => f.cwd);
      // The first rows: trees a past window kept of folders since removed are dropped.
      if (this.drawnFolders === undefined) this.state.forget(new Set(folders));
      this.drawnFolders = folders;
    }
    const children = await super.getChildren(element);
    if (!element) {
      const hidden = [...this.hiddenArchived.values()].reduce((sum, n) => sum + n, 0);
      const parts = [this.state.activity ?? '', hidden ? `${hidden} archived hidden` : ''];
      this.onDescription(parts.filter(Boolean).join(' · ') || undefined);
      this.drawn();
    }
    return children;
  }

  protected childrenOf(element: SessionEntry): SessionEntry[] {
    if (element.type !== 'session') return [];
    const forest = this.forests.get(element.cwd);
    return (forest?.children(element.node.id) ?? []).map((node) => ({ type: 'session', cwd: element.cwd, node }));
  }

  protected itemOf(element: SessionEntry): vscode.TreeItem {
    if (element.type === 'message') {
      const item = new vscode.TreeItem(element.text, vscode.TreeItemCollapsibleState.None);
      item.iconPath = new vscode.ThemeIcon('warning');
      item.tooltip = `${element.text}\n\nClick: ${element.fix.title}`;
      item.command = { command: element.fix.command, title: element.fix.title, arguments: element.fix.arguments };
      return item;
    }
    if (element.type === 'note') return noteItem(element);
    const forest = this.forests.get(element.cwd) ?? new SessionForest([element.node]);
    const described = sessionItem(forest, element.node, Date.now());
    const state =
      described.expanded === null ? vscode.TreeItemCollapsibleState.None : vscode.TreeItemCollapsibleState.Expanded;
    const item = new vscode.TreeItem(described.label, state);
    item.id = `session:${element.cwd}:${element.node.id}`;
    item.description = described.description;
    item.tooltip = new vscode.MarkdownString(described.tooltip);
    const color = described.icon.color ? new vscode.ThemeColor(described.icon.color) : undefined;
    item.iconPath = new vscode.ThemeIcon(described.icon.id, color);
    item.contextValue = described.contextValue;
    // The decoration provider dims archived rows (a tree item's label takes no color of its own).
    item.resourceUri = vscode.Uri.from({ scheme: ROW_SCHEME, path: `/${element.node.id}`, query: element.node.archived ? 'archived' : '' });
    element.label = described.label; // commands on this row name the session as the row does
    // An in-file branch or inline subagent is shown in its session's transcript, after the conversation.
    const parent = inParentTranscript(element.node) && element.node.parent ? forest.get(element.node.parent) : undefined;
    const target = parent ? { ...element, node: parent, label: sessionItem(forest, parent, Date.now()).label } : element;
    const opened = { ...target, keepFocus: true }; // as in the Explorer, a click keeps the focus on the row
    item.command = { command: ClientCommands.openTranscript, title: 'Open Transcript', arguments: [opened] };
    return item;
  }

  protected async topOf(cwd: string): Promise<SessionEntry[]> {
    const shown = this.state.shown(cwd);
    if (shown.kind === 'error') {
      this.forests.delete(cwd);
      return [{ type: 'message', cwd, text: shown.message, fix: shown.fix }];
    }
    if (shown.kind === 'loading') return [{ type: 'note', cwd, row: loadingRow(this.state.indexing(cwd)), index: 0 }];
    const visible = visibleNodes(shown.result.nodes, this.showArchived);
    this.hiddenArchived.set(cwd, visible.hidden);
    const forest = new SessionForest(visible.nodes);
    this.forests.set(cwd, forest);
    const above = this.aboveOf(cwd, shown.result);
    const notes = shown.result.nodes.length === 0 ? emptyRows(shown.result, cwd, os.homedir(), above) : [];
    // Above the tree (or the empty state): settings.yml is invalid, so the daemon drew it on the last valid
    // settings; some of what it looked at could not be read.
    const rows = [...settingsRows(shown.result), ...errorRows(shown.result), ...notes];
    const noteEntries = rows.map((row, index): SessionEntry => ({ type: 'note', cwd, row, index }));
    return [...noteEntries, ...forest.roots().map((node): SessionEntry => ({ type: 'session', cwd, node }))];
  }

  /** The folder above `cwd` its empty state names, once found; a folder with sessions (or some it
   * could not read) asks none, and one that had sessions and has none now asks again. Review
   * receipts that could not be read hide no session: such a folder is still empty. */
  private aboveOf(cwd: string, result: SessionTreeResult): string | undefined {
    const empty = result.nodes.length === 0 && unreadSessions(result.errors).length === 0;
    if (empty && this.drawnEmpty.get(cwd) === false) this.above.forget(cwd);
    this.drawnEmpty.set(cwd, empty);
    return empty ? this.above.of(cwd) : undefined;
  }
}

function noteItem({ cwd, row, index }: { cwd: string; row: NoteRow; index: number }): vscode.TreeItem {
  const item = new vscode.TreeItem(row.label, vscode.TreeItemCollapsibleState.None);
  item.id = `note:${cwd}:${index}:${row.label}`;
  item.description = row.description;
  item.tooltip = row.tooltip;
  item.iconPath = new vscode.ThemeIcon(row.icon);
  if (row.command) item.command = { command: row.command.id, title: row.label, arguments: row.command.arguments };
  return item;
}
