/** The Session Branches view: the lineage forest of each workspace folder as a tree. */

import * as vscode from 'vscode';

import { type FolderElement, FolderView } from './folderView';
import { Requests, type FlatNode, type SessionTreeResult } from './protocol';
import { SessionForest, sessionItem } from './sessionTree';
import { errorMessage } from './vscodeapi';

type SessionEntry =
  | { type: 'session'; cwd: string; node: FlatNode }
  | { type: 'message'; cwd: string; text: string };

export type SessionElement = FolderElement | SessionEntry;

export class SessionsView extends FolderView<SessionEntry> {
  private readonly forests = new Map<string, SessionForest>();

  protected childrenOf(element: SessionEntry): SessionEntry[] {
    if (element.type !== 'session') return [];
    const forest = this.forests.get(element.cwd);
    return (forest?.children(element.node.id) ?? []).map((node) => ({ type: 'session', cwd: element.cwd, node }));
  }

  protected itemOf(element: SessionEntry): vscode.TreeItem {
    if (element.type === 'message') {
      const item = new vscode.TreeItem(element.text, vscode.TreeItemCollapsibleState.None);
      item.iconPath = new vscode.ThemeIcon('warning');
      item.tooltip = element.text;
      return item;
    }
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
    item.command = { command: 'remem.openTranscript', title: 'Open Transcript', arguments: [element] };
    return item;
  }

  protected async topOf(cwd: string): Promise<SessionEntry[]> {
    try {
      const result = await this.server.request<SessionTreeResult>(Requests.sessionTree, { cwd });
      const forest = new SessionForest(result.nodes);
      this.forests.set(cwd, forest);
      return forest.roots().map((node) => ({ type: 'session', cwd, node }));
    } catch (error) {
      this.forests.delete(cwd);
      return [{ type: 'message', cwd, text: errorMessage(error) }];
    }
  }
}
