/** What the tree views share: one subtree per workspace folder, or the folder's content alone when there is one. */

import * as vscode from 'vscode';

import type { Folder, Server } from './flows';

export interface FolderElement {
  type: 'folder';
  folder: Folder;
}

function isFolder(element: object): element is FolderElement {
  return (element as { type?: unknown }).type === 'folder';
}

export abstract class FolderView<T extends object>
  implements vscode.TreeDataProvider<FolderElement | T>, vscode.Disposable
{
  private readonly changed = new vscode.EventEmitter<FolderElement | T | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(
    protected readonly server: Server,
    protected readonly folders: () => Folder[],
  ) {}

  refresh(): void {
    this.changed.fire(undefined);
  }

  async getChildren(element?: FolderElement | T): Promise<(FolderElement | T)[]> {
    if (!element) {
      const folders = this.folders();
      if (folders.length === 1) return this.topOf(folders[0].cwd);
      return folders.map((folder) => ({ type: 'folder', folder }));
    }
    if (isFolder(element)) return this.topOf(element.folder.cwd);
    return this.childrenOf(element);
  }

  getTreeItem(element: FolderElement | T): vscode.TreeItem {
    if (!isFolder(element)) return this.itemOf(element);
    const item = new vscode.TreeItem(element.folder.name, vscode.TreeItemCollapsibleState.Expanded);
    item.id = `folder:${element.folder.cwd}`;
    item.iconPath = new vscode.ThemeIcon('root-folder');
    item.tooltip = element.folder.cwd;
    return item;
  }

  dispose(): void {
    this.changed.dispose();
  }

  /** The top-level elements of one workspace folder (asked of the server, so they may be an error note). */
  protected abstract topOf(cwd: string): Promise<T[]>;

  protected abstract childrenOf(element: T): T[];

  protected abstract itemOf(element: T): vscode.TreeItem;
}
