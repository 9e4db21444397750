/**
 * Finding the `remem` executable named by the `remem.command` setting before the server is
 * started, so one that runs nothing gets a message saying why instead of a bare spawn error.
 */

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { Settings } from './ids';

/** What is at a path, as far as running it goes; `unreachable`: it could not be looked at for
 * another reason than nothing being there (a folder on the way not searchable, a link that loops),
 * with the system's words. */
export type Found = 'executable' | 'not-executable' | 'not-a-file' | 'missing' | { unreachable: string };

/** What `remem.command` runs, or why it runs nothing: empty; a bare name no folder of `PATH` has
 * as a file (one without its execute permission is named as found); a path with nothing there, no
 * file there (a folder), a file without its execute permission, or one that cannot be looked at
 * (`path` as resolved). */
export type Resolved =
  | { executable: string }
  | { problem: 'empty' }
  | { problem: 'not-on-path'; name: string }
  | { problem: 'missing' | 'not-a-file' | 'not-executable'; name: string; path: string }
  | { problem: 'unreachable'; reason: string; name: string; path: string };

/** What `candidate` is, read from the disk. */
export function probe(candidate: string): Found {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(candidate);
  } catch (error) {
    const { code, message, syscall } = error as NodeJS.ErrnoException;
    // ENOTDIR: a file where a folder of the path should be, so nothing is there either.
    if (code === 'ENOENT' || code === 'ENOTDIR') return 'missing';
    // Node says "CODE: description, stat '<path>'": the message names the path already.
    return { unreachable: message.replace(`, ${syscall} '${candidate}'`, '') };
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
  if (name.includes('/') || name.includes(path.sep)) return atPath(name, path.resolve(cwd, expandHome(name)), found);
  let plain: string | undefined; // the first file of that name without its execute permission
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    const what = found(candidate);
    if (what === 'executable') return { executable: candidate };
    if (what === 'not-executable') plain ??= candidate;
  }
  // As a shell does, a later executable is run past a file that is none; with none, that file is why.
  return plain ? { problem: 'not-executable', name, path: plain } : { problem: 'not-on-path', name };
}

/** What the path `named` (as `name` resolved) runs, or why it runs nothing. */
function atPath(name: string, named: string, found: (candidate: string) => Found): Resolved {
  const what = found(named);
  if (what === 'executable') return { executable: named };
  if (typeof what === 'string') return { problem: what, name, path: named };
  return { problem: 'unreachable', reason: what.unreachable, name, path: named };
}

function expandHome(value: string): string {
  return value === '~' || value.startsWith('~/') ? path.join(os.homedir(), value.slice(1)) : value;
}

/** What every message of a setting that runs nothing begins with. */
export const CANNOT_START = 'remem: cannot start the language server: ';
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
  const why =
    resolved.problem === 'unreachable'
      ? `cannot be reached (${resolved.reason}).`
      : {
          missing: 'was not found: nothing is there.',
          'not-a-file': 'is not a file (a folder?): name the executable itself, not the folder it is in.',
          'not-executable': 'is a file without execute permission: not a program that can be run.',
        }[resolved.problem];
  return `${CANNOT_START}${named} ${why}${SET_THE_PATH}`;
}

/** A setting that is no string (an array, a number) names no executable at all. */
export function notStringMessage(setting: unknown): string {
  return (
    `${CANNOT_START}"${Settings.commandName}" must be a string, the name or the ` +
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
