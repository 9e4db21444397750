/**
 * The Memory view as plain data: Global memory, this workspace's index and records with their
 * validity, and the most recent consolidation receipts, from `remem/memoryOverview`.
 */

import { aboveName } from './ancestors';
import type { Fix } from './fixes';
import type { Folder } from './flows';
import { GLOBAL_FILE, problemCount, receiptDescription, receiptTitle } from './format';
import { ClientCommands, CommandTitles, RowContexts } from './ids';
import type { MemoryOverview, ReceiptSummary, RecordSummary } from './protocol';
import type { ItemIcon } from './sessionTree';

export type MemoryNode =
  | { kind: 'section'; id: string; label: string; description: string; children: MemoryNode[] }
  | {
      kind: 'file';
      id: string;
      label: string;
      description: string;
      tooltip: string;
      icon: ItemIcon;
      path: string;
      review?: string; // a receipt's: it opens rendered, not as its file
    }
  | { kind: 'note'; id: string; label: string; icon?: string; fix?: Fix }; // `fix`: what a click on it does

export type FileNode = Extract<MemoryNode, { kind: 'file' }>;

/** The row's context value: a memory file has a history to show, a receipt does not. */
export function fileContextValue(node: FileNode): string {
  return node.review ? RowContexts.receipt : RowContexts.memoryFile;
}

const VALID: ItemIcon = { id: 'pass', color: 'testing.iconPassed' };
const INVALID: ItemIcon = { id: 'error', color: 'list.errorForeground' };

function validity(valid: boolean, count: number): string {
  return valid && count === 0 ? 'valid' : problemCount(Math.max(count, 1));
}

export function globalNode(overview: MemoryOverview): MemoryNode {
  const { path, valid, problems: count } = overview.global;
  return {
    kind: 'file',
    id: 'global',
    label: GLOBAL_FILE,
    description: `Global memory · ${validity(valid, count)}`,
    tooltip: `${path}\n\nUser-wide memory every agent loads, in every workspace.`,
    icon: valid ? { id: 'globe' } : INVALID,
    path,
  };
}

export function recordNode(record: RecordSummary): MemoryNode {
  const state = validity(record.valid, record.problems);
  return {
    kind: 'file',
    id: `record:${record.path}`,
    label: record.name,
    description: `${record.type} · ${state}`,
    tooltip: `${record.description}\n\n${record.path}`,
    icon: record.valid ? VALID : INVALID,
    path: record.path,
  };
}

export function receiptNode(receipt: ReceiptSummary, nowMs: number): MemoryNode {
  return {
    kind: 'file',
    id: `receipt:${receipt.review}`,
    label: receiptTitle(receipt),
    description: receiptDescription(receipt, nowMs),
    tooltip: `Review ${receipt.review}\nSession ${receipt.session}\n${receipt.path}${receiptNote(receipt)}`,
    icon: receiptIcon(receipt.status),
    path: receipt.path,
    review: receipt.review,
  };
}

const ENDED_WELL = new Set(['committed', 'no-change']); // a cancel ended as the user asked, drawn apart
const IN_FLIGHT = new Set(['prepared', 'running', 'proposed', 'committing']);

/** Receipt statuses as the daemon names them; anything else is a final failure, but a cancel is the
 * user's, and an interrupted review (no run holds it) failed nothing: it is only to be run again. */
function receiptIcon(status: string): ItemIcon {
  if (ENDED_WELL.has(status)) return VALID;
  if (IN_FLIGHT.has(status)) return { id: 'loading' };
  if (status === 'cancelled') return { id: 'circle-slash' };
  if (status === 'interrupted') return { id: 'warning', color: 'list.warningForeground' };
  return INVALID;
}

/** What an interrupted review's row says below its file: why, and how to run it again. */
function receiptNote(receipt: ReceiptSummary): string {
  if (receipt.status !== 'interrupted') return '';
  return (
    '\n\nStopped without finishing: its process was killed or could not record its end. ' +
    `${CommandTitles.consolidateSession} on the session (Session Branches), or ` +
    `\`remem consolidate ${receipt.session}\`, reviews it again.`
  );
}

/** Click: Consolidate Session, of this folder's sessions: how a workspace's memory begins. */
function consolidateFix(cwd: string): Fix {
  return { title: CommandTitles.consolidateSession, command: ClientCommands.consolidateSession, arguments: [{ cwd }] };
}

/** The workspace folder a Memory subtree is of: `place`, how its rows name it (`folderPlace`);
 * `recordsAbove`, when it has no records, the folder above it that Session Branches found, when
 * that folder has records;
 * `home`, the user's home folder, from which a folder is named (`~/proj`). */
export interface MemoryFolder {
  cwd: string;
  place: string;
  recordsAbove?: string;
  home: string;
}

/** This workspace's index and records; `cwd`, its folder, is the one a click on "No records yet"
 * consolidates; without records, the folder above found with records is named (decision 0488). */
export function workspaceSection(overview: MemoryOverview, { cwd, recordsAbove, home }: MemoryFolder): MemoryNode {
  const { index, folder } = overview.workspace;
  const children: MemoryNode[] = [];
  if (index) {
    children.push({
      kind: 'file',
      id: 'index',
      label: 'MEMORY.md',
      description: 'index',
      tooltip: `${index}\n\nThe generated index of this workspace's records.`,
      icon: { id: 'list-unordered' },
      path: index,
    });
  }
  children.push(...[...overview.records].sort((a, b) => a.name.localeCompare(b.name)).map(recordNode));
  if (children.length === 0) {
    const label = 'No records yet: consolidate a session';
    children.push({ kind: 'note', id: 'workspace-empty', label, fix: consolidateFix(cwd) });
    if (recordsAbove) {
      const above = `Records were kept for ${aboveName(recordsAbove, cwd, home)}: open it to see them`;
      children.push({ kind: 'note', id: 'workspace-above', label: above, icon: 'folder-opened' });
    }
  }
  const invalid = overview.records.filter((r) => !r.valid).length;
  const count = overview.records.length === 1 ? '1 record' : `${overview.records.length} records`;
  return {
    kind: 'section',
    id: 'workspace',
    label: 'This workspace',
    description: [count, invalid ? `${invalid} invalid` : null, folder ? null : 'no memory folder yet']
      .filter((part): part is string => part !== null)
      .join(' · '),
    children,
  };
}

/** The folder `cwd` as its memory's rows name it: "this workspace" when it is the window's only
 * folder, else its name. The receipts are each folder's own, and a window of several draws them
 * under each folder: that none has run is said of one folder, by its name (decision 0488). */
export function folderPlace(cwd: string, folders: readonly Folder[]): string {
  if (folders.length <= 1) return 'this workspace';
  return folders.find((f) => f.cwd === cwd)?.name ?? cwd;
}

/** The recent receipts of the folder named `place` (`folderPlace`). */
export function receiptsSection(overview: MemoryOverview, nowMs: number, place: string): MemoryNode {
  const children: MemoryNode[] = overview.receipts.map((r) => receiptNode(r, nowMs));
  if (children.length === 0) {
    children.push({ kind: 'note', id: 'receipts-empty', label: `No consolidation has run in ${place} yet.` });
  }
  return { kind: 'section', id: 'receipts', label: 'Recent receipts', description: '', children };
}

/** The top level of the Memory view for a workspace folder. */
export function memoryNodes(overview: MemoryOverview, folder: MemoryFolder, nowMs: number): MemoryNode[] {
  return [globalNode(overview), workspaceSection(overview, folder), receiptsSection(overview, nowMs, folder.place)];
}
