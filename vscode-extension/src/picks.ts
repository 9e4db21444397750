/** Quick-pick items for the palette commands, as plain data (`vscode.QuickPickItem`-shaped). */

import { age, receiptDescription, receiptTitle, reviewText, sessionLabel, shortHash } from './format';
import type { FlatNode, HistoryEntry, ModelSettings, ReceiptSummary, TurnRow } from './protocol';
import { inParentTranscript, isEligible } from './sessionTree';

export interface PickItem {
  label: string;
  description?: string;
  detail?: string;
}

export interface SessionPick extends PickItem {
  session: string;
  /** How to name the session's transcript when that is not the pick's label: a row shown in its
   * session's transcript opens that one, named as the session's row reads. */
  title?: string;
}

export interface TurnPick extends PickItem {
  turn: number;
}

export interface ReceiptPick extends PickItem {
  review: string;
  title: string | null;
}

export interface ProviderPick extends PickItem {
  provider: string;
}

export interface HistoryPick extends PickItem {
  entry: HistoryEntry;
}

/** `item` as a quick pick shows it: its texts (titles and prompts from sessions, a client's name)
 * with `$(name)` escaped, which the quick pick would draw as an icon, the text gone. */
export function iconless<T extends PickItem>(item: T): T {
  const escape = (text: string | undefined) => text?.replace(/\$\(/g, '\\$(');
  return { ...item, label: escape(item.label), description: escape(item.description), detail: escape(item.detail) };
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
    actor.review ? `review ${shortHash(actor.review)}` : null,
    actor.kind === 'revert' ? wentBack(actor.reverts) : null,
  ].filter(Boolean);
  return details.length ? `${ACTORS[actor.kind]} (${details.join(', ')})` : ACTORS[actor.kind];
}

/** A revert with no entry to name went back to the empty state before its scope's first. */
function wentBack(reverts: string | null | undefined): string {
  return reverts ? `back to ${shortHash(reverts)}` : 'back to before the first entry';
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
  return entries.map((entry) => ({
    label: actorText(entry),
    description: `${age(Date.parse(entry.at), nowMs)} · ${shortHash(entry.id)}`,
    detail: statText(entry),
    entry,
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
  // An in-file branch or an inline subagent is part of its session's file, no session of its
  // own: nothing can be asked of it by id (the daemon answers "no session").
  const own = shown.filter((n) => !inParentTranscript(n));
  return newestFirst(own).map((n) => sessionPick(n, nowMs, n.parent === null ? undefined : byId.get(n.parent)));
}

/** The sessions the daemon would consolidate (finished, not archived), newest first. */
export function consolidationPicks(nodes: readonly FlatNode[], nowMs: number): SessionPick[] {
  return picksOf(nodes.filter(isEligible), nodes, nowMs);
}

/** Every session of the workspace, newest first (branching, renaming, archiving). */
export function sessionPicks(nodes: readonly FlatNode[], nowMs: number): SessionPick[] {
  return picksOf(nodes, nodes, nowMs);
}

/** Every row's transcript, newest first. An in-file branch or an inline subagent has none of its
 * own: its turns follow the conversation in its session's transcript, which it opens, as a
 * click on its row does. */
export function transcriptPicks(nodes: readonly FlatNode[], nowMs: number): SessionPick[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const parentOf = (n: FlatNode) => (n.parent === null ? undefined : byId.get(n.parent));
  return newestFirst(nodes).flatMap((n) => {
    const pick = sessionPick(n, nowMs, parentOf(n));
    if (!inParentTranscript(n)) return [pick];
    let owner = parentOf(n);
    while (owner && inParentTranscript(owner)) owner = parentOf(owner);
    if (!owner) return []; // its session is not listed: there is no transcript to open
    const title = sessionLabel(owner, parentOf(owner));
    const what = n.kind === 'branch' ? `abandoned after turn ${n.forkTurn ?? 0}` : 'subagent written inside its session’s file';
    return [{ ...pick, detail: `${what} · in the transcript of “${title}”`, session: owner.id, title }];
  });
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
  return receipts.map((r) => ({
    label: receiptTitle(r),
    description: receiptDescription(r, nowMs),
    detail: `review ${r.review}`,
    review: r.review,
    title: r.title?.trim() || null,
  }));
}

export interface ModelPick extends PickItem {
  model: string | null; // null: type an id instead
}

export const TYPE_MODEL = 'Type a model id…';

/** A provider's listed models, the current one first and marked, then a way to type another. */
export function modelPicks(models: readonly string[], current: string | undefined): ModelPick[] {
  const ordered = current && models.includes(current) ? [current, ...models.filter((m) => m !== current)] : models;
  const listed: ModelPick[] = ordered.map((model) => ({
    label: model,
    description: model === current ? 'current' : undefined,
    model,
  }));
  return [...listed, { label: TYPE_MODEL, description: 'one the list does not name', model: null }];
}

/** How a route whose provider has no default model and none chosen shows its model. */
export const NO_MODEL = 'no model chosen';

/** Providers with the current one first and marked. */
export function providerPicks(settings: ModelSettings): ProviderPick[] {
  const ordered = [settings.provider, ...settings.providers.filter((p) => p !== settings.provider)];
  return ordered.map((provider) => ({
    label: provider,
    description: provider === settings.provider ? `current · ${settings.model ?? NO_MODEL}` : undefined,
    provider,
  }));
}
