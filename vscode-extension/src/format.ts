/** Small text helpers shared by the views and pickers: ages, short ids, review states. */

import type { FlatNode, ReceiptSummary, ReviewState, ReviewStateName } from './protocol';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** "just now", "5 min ago", "3 h ago", "2 d ago", "4 mo ago", "1 y ago"; future times count as now. */
export function age(thenMs: number, nowMs: number): string {
  const elapsed = Math.max(0, nowMs - thenMs);
  if (elapsed < MINUTE) return 'just now';
  if (elapsed < HOUR) return `${Math.floor(elapsed / MINUTE)} min ago`;
  if (elapsed < DAY) return `${Math.floor(elapsed / HOUR)} h ago`;
  if (elapsed < 30 * DAY) return `${Math.floor(elapsed / DAY)} d ago`;
  if (elapsed < 365 * DAY) return `${Math.floor(elapsed / (30 * DAY))} mo ago`;
  return `${Math.floor(elapsed / (365 * DAY))} y ago`;
}

/** How loud a message or a view's note row is; each is also the codicon such a row shows. */
export type Severity = 'info' | 'warning';

/** The severity of what is said of a read, given what could not be read: a warning the user must
 * notice when anything could not be (a folder whose sessions cannot be read is not one without
 * them), information otherwise. Every message and row about a read takes it from here. */
export function readSeverity(unread: readonly unknown[] | undefined): Severity {
  return unread?.length ? 'warning' : 'info';
}

/** Global memory's file. */
export const GLOBAL_FILE = 'GLOBAL.md';

/** The file of a record (or of Global memory) that a history entry's stat names by its stem. */
export function memoryFile(stem: string): string {
  return `${stem}.md`;
}

/** "1 problem", "3 problems". */
export function problemCount(count: number): string {
  return count === 1 ? '1 problem' : `${count} problems`;
}

/** An id short enough for a label: DSH ids are `session-<uuid>` or a bare uuid. */
export function shortId(id: string): string {
  const bare = id.startsWith('session-') ? id.slice('session-'.length) : id;
  return bare.length > 8 ? bare.slice(0, 8) : bare;
}

/** A history entry's or a review's id as `remem memory log` and the receipts print it: 12 hex digits. */
export function shortHash(id: string): string {
  return id.slice(0, 12);
}

/** What a person calls a receipt, in the Memory view and its picker alike: its session's title,
 * else "Session <short id>". */
export function receiptTitle(receipt: Pick<ReceiptSummary, 'session' | 'title'>): string {
  return receipt.title?.trim() || `Session ${shortId(receipt.session)}`;
}

/** A receipt's status, changes and age: "committed · 3 changes · 2 h ago". */
export function receiptDescription(receipt: ReceiptSummary, nowMs: number): string {
  const when = Date.parse(receipt.updatedAt);
  const changes = receipt.changes === 1 ? '1 change' : `${receipt.changes} changes`;
  return [receipt.status, changes, Number.isNaN(when) ? receipt.updatedAt : age(when, nowMs)].join(' · ');
}

/** What a person calls a session: its title, else "Untitled <short id>". */
export function sessionTitle(node: Pick<FlatNode, 'id' | 'title'>): string {
  const title = node.title?.trim();
  return title ? title : `Untitled ${shortId(node.id)}`;
}

const COUNTER = /^(.*?)\s*[(（](\d+)[)）]$/u; // DSH's default branch title: the parent's plus " (N)"

function withoutCounter(title: string): string {
  return COUNTER.exec(title)?.[1] ?? title;
}

/**
 * A branch's name: "After turn N · " and what is its own — the title it was given, else the
 * first line of its own first prompt, else "new branch (N)" — since a default title only
 * repeats the parent's. The daemon tells a default title (`defaultTitle`), which it still is
 * after the parent is renamed; a tree kept from an older daemon has only the comparison with
 * the parent's title. Any other session: its title.
 */
export function sessionLabel(node: FlatNode, parent: Pick<FlatNode, 'id' | 'title'> | undefined): string {
  if (node.kind !== 'fork' || node.forkTurn === null) return sessionTitle(node);
  const title = node.title?.trim() ?? '';
  const sameAsParent = parent?.title != null && withoutCounter(title) === withoutCounter(parent.title.trim());
  const inherited = !title || node.defaultTitle === true || sameAsParent;
  const counter = COUNTER.exec(title)?.[2];
  const own = !inherited ? title : node.ownPrompt?.trim() || `new branch${counter ? ` (${counter})` : ''}`;
  return `After turn ${node.forkTurn} · ${own}`;
}

const STATE_NAMES: ReadonlySet<string> = new Set<ReviewStateName>(['never', 'consolidated', 'no-change', 'failed', 'pending', 'interrupted', 'changed', 'unknown']);

/** The state's name; a state a newer daemon sends that this extension does not know is `unknown`
 * to it: neither shown as reviewed nor offered to consolidate. */
export function reviewStateName(review: ReviewState | null | undefined): ReviewStateName {
  if (!review) return 'never';
  const name = typeof review === 'string' ? review : review.state;
  return STATE_NAMES.has(name) ? name : 'unknown';
}

/** A state as shown: the daemon counts a cancelled review as `failed`, but the user chose it. */
type ShownState = ReviewStateName | 'cancelled';

const REVIEW_BADGES: Record<ShownState, string | null> = {
  never: null,
  consolidated: '✓ consolidated',
  'no-change': '✓ reviewed, no change',
  failed: '✗ consolidation failed',
  cancelled: '○ consolidation cancelled',
  pending: '… consolidation pending',
  interrupted: '⚠ consolidation interrupted',
  changed: '△ changed since consolidated',
  unknown: '? review state unknown',
};

function shownState(review: ReviewState | null | undefined): ShownState {
  const name = reviewStateName(review);
  return name === 'failed' && typeof review === 'object' && review?.status === 'cancelled' ? 'cancelled' : name;
}

/** The review state as a short badge, or null when the session was never consolidated. */
export function reviewBadge(review: ReviewState | null | undefined): string | null {
  return REVIEW_BADGES[shownState(review)];
}

/** The review state in words, for tooltips and pickers (never null). */
export function reviewText(review: ReviewState | null | undefined): string {
  const name = shownState(review);
  if (name === 'never') return 'not consolidated yet';
  // Its receipt's status names the step it stopped in, which is over: said so instead.
  if (name === 'interrupted') return 'consolidation interrupted: stopped without finishing; consolidate it again';
  const status = typeof review === 'object' && review?.status && name !== 'cancelled' ? ` (${review.status})` : '';
  return `${REVIEW_BADGES[name]?.replace(/^\S+ /, '')}${status}`;
}

const LINK_BREAK = '\u200b'; // zero-width space: invisible, but `]` and `(` are no longer adjacent

/** Text made safe to show in a notification. VS Code turns `[text](command:…)`, `(https:…)` and
 * `(file:…)` in a notification's message into links it opens on click, commands included; text
 * from a transcript (a session's title) or from the server would otherwise put a button there
 * that runs any command. Each `](` is split, so no link is made and the text reads the same
 * (decision 0417). */
export function inert(text: string): string {
  return text.replaceAll('](', `]${LINK_BREAK}(`);
}
