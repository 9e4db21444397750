/**
 * What Session Branches shows for each workspace folder while the server is asked: a loading
 * note until the first answer (never the empty state), the tree kept from the last window at
 * once (marked as refreshing) until the server's answer replaces it, the empty state with where
 * remem looked, or the error. While a folder waits, the daemon's indexing progress says how far
 * a cold listing is. The last answer of each folder is kept in the workspace's state.
 */

import { aboveName, homeRelative } from './ancestors';
import { type Fix, rowFix } from './fixes';
import { readSeverity, sessionLabel } from './format';
import { ClientCommands, SESSIONS_UNREADABLE } from './ids';
import { type ListError, type SearchedRoot, type SessionFormat, type SessionsProgressParams, type SessionTreeResult, unreadSessions } from './protocol';

/** The part of `vscode.Memento` this uses, so tests can give a plain map. */
export interface KeptState {
  keys(): readonly string[];
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void>;
}

export type Shown =
  | { kind: 'loading' }
  | { kind: 'tree'; result: SessionTreeResult; refreshing: boolean }
  | { kind: 'error'; message: string; fix: Fix }; // `fix`: what clicking its row does

/** How far the listing a folder waits for has indexed the logs it must read. */
export interface Indexing {
  done: number;
  total: number;
}

interface Folder {
  shown: Shown;
  asking: boolean;
  again: boolean; // a refresh came while asking: the answer may be older than the change
  indexing?: Indexing;
}

const KEY_PREFIX = 'remem.sessionTree:';

export class FolderSessions {
  private readonly folders = new Map<string, Folder>();

  constructor(
    private readonly keptState: KeptState,
    private readonly ask: (cwd: string) => Promise<SessionTreeResult>,
    private readonly changed: () => void,
    private readonly describeError: (error: unknown) => string,
  ) {}

  /** The tree of `cwd` kept from the last window, if it has sessions. */
  kept(cwd: string): SessionTreeResult | undefined {
    const kept = this.keptState.get<SessionTreeResult>(KEY_PREFIX + cwd);
    return kept?.nodes?.length ? kept : undefined;
  }

  /** What to draw for `cwd` now; the first call asks the server, later ones do not. */
  shown(cwd: string): Shown {
    let folder = this.folders.get(cwd);
    if (!folder) {
      const kept = this.kept(cwd);
      const shown: Shown = kept ? { kind: 'tree', result: kept, refreshing: true } : { kind: 'loading' };
      folder = { shown, asking: false, again: false };
      this.folders.set(cwd, folder);
      void this.fetch(cwd, folder);
    }
    return folder.shown;
  }

  /** Ask again for every folder shown; each keeps its current rows until the answer comes. */
  refresh(): void {
    for (const [cwd, folder] of this.folders) void this.fetch(cwd, folder);
  }

  /** Drops the folders not in `keep` (removed from the workspace): they are asked no more, their
   * sessions are labelled no more, and the trees kept of them (this window's, or a past one's) are
   * kept no more. Returns the folders dropped that were shown. */
  forget(keep: ReadonlySet<string>): string[] {
    const dropped = [...this.folders.keys()].filter((cwd) => !keep.has(cwd));
    for (const cwd of dropped) this.folders.delete(cwd);
    for (const key of this.keptState.keys()) {
      if (key.startsWith(KEY_PREFIX) && !keep.has(key.slice(KEY_PREFIX.length))) void this.keptState.update(key, undefined);
    }
    return dropped;
  }

  /** How the tree labels each session of the answers so far: id → label. */
  labels(): Map<string, string> {
    const labels = new Map<string, string>();
    for (const { shown } of this.folders.values()) {
      if (shown.kind !== 'tree') continue;
      const byId = new Map(shown.result.nodes.map((node) => [node.id, node]));
      for (const node of shown.result.nodes) {
        labels.set(node.id, sessionLabel(node, node.parent === null ? undefined : byId.get(node.parent)));
      }
    }
    return labels;
  }

  /** Whether any folder shows a kept tree its answer has not replaced yet (a folder waiting for
   * its first answer says so in its own loading row). */
  get refreshing(): boolean {
    return [...this.folders.values()].some((f) => f.shown.kind === 'tree' && f.shown.refreshing);
  }

  /** The daemon's progress of a listing: told to the folders waiting for one of that `cwd` (all of
   * them when it lists everything), until their answer comes. */
  progress({ cwd, done, total }: SessionsProgressParams): void {
    let told = false;
    for (const [key, folder] of this.folders) {
      if (!folder.asking || (cwd !== null && cwd !== key)) continue;
      folder.indexing = done < total ? { done, total } : undefined;
      told = true;
    }
    if (told) this.changed();
  }

  /** The progress of the listing `cwd` waits for, while it indexes. */
  indexing(cwd: string): Indexing | undefined {
    return this.folders.get(cwd)?.indexing;
  }

