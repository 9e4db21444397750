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
  if (trimmed.includes('/') || trimmed.includes(path.sep)) {
    const candidate = path.resolve(cwd, expandHome(trimmed));
    return isExecutable(candidate) ? candidate : null;
  }
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, trimmed);
    if (isExecutable(candidate)) return candidate;
  }
  return null;
}

function expandHome(value: string): string {
  const home = process.env.HOME;
  return home && (value === '~' || value.startsWith('~/')) ? path.join(home, value.slice(1)) : value;
}

export function notFoundMessage(command: string): string {
  return (
    `remem: cannot start the language server: "${command}" was not found` +
    (command.includes('/') ? '.' : ' on PATH.') +
    ` Install remem, or set "${Settings.commandName}" to the full path of its executable ` +
    '(for a checkout set up with scripts/setup: <checkout>/.venv/bin/remem).'
  );
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
