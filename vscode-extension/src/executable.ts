/**
 * Finding the `remem` executable named by the `remem.command` setting before the server is
 * started, so a missing one gets a clear message instead of a bare spawn error.
 */

import * as path from 'node:path';

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
    ' Install remem, or set "remem.command" to the full path of its executable ' +
    '(for a checkout set up with scripts/setup: <checkout>/.venv/bin/remem).'
  );
}
