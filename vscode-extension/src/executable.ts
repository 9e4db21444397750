/**
 * Finding the `remem` executable named by the `remem.command` setting before the server is
 * started, so one that runs nothing gets a message saying why instead of a bare spawn error.
 */

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { Settings } from './ids';

/** What is at a path, as far as running it goes. */
export type Found = 'executable' | 'not-executable' | 'not-a-file' | 'missing';

/** What `remem.command` runs, or why it runs nothing: empty; a bare name no folder of `PATH` has
 * as an executable file; a path with nothing there, no file there (a folder), or a file without
 * its execute permission (`path` as resolved). */
export type Resolved =
  | { executable: string }
  | { problem: 'empty' }
  | { problem: 'not-on-path'; name: string }
  | { problem: Exclude<Found, 'executable'>; name: string; path: string };

/** What `candidate` is, read from the disk. */
export function probe(candidate: string): Found {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(candidate);
  } catch {
    return 'missing';
  }
  if (!stat.isFile()) return 'not-a-file';
  try {
    fs.accessSync(candidate, fs.constants.X_OK);
    return 'executable';
  } catch {
    return 'not-executable';
  }
}

/** What `command` runs. Names with a separator are paths (relative to `cwd`, `~` the home); bare
 * names are looked up on `PATH` like a shell would. */
export function resolveExecutable(
  command: string,
  env: { PATH?: string },
  cwd: string,
  found: (candidate: string) => Found,
): Resolved {
  const name = command.trim();
  if (!name) return { problem: 'empty' };
  if (name.includes('/') || name.includes(path.sep)) {
    const named = path.resolve(cwd, expandHome(name));
    const what = found(named);
    return what === 'executable' ? { executable: named } : { problem: what, name, path: named };
  }
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (found(candidate) === 'executable') return { executable: candidate };
  }
  return { problem: 'not-on-path', name };
}

function expandHome(value: string): string {
  return value === '~' || value.startsWith('~/') ? path.join(os.homedir(), value.slice(1)) : value;
}

const CANNOT_START = 'remem: cannot start the language server: ';
const CHECKOUT_REMEM = '<checkout>/.venv/bin/remem';
const SET_THE_PATH = ` Set "${Settings.commandName}" to the full path of the remem executable (for a checkout set up with scripts/setup: ${CHECKOUT_REMEM}).`;
const INSTALL =
  ' Install remem: "bash scripts/setup" in a checkout of remem puts it in the checkout\'s .venv/bin; then set ' +
  `"${Settings.commandName}" to its full path (${CHECKOUT_REMEM}), or start the editor with that folder on PATH.`;

/** Why the setting runs nothing, with what to do. */
export function notFoundMessage(resolved: Exclude<Resolved, { executable: string }>): string {
  if (resolved.problem === 'empty') return `${CANNOT_START}"${Settings.commandName}" is empty.${SET_THE_PATH}`;
  const { name } = resolved;
  if (resolved.problem === 'not-on-path') {
    const editorPath = "the editor's PATH (the one it was started with: a shell's profile may set a terminal's only)";
    return `${CANNOT_START}"${name}" was not found on ${editorPath}.${INSTALL}`;
  }
  const named = `"${name}"${resolved.path === name ? '' : ` (${resolved.path})`}`;
  const why = {
    missing: 'was not found: nothing is there.',
    'not-a-file': 'is not a file (a folder?): name the executable itself, not the folder it is in.',
    'not-executable': 'is a file without execute permission: not a program that can be run.',
  }[resolved.problem];
  return `${CANNOT_START}${named} ${why}${SET_THE_PATH}`;
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
