/** The Memory view: Global memory, this workspace's records and recent receipts; a click opens the file. */

import * as os from 'node:os';
import * as path from 'node:path';

import * as vscode from 'vscode';

import { FoldersAbove } from './ancestors';
import { rowFix } from './fixes';
import type { Folder, Server } from './flows';
import { type FolderElement, FolderView } from './folderView';
import { fileContextValue, folderPlace, type MemoryNode, memoryNodes } from './memoryTree';
import { ClientCommands } from './ids';
import { type MemoryOverview, Requests } from './protocol';
import { findingSessionsAbove } from './sessionsView';
import { errorMessage } from './vscodeapi';

type MemoryEntry = { type: 'memory'; cwd: string; node: MemoryNode };

export type MemoryElement = FolderElement | MemoryEntry;

export class MemoryView extends FolderView<MemoryEntry> {
  // The folder above each empty one that Session Branches found (the nearest with sessions), when
  // its own overview has records: records are kept for a workspace whose sessions were
  // consolidated (decision 0488). Found again whenever Session Branches' finding changes.
  private readonly recordsAbove: FoldersAbove;

  constructor(
    server: Server,
    folders: () => Folder[],
    private readonly sessionsAbove: FoldersAbove = findingSessionsAbove(server), // the window's, from Session Branches
  ) {
    super(server, folders);
    this.recordsAbove = new FoldersAbove(async (cwd) => {
      const { folder, skipped } = await sessionsAbove.nearest(cwd);
      const kept = folder && (await this.overviewOf(folder)).records.length ? folder : undefined;
      return { folder: kept, skipped };
    });
    const redrawEmpty = (cwd: string) => {
      if (this.shown.get(cwd)?.records.length === 0) this.refresh();
    };
    this.recordsAbove.onChanged(redrawEmpty);
    // A first finding is the one the records above wait for; a later one (Session Branches'
    // Refresh, a restarted server) replaced what they were found from.
    sessionsAbove.onChanged((cwd, again) => {
      if (!again) return;
      this.recordsAbove.forget(cwd);
      redrawEmpty(cwd);
    });
  }

  protected childrenOf({ cwd, node }: MemoryEntry): MemoryEntry[] {
    if (node.kind !== 'section') return [];
    return node.children.map((child) => ({ type: 'memory', cwd, node: child }));
  }

