/**
 * Finding the `remem` executable named by the `remem.command` setting before the server is
 * started, so a missing one gets a clear message instead of a bare spawn error.
 */

import * as path from 'node:path';

import { Settings } from './ids';

/** The absolute path `command` runs, or null. Names with a separator are paths (relative to `cwd`);
 * bare names are looked up on `PATH` like a shell would. */
export function resolveExecutable(
  command: string,
  env: { PATH?: string },
  cwd: string,
  isExecutable: (candidate: string) => boolean,
): string | null {
  const trimmed = command.trim();
  if (!trimmed) return null;
  const named = asPath(trimmed, cwd);
  if (named !== null) return isExecutable(named) ? named : null;
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, trimmed);
    if (isExecutable(candidate)) return candidate;
  }
  return null;
}

/** The file a command with a separator names, relative to `cwd` (`~` the home); null for a bare name. */
function asPath(command: string, cwd: string): string | null {
  if (!command.includes('/') && !command.includes(path.sep)) return null;
  return path.resolve(cwd, expandHome(command));
}

function expandHome(value: string): string {
  const home = process.env.HOME;
  return home && (value === '~' || value.startsWith('~/')) ? path.join(home, value.slice(1)) : value;
}

const CANNOT_START = 'remem: cannot start the language server: ';
const SET_THE_PATH =
  ` Set "${Settings.commandName}" to the full path of the remem executable ` +
  '(for a checkout set up with scripts/setup: <checkout>/.venv/bin/remem).';

/** Why `command`, resolved from `cwd`, runs nothing: a bare name the editor's `PATH` lacks (which
 * is the one the editor started with, not a terminal's), or a path that is no executable file (a
 * folder, a file without its execute bit, nothing). */
export function notFoundMessage(command: string, cwd: string): string {
  const trimmed = command.trim();
  if (!trimmed) return `${CANNOT_START}"${Settings.commandName}" is empty.${SET_THE_PATH}`;
  const named = asPath(trimmed, cwd);
  if (named === null) {
    const editorPath = "the editor's PATH (the one it was started with: a shell's profile may set a terminal's only)";
    return `${CANNOT_START}"${trimmed}" was not found on ${editorPath}.${SET_THE_PATH}`;
  }
  const resolved = named === trimmed ? '' : ` (${named})`;
  return `${CANNOT_START}"${trimmed}"${resolved} is no executable file.${SET_THE_PATH}`;
}

/** A setting that is no string (an array, a number) names no executable at all. */
export function notStringMessage(setting: unknown): string {
  return (
    `remem: cannot start the language server: "${Settings.commandName}" must be a string, the name or the ` +
    `path of the remem executable, not ${JSON.stringify(setting)}. Arguments cannot be given: remem runs it as "<it> lsp".`
  );
}

/** The folder the server runs in, and a relative `remem.command` is found from: the first
 * workspace folder on this machine's disk (a `file:` folder that exists), else the home folder. */
export function serverFolder(
  folders: readonly { uri: { scheme: string; fsPath: string } }[],
  isDirectory: (candidate: string) => boolean,
  home: string,
): string {
  return folders.find((f) => f.uri.scheme === 'file' && isDirectory(f.uri.fsPath))?.uri.fsPath ?? home;
}
