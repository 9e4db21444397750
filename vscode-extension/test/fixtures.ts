/** Tree nodes shaped exactly like the daemon's `sessions/tree` output, and the window's kept
 * state, for the unit tests. */

import type { FlatNode } from '../src/protocol';
import type { KeptState } from '../src/sessionsState';

export const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
/** A window of one workspace folder. */
export const PROJ = [{ name: 'proj', cwd: '/proj' }];
export const HOUR = 3_600_000;

export function node(id: string, fields: Partial<FlatNode> = {}): FlatNode {
  return {
    id,
    title: `Title of ${id}`,
    kind: 'root',
    forkTurn: null,
    createdAt: NOW - HOUR,
    live: false,
    archived: false,
    flags: [],
    review: { state: 'never', status: null },
    parent: null,
    depth: 0,
    ...fields,
  };
}

/** main ─┬ fork (after turn 2)
 *        └ helper (subagent);  lost (a fork whose parent is missing: an orphan root) */
export const FAMILY: FlatNode[] = [
  node('session-main', { createdAt: NOW - 5 * HOUR }),
  node('session-fork', {
    kind: 'fork',
    forkTurn: 2,
    parent: 'session-main',
    depth: 1,
    createdAt: NOW - 2 * HOUR,
    review: { state: 'consolidated', status: null },
  }),
  node('helper', { kind: 'subagent', parent: 'session-main', depth: 1, createdAt: NOW - 4 * HOUR, title: null }),
  node('session-lost', { kind: 'fork', forkTurn: 1, flags: ['orphan'], createdAt: NOW - 3 * HOUR, live: true }),
];

/** The window's kept state (`ExtensionContext.workspaceState`), in memory. */
export class Kept implements KeptState {
  readonly values = new Map<string, unknown>();
  keys(): readonly string[] {
    return [...this.values.keys()];
  }
  get<T>(key: string): T | undefined {
    return this.values.get(key) as T | undefined;
  }
  async update(key: string, value: unknown): Promise<void> {
    if (value === undefined) this.values.delete(key); // as a Memento forgets it
    else this.values.set(key, value);
  }
}

/** A language server answering each request with `answer(method, cwd)` (a promise the test
 * settles when it holds an answer back), that notes what it was asked, as `method cwd`. */
export function folderServer(answer: (method: string, cwd: string) => unknown) {
  const asked: string[] = [];
  return {
    asked,
    request: async <R>(method: string, params: object): Promise<R> => {
      const { cwd } = params as { cwd: string };
      asked.push(`${method} ${cwd}`);
      return (await answer(method, cwd)) as R;
    },
    command: async <R>(): Promise<R> => undefined as R,
  };
}

/** The home folder (`os.homedir()`) at `home` for the rest of test `t`. */
export function homeAt(t: { after(fn: () => void): void }, home: string): void {
  const was = process.env.HOME;
  process.env.HOME = home;
  t.after(() => {
    process.env.HOME = was;
  });
}
