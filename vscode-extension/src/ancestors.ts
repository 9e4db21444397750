/**
 * The folders above a workspace folder, where an agent may have worked on the project the folder
 * is part of. remem keys sessions and memory by the exact folder an agent ran in, so a subfolder
 * of a project is a workspace of its own: opened alone it shows none of the project's. Its empty
 * states name the nearest folder above it that has some, found once per window (decision 0488).
 */

import * as path from 'node:path';

/** How paths are split and compared: node's own `path`, or in a test the other platform's
 * (`path.win32`, `path.posix`). */
export type PathFlavour = Pick<path.PlatformPath, 'dirname' | 'relative' | 'isAbsolute' | 'sep'>;

/** `folder` from `home`, when strictly below it (case as the platform compares it). */
function belowHome(folder: string, home: string, paths: PathFlavour): string | undefined {
  if (!home) return undefined;
  const relative = paths.relative(home, folder);
  const outside = relative === '..' || relative.startsWith(`..${paths.sep}`) || paths.isAbsolute(relative);
  return relative && !outside ? relative : undefined;
}

/** `folder` as the user reads it: under the home folder, from `~`. */
export function homeRelative(folder: string, home: string, paths: PathFlavour = path): string {
  const below = belowHome(folder, home, paths);
  return below === undefined ? folder : `~${paths.sep}${below}`;
}

/** The folders above `cwd`, nearest first, that may be its project's: those strictly below the
 * home folder. Never the home folder nor anything above or beside it, from which agents run for
 * anything (none is a project `cwd` is part of); none at all when `cwd` is not below home. */
export function ancestorsOf(cwd: string, home: string, paths: PathFlavour = path): string[] {
  const found: string[] = [];
  if (belowHome(cwd, home, paths) === undefined) return found;
  for (let folder = paths.dirname(cwd); belowHome(folder, home, paths) !== undefined; folder = paths.dirname(folder)) {
    found.push(folder);
  }
  return found;
}

/** What the folders above a workspace folder said: the nearest that has what it lacks, and whether
 * one nearer was passed by for a request that failed (the server down, its answer unreadable): a
 * hint is no reason to fail, but such a finding may be wrong and is asked again. */
export type Finding = { folder: string | undefined; skipped: boolean };

/** The nearest folder above `cwd` that `has` says holds what `cwd` does not. */
export async function nearestAbove(
  cwd: string,
  home: string,
  has: (folder: string) => Promise<boolean>,
): Promise<Finding> {
  let skipped = false;
  for (const folder of ancestorsOf(cwd, home)) {
    const holds = await has(folder).catch(() => {
      skipped = true;
      return false;
    });
    if (holds) return { folder, skipped };
  }
  return { folder: undefined, skipped };
}

/** How a hint names `folder`, above the workspace folder `cwd`: "the parent folder ~/proj", or
 * "the folder ~/proj above it" when it is further up. */
export function aboveName(folder: string, cwd: string, home: string, paths: PathFlavour = path): string {
  const named = homeRelative(folder, home, paths);
  return paths.dirname(cwd) === folder ? `the parent folder ${named}` : `the folder ${named} above it`;
}

/**
 * The folder above each workspace folder that `find` names, found once per window and kept: an
 * empty folder's view is redrawn on every change anywhere, and asking the folders above each time
 * cost the daemon a listing of each (and a place among its kept answers). A finding that passed a
 * folder by for a failed request is shown but not kept: the next look asks again. Found again also
 * when told (`forget`): an explicit Refresh, a restarted server, or the folder's own answer no
 * longer holding any.
 */
export class FoldersAbove {
  private readonly finding = new Map<string, Promise<Finding>>();
  private readonly found = new Map<string, string | undefined>();
  private readonly listeners: ((cwd: string, again: boolean) => void)[] = [];

  constructor(private readonly find: (cwd: string) => Promise<Finding>) {}

  /** The folder found above `cwd`, undefined while none is (or it is still being found): the
   * first look starts the finding, so an empty state is drawn at once, and its hint when known. */
  of(cwd: string): string | undefined {
    void this.nearest(cwd);
    return this.found.get(cwd);
  }

  /** The folder above `cwd` once found; asked at most once until forgotten, or while unsure. */
  nearest(cwd: string): Promise<Finding> {
    const asked = this.finding.get(cwd);
    if (asked) return asked;
    const finding: Promise<Finding> = this.find(cwd)
      .catch(() => ({ folder: undefined, skipped: true })) // a hint is no reason to fail
      .then((found) => {
        if (this.finding.get(cwd) !== finding) return found; // forgotten meanwhile: asked again
        if (found.skipped) this.finding.delete(cwd); // perhaps wrong: the next look asks again
        const again = this.found.has(cwd);
        const before = this.found.get(cwd);
        this.found.set(cwd, found.folder);
        if (found.folder !== before) for (const listener of this.listeners) listener(cwd, again);
        return found;
      });
    this.finding.set(cwd, finding);
    return finding;
  }

  /** Calls `listener` with a folder whose finding changed (found, or gone), and whether it replaced
   * an earlier one (rather than being the first). */
  onChanged(listener: (cwd: string, again: boolean) => void): void {
    this.listeners.push(listener);
  }

  /** Find `cwd`'s folder (all folders' without one) again at the next look; what was found is
   * shown until the new finding replaces it. */
  forget(cwd?: string): void {
    if (cwd === undefined) this.finding.clear();
    else this.finding.delete(cwd);
  }
}
