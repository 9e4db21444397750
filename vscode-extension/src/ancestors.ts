/**
 * The folders above a workspace folder, where an agent may have worked on the project the folder
 * is part of. remem keys sessions and memory by the exact folder an agent ran in, so a subfolder
 * of a project is a workspace of its own: opened alone it shows none of the project's. Its empty
 * states name the nearest folder above it that has some (decision 0488).
 */

import * as path from 'node:path';

/** `folder` as the user reads it: under the home folder, from `~`. */
export function homeRelative(folder: string, home: string): string {
  return home && folder.startsWith(`${home}/`) ? `~${folder.slice(home.length)}` : folder;
}

/** The folders above `cwd`, nearest first, that may be its project's: below the home folder when
 * `cwd` is in it, never the home folder nor the file system's root, from which agents run for
 * anything (neither is a project `cwd` is part of). */
export function ancestorsOf(cwd: string, home: string): string[] {
  if (cwd === home) return [];
  const inHome = home !== '' && cwd.startsWith(`${home}/`);
  const found: string[] = [];
  for (let folder = path.dirname(cwd); folder !== path.dirname(folder); folder = path.dirname(folder)) {
    if (inHome && folder === home) break;
    found.push(folder);
  }
  return found;
}

/** The nearest folder above `cwd` that `has` says holds what `cwd` does not; a folder `has` fails
 * for (the server down, its answer unreadable) is passed by: a hint is no reason to fail. */
export async function nearestAbove(
  cwd: string,
  home: string,
  has: (folder: string) => Promise<boolean>,
): Promise<string | undefined> {
  for (const folder of ancestorsOf(cwd, home)) {
    if (await has(folder).catch(() => false)) return folder;
  }
  return undefined;
}

/** How a hint names `folder`, above the workspace folder `cwd`: "the parent folder ~/proj", or
 * "the folder ~/proj above it" when it is further up. */
export function aboveName(folder: string, cwd: string, home: string): string {
  const named = homeRelative(folder, home);
  return path.dirname(cwd) === folder ? `the parent folder ${named}` : `the folder ${named} above it`;
}
