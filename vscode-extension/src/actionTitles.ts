/**
 * The titles of the server's code actions, by the command each runs. The client library hands
 * `executeCommand` only the command's id (`remem.lsp.regenerateIndex`), which the user never
 * saw: a failure is said by the title they clicked, as the server last offered it.
 */

import type * as vscode from 'vscode';

export class ActionTitles {
  private readonly titles = new Map<string, string>();

  /** Remembers the titles of the server's answer to a code action request. */
  seen(actions: readonly (vscode.Command | vscode.CodeAction)[] | null | undefined): void {
    for (const action of actions ?? []) {
      const command = typeof action.command === 'string' ? action.command : action.command?.command;
      if (command) this.titles.set(command, action.title);
    }
  }

  /** The title of the action that runs `command`; undefined for one no code action offered. */
  of(command: string): string | undefined {
    return this.titles.get(command);
  }
}