  /** What the view's description says while folders wait: the indexing, else "refreshing…". */
  get activity(): string | undefined {
    const indexing = [...this.folders.values()].map((f) => f.indexing).filter((i) => i !== undefined);
    if (indexing.length) {
      const done = indexing.reduce((sum, i) => sum + i.done, 0);
      const total = indexing.reduce((sum, i) => sum + i.total, 0);
      return `indexing ${done} of ${total}…`;
    }
    return this.refreshing ? 'refreshing…' : undefined;
  }

  private async fetch(cwd: string, folder: Folder): Promise<void> {
    if (folder.asking) {
      folder.again = true;
      return;
    }
    folder.asking = true;
    let redraw = true;
    try {
      const result = await this.ask(cwd);
      // An answer that changes nothing shown is not drawn again: a redraw drops the tree's rows
      // until the view has read them again, and a keybinding in between finds no row selected.
      redraw = !(sameTree(folder.shown, result) && folder.indexing === undefined);
      folder.shown = { kind: 'tree', result, refreshing: false };
      // Not for a folder removed while it was asked: its tree was dropped, and would be kept for good.
      if (this.folders.get(cwd) === folder) void this.keptState.update(KEY_PREFIX + cwd, { nodes: result.nodes });
    } catch (error) {
      folder.shown = { kind: 'error', message: this.describeError(error), fix: rowFix(error) };
    } finally {
      folder.asking = false;
      folder.indexing = undefined;
    }
    if (redraw) this.changed();
    if (folder.again) {
      folder.again = false;
      void this.fetch(cwd, folder);
    }
  }
}

/**
 * The sessions labelled in `now` otherwise than in `before`: renamed, or new to the labels. A new
 * one's tab may have been opened before the tree named it: restored from the last window, opened
 * from a receipt's link under the receipt's title, a branch just made ("After turn N of
 * <parent>"), or opened while its folder's answer was an error.
 */
export function relabelled(before: Map<string, string>, now: Map<string, string>): Map<string, string> {
  return new Map([...now].filter(([id, label]) => before.get(id) !== label));
}

function sameTree(shown: Shown, result: SessionTreeResult): boolean {
  return shown.kind === 'tree' && !shown.refreshing && JSON.stringify(shown.result) === JSON.stringify(result);
}

export interface NoteRow {
  label: string;
  description?: string;
  tooltip: string;
  icon: string; // a codicon name
  command?: { id: string; arguments: unknown[] };
}

/** The row a folder shows until its first answer: how far indexing is, once the daemon says. */
export function loadingRow(indexing: Indexing | undefined): NoteRow {
  if (!indexing) return { label: 'Loading the sessions of this workspace…', tooltip: 'Asking remem', icon: 'loading~spin' };
  return {
    label: `Indexing ${indexing.done} of ${indexing.total} sessions…`,
    tooltip: 'remem reads each new or changed session once; later listings come from its index',
    icon: 'loading~spin',
  };
}

export const HARNESSES = 'remem reads the sessions of Claude Code, Codex and DSH';

/** The empty state: what was not found, the nearest folder above `cwd` whose workspace has
 * sessions (`sessionsAbove`, once found), which harnesses remem reads, where it looked, next steps. */
export function emptyRows(result: SessionTreeResult, cwd: string, home: string, sessionsAbove?: string): NoteRow[] {
  // None read is not none there: the row above says why, and that is what to fix.
  const unread = unreadSessions(result.errors);
  const rows: NoteRow[] = [
    {
      label: unread.length ? SESSIONS_UNREADABLE : 'No agent sessions of this workspace were found',
      tooltip: unread.length
        ? 'The row above says which files or folders could not be read, and why.'
        : 'Sessions appear here once an agent harness has worked in this folder.',
      icon: readSeverity(unread),
    },
    ...aboveRows(sessionsAbove, cwd, home),
    { label: HARNESSES, tooltip: HARNESSES, icon: 'hubot' },
  ];
  for (const root of result.searched ?? []) rows.push(rootRow(root, home));
  if (result.settingsFile) {
    rows.push({
      label: 'Open settings.yml',
      description: 'sessions.roots',
      tooltip: `Add the folders your harness writes its sessions to under sessions.roots in ${result.settingsFile}`,
      icon: 'settings-gear',
      command: { id: ClientCommands.openFile, arguments: [result.settingsFile] },
    });
  }
  rows.push({
    label: 'Learn more',
    description: 'which sessions remem reads',
    tooltip: 'Where remem finds sessions, and how the tree is built',
    icon: 'book',
    command: { id: ClientCommands.learnMore, arguments: [] },
  });
  return rows;
}

/** The row above the tree while settings.yml is invalid: the daemon drew it on its last valid settings
 * (the roots the file names now may be missing from it); it opens the file, whose problems it lists. */
