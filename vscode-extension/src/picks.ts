/** Quick-pick items for the palette commands, as plain data (`vscode.QuickPickItem`-shaped). */

import { age, reviewText, sessionLabel, shortId } from './format';
import type { FlatNode, HistoryEntry, ModelSettings, ReceiptSummary, TurnRow } from './protocol';
import { isEligible } from './sessionTree';

export interface PickItem {
  label: string;
  description?: string;
  detail?: string;
}

export interface SessionPick extends PickItem {
  session: string;
}

export interface TurnPick extends PickItem {
  turn: number;
}

export interface ReceiptPick extends PickItem {
  path: string;
}

export interface ProviderPick extends PickItem {
  provider: string;
}

export interface HistoryPick extends PickItem {
  entry: HistoryEntry;
  index: number; // 0 is the newest
}

const ACTORS: Record<HistoryEntry['actor']['kind'], string> = {
  cli: 'remem command',
  agent: 'Agent',
  consolidation: 'Consolidation',
  'hand-edit': 'Edited by hand',
  recovered: 'Found on start (changed while remem was not watching)',
  revert: 'Revert',
};

/** Who made an entry, with the ids that say which one. */
export function actorText(entry: HistoryEntry): string {
  const { actor } = entry;
  const details = [
    actor.client,
    actor.review ? `review ${actor.review.slice(0, 12)}` : null,
    actor.reverts ? `back to ${actor.reverts.slice(0, 12)}` : null,
  ].filter(Boolean);
  return details.length ? `${ACTORS[actor.kind]} (${details.join(', ')})` : ACTORS[actor.kind];
}

/** What an entry changed, in one line: `added a; changed b (+3 −1)`. */
export function statText(entry: HistoryEntry): string {
  const stat = entry.stat;
  if (!stat) return '';
  const parts = (
    [
      ['added', stat.added],
      ['changed', stat.changed],
      ['removed', stat.removed],
    ] as const
  )
    .filter(([, names]) => names.length > 0)
    .map(([label, names]) => `${label} ${names.join(', ')}`);
  return parts.length ? `${parts.join('; ')} (+${stat.insertions} −${stat.deletions})` : 'no file changed';
}

export function historyPicks(entries: readonly HistoryEntry[], nowMs: number): HistoryPick[] {
  return entries.map((entry, index) => ({
    label: actorText(entry),
    description: `${age(Date.parse(entry.at), nowMs)} · ${entry.id.slice(0, 12)}`,
    detail: statText(entry),
    entry,
    index,
  }));
}

function newestFirst(nodes: readonly FlatNode[]): FlatNode[] {
  return [...nodes].sort((a, b) => b.createdAt - a.createdAt || a.id.localeCompare(b.id));
}

function lineage(node: FlatNode): string {
  if (node.kind === 'fork') return node.forkTurn === null ? 'branch' : `branch from turn ${node.forkTurn}`;
  return node.kind === 'subagent' ? 'subagent' : 'session';
}

export function sessionPick(node: FlatNode, nowMs: number, parent?: FlatNode): SessionPick {
  const state = [age(node.createdAt, nowMs), reviewText(node.review)];
  if (node.live) state.push('live');
  if (node.archived) state.push('archived');
  return {
    label: sessionLabel(node, parent),
    description: state.join(' · '),
    detail: `${lineage(node)} · ${node.id}`,
    session: node.id,
  };
}

function picksOf(shown: readonly FlatNode[], all: readonly FlatNode[], nowMs: number): SessionPick[] {
  const byId = new Map(all.map((n) => [n.id, n]));
  // An in-file branch is no session of its own: nothing can be asked of it by id.
  return newestFirst(shown.filter((n) => n.kind !== 'branch')).map((n) => sessionPick(n, nowMs, n.parent === null ? undefined : byId.get(n.parent)));
}

/** The sessions the daemon would consolidate (finished, not archived), newest first. */
export function consolidationPicks(nodes: readonly FlatNode[], nowMs: number): SessionPick[] {
  return picksOf(nodes.filter(isEligible), nodes, nowMs);
}

/** Every session of the workspace, newest first (transcripts, branching, renaming). */
export function sessionPicks(nodes: readonly FlatNode[], nowMs: number): SessionPick[] {
  return picksOf(nodes, nodes, nowMs);
}

const PROMPT_CHARS = 120;

/** The completed turns one can branch after, latest first (the usual wish is "just before now"). */
export function turnPicks(turns: readonly TurnRow[]): TurnPick[] {
  return turns
    .filter((t) => t.forkable)
    .sort((a, b) => b.turn - a.turn)
    .map((t) => {
      const prompt = t.user.replace(/\s+/g, ' ').trim();
      return {
        label: `Turn ${t.turn}`,
        description: t.status,
        detail: prompt.length > PROMPT_CHARS ? `${prompt.slice(0, PROMPT_CHARS - 1)}…` : prompt,
        turn: t.turn,
      };
    });
}

export function receiptPicks(receipts: readonly ReceiptSummary[], nowMs: number): ReceiptPick[] {
  return receipts.map((r) => {
    const when = Date.parse(r.updatedAt);
    const changes = r.changes === 1 ? '1 change' : `${r.changes} changes`;
    return {
      label: r.title?.trim() || `Session ${shortId(r.session)}`,
      description: [r.status, changes, Number.isNaN(when) ? r.updatedAt : age(when, nowMs)].join(' · '),
      detail: `review ${r.review}`,
      path: r.path,
    };
  });
}

/** Providers with the current one first and marked. */
export function providerPicks(settings: ModelSettings): ProviderPick[] {
  const ordered = [settings.provider, ...settings.providers.filter((p) => p !== settings.provider)];
  return ordered.map((provider) => ({
    label: provider,
    description: provider === settings.provider ? `current · ${settings.model}` : undefined,
    provider,
  }));
}
