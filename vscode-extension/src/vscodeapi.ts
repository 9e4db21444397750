/**
 * The one place the command flows meet `vscode.window`/`vscode.workspace`: the `Ui` of
 * `flows.ts` and the workspace folders, implemented over the editor's API.
 */

import * as vscode from 'vscode';

import { transcriptUri } from './args';
import type { Folder, Ui } from './flows';
import type { PickItem } from './picks';

export const editorUi: Ui = {
  async pick<T extends PickItem>(items: T[], options: { title: string; placeholder: string }) {
    return vscode.window.showQuickPick(items, {
      title: options.title,
      placeHolder: options.placeholder,
      matchOnDescription: true,
      matchOnDetail: true,
    });
  },
  async input(options) {
    return vscode.window.showInputBox({
      title: options.title,
      prompt: options.prompt,
      value: options.value,
      ignoreFocusOut: true,
    });
  },
  async confirm(message, detail, action) {
    const answer = await vscode.window.showWarningMessage(message, { modal: true, detail }, action);
    return answer === action;
  },
  async info(message, ...actions) {
    return vscode.window.showInformationMessage(message, ...actions);
  },
  async openFile(path) {
    await vscode.window.showTextDocument(vscode.Uri.file(path), { preview: false });
  },
  async openDiff(left, right, title) {
    await vscode.commands.executeCommand('vscode.diff', vscode.Uri.parse(left), vscode.Uri.parse(right), title, {
      preview: false,
    });
  },
  async openTranscript(session) {
    const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(transcriptUri(session)));
    await vscode.window.showTextDocument(document, { preview: false });
  },
};

/** The open workspace's folders that are on disk (remem keys memory and sessions by folder path). */
export function workspaceFolders(): Folder[] {
  return (vscode.workspace.workspaceFolders ?? [])
    .filter((f) => f.uri.scheme === 'file')
    .map((f) => ({ name: f.name, cwd: f.uri.fsPath }));
}

/** A readable message from whatever a failed request or command threw. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return typeof error === 'string' ? error : JSON.stringify(error);
}