export function settingsRows(result: SessionTreeResult): NoteRow[] {
  const problems = result.settingsProblems ?? [];
  if (!problems.length) return [];
  const row: NoteRow = {
    label: 'settings.yml is invalid',
    description: 'sessions shown by the last valid settings',
    tooltip: `${problems.join('\n')}\n\nremem uses the last valid settings until the file is fixed.`,
    icon: 'warning',
  };
  if (result.settingsFile) row.command = { id: ClientCommands.openFile, arguments: [result.settingsFile] };
  return [row];
}

/** The row that names the folder above whose workspace has the sessions this one lacks. */
function aboveRows(above: string | undefined, cwd: string, home: string): NoteRow[] {
  if (!above) return [];
  return [
    {
      label: `Sessions were recorded in ${aboveName(above, cwd, home)}`,
      description: 'open it to see them',
      tooltip:
        `remem keeps an agent's sessions under the folder it ran in: ${above} has sessions, and this ` +
        `folder, inside it, is a workspace of its own. Open ${homeRelative(above, home)} to see them and its memory.`,
      icon: 'folder-opened',
    },
  ];
}

const ERRORS_SHOWN = 20; // in the tooltip of `errorRows`: the rest are counted

/** The rows above the tree (or the empty state) when some of what it looked at could not be read: a
 * workspace whose sessions cannot be read is not one without sessions, and one whose review receipts
 * cannot be read has every session read, their review states unknown. Each tooltip says what and why. */
export function errorRows(result: SessionTreeResult): NoteRow[] {
  const errors = result.errors ?? [];
  return [...kindRows(errors, 'reviews'), ...kindRows(errors, 'metadata'), ...unreadRows(unreadSessions(errors))];
}

/** What an error that left every session read says of them, by its kind. */
const READ_BUT: Record<'reviews' | 'metadata', { label: string; description: string }> = {
  reviews: { label: 'Review states unknown', description: 'the review receipts cannot be read' },
  metadata: { label: 'Titles and archive states not read', description: "sessions shown with their logs' titles" },
};

function kindRows(errors: readonly ListError[], kind: 'reviews' | 'metadata'): NoteRow[] {
  return errors
    .filter((error) => error.kind === kind)
    .map((error) => ({ ...READ_BUT[kind], tooltip: `${error.path}: ${error.message}`, icon: readSeverity([error]) }));
}

function unreadRows(errors: readonly ListError[]): NoteRow[] {
  if (!errors.length) return [];
  const shown = errors.slice(0, ERRORS_SHOWN).map((e) => `${e.path}: ${e.message}`);
  if (errors.length > ERRORS_SHOWN) shown.push(`…and ${errors.length - ERRORS_SHOWN} more`);
  return [
    {
      label: 'Some sessions could not be read',
      description: errors.length === 1 ? '1 file or folder' : `${errors.length} files or folders`,
      // A plain tooltip: Markdown's backticks would show as typed.
      tooltip: `${shown.join('\n')}\n\nThe command "remem sessions list" lists them too.`,
      icon: readSeverity(errors),
    },
  ];
}

/** Each harness's sessions folder: its name, and the variable that moves its home. */
const HARNESS_FOLDERS: Record<SessionFormat, { name: string; folder: string }> = {
  'claude-code': { name: 'Claude Code', folder: '$CLAUDE_CONFIG_DIR/projects (by default ~/.claude/projects)' },
  codex: { name: 'Codex', folder: '$CODEX_HOME/sessions (by default ~/.codex/sessions)' },
  dsh: { name: 'DSH', folder: '$DSH_HOME/sessions (by default ~/.dsh/sessions)' },
};

function rootRow(root: SearchedRoot, home: string): NoteRow {
  const path = homeRelative(root.path, home);
  const harness = root.harness ? HARNESS_FOLDERS[root.harness] : undefined;
  const description = [harness?.name, root.exists ? undefined : 'not found'].filter(Boolean).join(' · ');
  return {
    label: `Looked in ${path}`,
    description: description || undefined,
    tooltip: harness ? harnessTooltip(harness.name, harness.folder, root) : rootTooltip(root),
    icon: root.exists ? 'folder' : 'folder-library',
  };
}

function rootTooltip(root: SearchedRoot): string {
  return root.exists ? `${root.path}: no session of this folder` : `${root.path} does not exist`;
}

/** A harness's folder not found is most often elsewhere: its variable set in a shell's profile,
 * not where the editor started. */
function harnessTooltip(name: string, folder: string, root: SearchedRoot): string {
  const where = `${name}'s sessions folder, ${folder}`;
  if (root.exists) return `${where}: no session of this folder`;
  const elsewhere = `If ${name} keeps its sessions elsewhere, add that folder under sessions.roots in settings.yml.`;
  return `${where}: ${root.path} does not exist. ${elsewhere}`;
}