  protected itemOf({ node, cwd }: MemoryEntry): vscode.TreeItem {
    if (node.kind === 'section') {
      const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.Expanded);
      item.id = `${cwd}:${node.id}`;
      item.description = node.description;
      return item;
    }
    if (node.kind === 'note') {
      const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.None);
      item.id = `${cwd}:${node.id}`;
      item.iconPath = new vscode.ThemeIcon(node.icon ?? 'info');
      if (node.fix) {
        item.tooltip = `${node.label}\n\nClick: ${node.fix.title}`;
        item.command = { command: node.fix.command, title: node.fix.title, arguments: node.fix.arguments };
      }
      return item;
    }
    const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.None);
    item.id = `${cwd}:${node.id}`;
    item.description = node.description;
    item.tooltip = node.tooltip;
    item.resourceUri = vscode.Uri.file(node.path);
    const color = node.icon.color ? new vscode.ThemeColor(node.icon.color) : undefined;
    item.iconPath = new vscode.ThemeIcon(node.icon.id, color);
    item.contextValue = fileContextValue(node);
    item.command = node.review
      ? { command: ClientCommands.showReceipt, title: 'Show Receipt', arguments: [{ review: node.review }] }
      : { command: 'vscode.open', title: 'Open', arguments: [vscode.Uri.file(node.path)] };
    return item;
  }

  private readonly shown = new Map<string, MemoryOverview>();
  // Each folder's first answer: asked for, come (its rows, to draw next), or drawn.
  private readonly first = new Map<string, 'asking' | MemoryEntry[] | 'drawn'>();
  // Folders refreshed while their first answer was coming: that answer may predate the change.
  private readonly again = new Set<string>();

  /** Whether the file at `fsPath` is one this view judges: an edit to it changes what it shows. */
  shows(fsPath: string): boolean {
    return [...this.shown.values()].some(
      (o) => o.global.path === fsPath || (o.workspace.folder !== null && path.dirname(fsPath) === o.workspace.folder),
    );
  }

  /** A folder's first rows are a loading row, drawn at once, until the server's answer replaces
   * them (the language server may still be starting); later refreshes keep the rows shown until
   * their answer comes, as trees do. */
  protected async topOf(cwd: string): Promise<MemoryEntry[]> {
    const first = this.first.get(cwd);
    if (first === 'drawn') return this.ask(cwd);
    if (Array.isArray(first)) {
      this.first.set(cwd, 'drawn');
      return first;
    }
    if (first === undefined) {
      this.first.set(cwd, 'asking');
      void this.firstAnswer(cwd);
    }
    const loading: MemoryNode = { kind: 'note', id: 'loading', label: 'Loading memory…', icon: 'loading~spin' };
    return [{ type: 'memory', cwd, node: loading }];
  }

  /** Ask again (something changed): a folder whose first answer is still coming asks once more
   * when it comes. A folder removed from the workspace is forgotten: its files are judged no more. */
  override refresh(): void {
    const folders = new Set(this.folders().map((f) => f.cwd));
    for (const cwd of [...this.shown.keys()]) if (!folders.has(cwd)) this.shown.delete(cwd);
    for (const cwd of [...this.first.keys()]) if (!folders.has(cwd)) this.first.delete(cwd);
    for (const cwd of [...this.again]) if (!folders.has(cwd)) this.again.delete(cwd);
    for (const [cwd, first] of this.first) {
      if (first === 'asking') this.again.add(cwd);
      // Come but not drawn yet: it predates the change, so the draw this refresh asks for reads anew.
      else if (Array.isArray(first)) this.first.set(cwd, 'drawn');
    }
    super.refresh();
  }

  /** Before an explicit Refresh: the folders above the empty ones are asked again at their next draw. */
  forgetAbove(): void {
    this.sessionsAbove.forget();
    this.recordsAbove.forget();
  }

  private async firstAnswer(cwd: string): Promise<void> {
    let rows = await this.ask(cwd);
    while (this.again.delete(cwd)) rows = await this.ask(cwd);
    if (this.first.get(cwd) !== 'asking') return; // removed meanwhile
    this.first.set(cwd, rows);
    super.refresh(); // drawn, not asked again: the other folders' first answers are still good
  }

  private overviewOf(cwd: string): Promise<MemoryOverview> {
    return this.server.request<MemoryOverview>(Requests.memoryOverview, { cwd });
  }

  private async ask(cwd: string): Promise<MemoryEntry[]> {
    try {
      const overview = await this.overviewOf(cwd);
      const recordsAbove = this.aboveOf(cwd, overview);
      const folders = this.folders();
      if (folders.some((f) => f.cwd === cwd)) this.shown.set(cwd, overview); // not removed meanwhile
      const folder = { cwd, place: folderPlace(cwd, folders), recordsAbove, home: os.homedir() };
      return memoryNodes(overview, folder, Date.now()).map((node) => ({ type: 'memory', cwd, node }));
    } catch (error) {
      const note: MemoryNode = { kind: 'note', id: 'error', label: errorMessage(error), icon: 'warning', fix: rowFix(error) };
      return [{ type: 'memory', cwd, node: note }];
    }
  }

  /** The folder above `cwd` its "No records yet" names, once found: a subfolder of a project is a
   * workspace of its own. A folder with records asks none; one that had some and has none now
   * asks again. */
  private aboveOf(cwd: string, overview: MemoryOverview): string | undefined {
    if (overview.records.length) return undefined;
    if (this.shown.get(cwd)?.records.length) this.recordsAbove.forget(cwd);
    return this.recordsAbove.of(cwd);
  }
}
