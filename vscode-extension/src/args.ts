/**
 * What a command was invoked with. The same command comes from the palette (no argument), a
 * tree item's context menu or a key on a row (the row's element, a workspace folder's too), an
 * editor of a transcript (its URI), or another extension or a link (`{session, turn?}` or a bare
 * id); this reads all of them.
 */

import { HISTORY_SCHEME, TRANSCRIPT_SCHEME } from './protocol';

export interface SessionTarget {
  session?: string;
  cwd?: string;
  turn?: number;
  label?: string; // how the tree or a caller names it, for tab titles
  keepFocus?: boolean; // opened from a tree row: the focus stays on the row, as in the Explorer
  expectedRevision?: string; // the session's revision `turn` was chosen from (a transcript's lens)
}

export interface FileTarget {
  path?: string;
  review?: string;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}

// A transcript document's URI path, decoded: `/<id>/<title>.md` or `/<id>.md`.
const TRANSCRIPT_PATH = /^\/([^/]+?)(?:\/([^/]*))?\.md$/;

/** A transcript document's URI path back to the session id. */
export function sessionIdFromTranscriptPath(path: string): string | undefined {
  return TRANSCRIPT_PATH.exec(path)?.[1];
}

const TAB_CHARS = 60;

/** A title as the last segment of a path: what the editor's tab shows. Cut by characters, as the
 * server cuts it: by UTF-16 units, an emoji across the cut left half a pair, which
 * `encodeURIComponent` refuses ("URI malformed"). */
function tabName(title: string): string {
  const flat = title.replace(/[\u0000-\u001f/\\]+/g, ' ').replace(/\s+/g, ' ').trim();
  const chars = Array.from(flat);
  return chars.length > TAB_CHARS ? `${chars.slice(0, TAB_CHARS - 1).join('')}…` : flat;
}

/** The `remem-session:` URI of a session's transcript: `/<id>/<title>.md`, so its tab reads the title. */
export function transcriptUri(sessionId: string, title?: string): string {
  const name = title ? tabName(title) : '';
  const tail = name ? `/${encodeURIComponent(name)}` : '';
  return `${TRANSCRIPT_SCHEME}:/${encodeURIComponent(sessionId)}${tail}.md`;
}

/**
 * The heading of the transcript at `path` (decoded): the name its tab shows, in full. That is
 * `label` (how the tree names the session) when the tab was named by it, else the name in the
 * path; none for a path without one (the server's display title then).
 */
export function transcriptHeading(path: string, label?: string): string | undefined {
  const named = TRANSCRIPT_PATH.exec(path)?.[2];
  if (!named) return undefined;
  return label && tabName(label) === named ? label : named;
}

/** The 0-based line of turn `turn`'s heading (`## Turn N — …`) in a transcript; -1 when it has none. */
export function turnLine(markdown: string, turn: number): number {
  return markdown.split(/\r?\n/).findIndex((line) => line.startsWith(`## Turn ${turn} — `));
}

/** The title of a receipt's tab: the session's title, else "Receipt". */
export function receiptTabTitle(title?: string): string {
  return title ? tabName(`Receipt: ${title}`) : 'Receipt';
}

/** `remem-history:/<entry>/<file>`; a null entry is the empty state before a scope's first entry. */
export function historyUri(entry: string | null, file: string): string {
  return `${HISTORY_SCHEME}:/${entry ?? 'empty'}/${encodeURIComponent(file)}`;
}

/** A history document's URI path back to its entry (null: empty) and file name. */
export function historyTarget(path: string): { entry: string | null; file: string } | undefined {
  const match = /^\/(empty|[0-9a-f]{7,40})\/([^/]+)$/.exec(path);
  if (!match) return undefined;
  return { entry: match[1] === 'empty' ? null : match[1], file: match[2] };
}

export function sessionTarget(arg: unknown): SessionTarget {
  const session = text(arg);
  if (session) return { session };
  if (!isObject(arg)) return {};
  if (arg.scheme === TRANSCRIPT_SCHEME && typeof arg.path === 'string') {
    const id = sessionIdFromTranscriptPath(arg.path);
    return id ? { session: id } : {};
  }
  const node = isObject(arg.node) ? arg.node : undefined;
  const target: SessionTarget = {};
  const id = text(arg.session) ?? text(node?.id) ?? text(arg.id);
  if (id) target.session = id;
  // A workspace folder's row (several folders: each heads its own rows) names its folder.
  const cwd = text(arg.cwd) ?? (isObject(arg.folder) ? text(arg.folder.cwd) : undefined);
  if (cwd) target.cwd = cwd;
  const label = text(arg.label);
  if (label) target.label = label;
  if (typeof arg.turn === 'number' && Number.isInteger(arg.turn) && arg.turn >= 0) target.turn = arg.turn;
  if (arg.keepFocus === true) target.keepFocus = true;
  const revision = text(arg.expectedRevision);
  if (revision) target.expectedRevision = revision;
  return target;
}

/** The row a key on Session Branches acts on (its keybindings pass `{selected: true}`, naming no
 * row): the selected one. While a refresh re-reads the rows the tree's selection reads empty
 * (decision 0181) and the last row it reported stands in, unless that row's workspace folder was
 * removed from the window since: then none, and the command asks. Any other argument is the row. */
export function keyedRow(arg: unknown, selection: readonly unknown[], last: unknown, folders: readonly { cwd: string }[]): unknown {
  if (!isObject(arg) || !('selected' in arg)) return arg;
  if (selection.length > 0) return selection[0];
  const { cwd } = sessionTarget(last);
  return cwd === undefined || folders.some((f) => f.cwd === cwd) ? last : undefined;
}

/** A receipt to show: a Memory view item carries the file, a call may name the review. */
export function fileTarget(arg: unknown): FileTarget {
  if (!isObject(arg)) return {};
  const node = isObject(arg.node) ? arg.node : arg;
  const target: FileTarget = {};
  const path = text(node.path);
  if (path) target.path = path;
  const review = text(node.review);
  if (review) target.review = review;
  return target;
}
