/**
 * The one place the command flows meet `vscode.window`/`vscode.workspace`: the `Ui` of
 * `flows.ts` and the workspace folders, implemented over the editor's API. Every notification
 * the extension shows goes through `notify`, which makes its text inert (decision 0417).
 */

import * as vscode from 'vscode';

import { sessionIdFromTranscriptPath, transcriptUri, turnLine } from './args';
import type { Fix } from './fixes';
import { inert } from './format';
import type { Folder, Ui } from './flows';
import { iconless, type PickItem } from './picks';
import { TRANSCRIPT_SCHEME } from './protocol';

/** The editor's notifications, their text made inert: a session's title or a server's message in
 * one cannot become a link that runs a command (decision 0417). The one place they are shown. */
export const notify = {
  info(message: string, ...actions: string[]): Thenable<string | undefined> {
    return vscode.window.showInformationMessage(inert(message), ...actions);
  },
  warn(message: string, ...actions: string[]): Thenable<string | undefined> {
    return vscode.window.showWarningMessage(inert(message), ...actions);
  },
  error(message: string, ...actions: string[]): Thenable<string | undefined> {
    return vscode.window.showErrorMessage(inert(message), ...actions);
  },
  /** A modal question: its message and detail inert too. */
  modal(message: string, detail: string, ...actions: string[]): Thenable<string | undefined> {
    return vscode.window.showWarningMessage(inert(message), { modal: true, detail: inert(detail) }, ...actions);
  },
};

/** An error or a warning with its fixes as buttons; the one chosen is run. Resolves once it is
 * dismissed or the fix has run. */
export async function tellWithFixes(level: 'error' | 'warn', message: string, fixes: readonly Fix[]): Promise<void> {
  const choice = await notify[level](message, ...fixes.map((fix) => fix.title));
  const fix = fixes.find((f) => f.title === choice);
  if (fix) await vscode.commands.executeCommand(fix.command, ...fix.arguments);
}

/** All of `Ui` but the receipt view, which needs the server (`ReceiptPanels`). */
export const editorUi: Omit<Ui, 'openReceipt'> = {
  async pick<T extends PickItem>(items: T[], options: { title: string; placeholder: string }) {
    const shown = items.map(iconless);
    const picked = await vscode.window.showQuickPick(shown, {
      title: options.title,
      placeHolder: options.placeholder,
      matchOnDescription: true,
      matchOnDetail: true,
    });
    return picked && items[shown.indexOf(picked)];
  },
  async input(options) {
    return vscode.window.showInputBox({
      title: options.title,
      prompt: options.prompt,
      value: options.value,
      password: options.password,
      ignoreFocusOut: true,
    });
  },
  async confirm(message, detail, action) {
    return (await notify.modal(message, detail, action)) === action;
  },
  async info(message, ...actions) {
    return notify.info(message, ...actions);
  },
  async warn(message, ...actions) {
    return notify.warn(message, ...actions);
  },
  async showProblems() {
    await vscode.commands.executeCommand('workbench.actions.view.problems');
  },
  async copy(text) {
    await vscode.env.clipboard.writeText(text);
  },
  async openFile(path) {
    await vscode.window.showTextDocument(vscode.Uri.file(path), { preview: false });
  },
  async openDiff(left, right, title) {
    await vscode.commands.executeCommand('vscode.diff', vscode.Uri.parse(left), vscode.Uri.parse(right), title, {
      preview: false,
    });
  },
  async openTranscript(session, title, turn, keepFocus) {
    const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(transcriptUri(session, title)));
    const line = turn === undefined ? -1 : turnLine(document.getText(), turn);
    const at = line < 0 ? undefined : new vscode.Range(line, 0, line, 0);
    const shown = { preview: false, selection: at, preserveFocus: keepFocus };
    const editor = await vscode.window.showTextDocument(document, shown);
    if (at) editor.revealRange(at, vscode.TextEditorRevealType.AtTop);
  },
  async busy(message, task) {
    return vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: message }, task);
  },
};

/** The session of the transcript in the active editor, if one is. */
export function activeSession(): string | undefined {
  const uri = vscode.window.activeTextEditor?.document.uri;
  return uri?.scheme === TRANSCRIPT_SCHEME ? sessionIdFromTranscriptPath(uri.path) : undefined;
}

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
