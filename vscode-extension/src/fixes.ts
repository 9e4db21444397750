/**
 * What a message about the language server offers to do about it: each fix is a button on the
 * notification that says it, and the command of the view row that says it.
 */

import { ClientCommands, CommandTitles, OPEN_SETTINGS, Settings, VSCODE_OPEN_SETTINGS } from './ids';

export interface Fix {
  title: string; // the button's, and the row command's
  command: string;
  arguments: unknown[];
}

export const RESTART_SERVER: Fix = { title: CommandTitles.restartServer, command: ClientCommands.restartServer, arguments: [] };
export const SHOW_LOG: Fix = { title: CommandTitles.showLog, command: ClientCommands.showLog, arguments: [] };
/** The Settings editor at `remem.command`: the executable is not found, or too old. */
export const OPEN_COMMAND_SETTING: Fix = { title: OPEN_SETTINGS, command: VSCODE_OPEN_SETTINGS, arguments: [Settings.commandName] };

/** An error that names its fixes, best first. */
export class FixableError extends Error {
  constructor(
    message: string,
    readonly fixes: readonly Fix[],
  ) {
    super(message);
  }
}

/** The fixes an error names (none: a refusal or failure the message itself explains). */
export function fixesOf(error: unknown): readonly Fix[] {
  return error instanceof FixableError ? error.fixes : [];
}

/** What clicking a view's error row does: the error's best fix, else the log, where the server
 * said more. */
export function rowFix(error: unknown): Fix {
  return fixesOf(error)[0] ?? SHOW_LOG;
}
