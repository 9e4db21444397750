/**
 * The Session Branches tree as plain data: the daemon's pre-order flat node list regrouped by
 * parent, and each node described as a tree item (label, description badges, icon, tooltip,
 * context value for the menus). The view module only turns these into `vscode.TreeItem`s.
 */

import { age, problemCount, reviewBadge, reviewStateName, reviewText, sessionLabel, sessionTitle, shortId } from './format';
import { ROW_TOKEN_SEPARATOR, RowContexts } from './ids';
import type { FlatNode, SessionFormat } from './protocol';

/** How the tree names each harness; DSH, remem's first format, carries no badge. */
export const HARNESS_BADGES: Record<SessionFormat, string | null> = {
  dsh: null,
  'claude-code': 'Claude Code',
  codex: 'Codex',
};
const HARNESS_ICONS: Record<SessionFormat, string> = { dsh: 'comment-discussion', 'claude-code': 'sparkle', codex: 'terminal' };

export class SessionForest {
  private readonly byId = new Map<string, FlatNode>();
  private readonly childrenOf = new Map<string | null, FlatNode[]>();

  /** `nodes` in the daemon's pre-order, so children keep the daemon's (creation) order. */
  constructor(readonly nodes: readonly FlatNode[]) {
    for (const node of nodes) {
      this.byId.set(node.id, node);
      // A parent that is not in the list cannot be shown: the node stands as a root.
      const parent = node.parent !== null && this.byId.has(node.parent) ? node.parent : null;
      const siblings = this.childrenOf.get(parent) ?? [];
      siblings.push(node);
      this.childrenOf.set(parent, siblings);
    }
  }

  roots(): FlatNode[] {
    return this.childrenOf.get(null) ?? [];
  }

  children(id: string): FlatNode[] {
    return this.childrenOf.get(id) ?? [];
  }

  get(id: string): FlatNode | undefined {
    return this.byId.get(id);
  }
}

export interface ItemIcon {
  id: string; // a codicon name
  color?: string; // a theme color id
}

export interface SessionItem {
  label: string;
  description: string;
  tooltip: string; // Markdown
  icon: ItemIcon;
  contextValue: string;
  expanded: boolean | null; // null: no children, nothing to expand
}

/** The nodes the view shows: archived ones only when asked for; how many it hides. A child of a
 * hidden session stands as a root (the forest roots a node whose parent is not in the list). */
export function visibleNodes(nodes: readonly FlatNode[], showArchived: boolean): { nodes: FlatNode[]; hidden: number } {
  const shown = showArchived ? [...nodes] : nodes.filter((n) => !n.archived);
  return { nodes: shown, hidden: nodes.length - shown.length };
}

/** Whether the daemon would consolidate this session (it refuses live and archived ones). */
// A subagent's session is reviewed as part of its parent's (the daemon refuses it: SUBAGENT); a
// review state unknown is one whose receipts cannot be read, which a review would be refused for.
export function isEligible(node: FlatNode): boolean {
  return !node.live && !node.archived && node.kind !== 'subagent' && reviewStateName(node.review) !== 'unknown';
}

export function sessionIcon(node: FlatNode): ItemIcon {
  if (node.flags.includes('cycle')) return { id: 'error', color: 'list.errorForeground' };
  if (node.flags.includes('orphan')) return { id: 'warning', color: 'list.warningForeground' };
  if (node.kind === 'branch') return { id: 'history' };
  if (node.kind === 'subagent') return { id: 'hubot' };
  if (node.kind === 'fork') return { id: 'git-branch' };
  return { id: HARNESS_ICONS[node.format ?? 'dsh'] };
}

export function sessionBadges(node: FlatNode): string[] {
  const badges: string[] = [];
  if (node.live) badges.push('● live');
  if (node.archived) badges.push('archived');
  if (node.flags.includes('orphan')) badges.push('orphan');
  if (node.flags.includes('cycle')) badges.push('cycle');
  if (node.problems) badges.push(`⚠ ${problemCount(node.problems)}`);
  const review = reviewBadge(node.review);
  if (review) badges.push(review);
  return badges;
}

/** Whether the node is shown in another session's transcript, not one of its own: an in-file
 * branch, or a subagent written inside its parent's file (Claude Code 1.0). */
export function inParentTranscript(node: FlatNode): boolean {
  return node.kind === 'branch' || node.flags.includes('inline');
}

export function sessionDescription(node: FlatNode, nowMs: number): string {
  const parts: string[] = [];
  const harness = HARNESS_BADGES[node.format ?? 'dsh'];
  if (harness) parts.push(harness);
  if (node.kind === 'subagent') parts.push('subagent');
  if (node.kind === 'branch') parts.push(`abandoned after turn ${node.forkTurn ?? 0}`);
  parts.push(age(node.createdAt, nowMs));
  return [...parts, ...sessionBadges(node)].join(' · ');
}

export function sessionTooltip(node: FlatNode): string {
  const lines = [`**${escapeMarkdown(sessionTitle(node))}**`, '', `Id: \`${node.id}\``];
  lines.push(`Created: ${new Date(node.createdAt).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}`);
  if (node.kind === 'fork') {
    const turn = node.forkTurn === null ? '' : ` after turn ${node.forkTurn}`;
    const of = node.parent === null ? '' : ` of \`${shortId(node.parent)}\``;
    lines.push(`Branch${turn}${of}`);
  } else if (node.kind === 'subagent') {
    const inline = 'Subagent written inside its session’s file; its turns are at the end of that transcript.';
    lines.push(node.flags.includes('inline') ? inline : 'Subagent session');
  } else if (node.kind === 'branch') {
    lines.push('A path this session left (a rewind or an edit); its turns are at the end of the transcript.');
  }
  const harness = HARNESS_BADGES[node.format ?? 'dsh'];
  if (harness) lines.push(`Harness: ${harness}`);
  lines.push(`Review: ${reviewText(node.review)}`);
  if (node.live) lines.push('Live: an agent is still writing this session.');
  if (node.archived) lines.push('Archived: hidden from agents; Restore brings it back.');
  if (node.flags.includes('orphan')) {
    lines.push('Orphan: its parent session is in no configured session root.');
  }
  if (node.flags.includes('cycle')) lines.push('Cycle: its parent links loop; the loop is broken here.');
  if (node.problems) {
    lines.push(`Problems: ${problemCount(node.problems)} in its file, skipped or flagged while reading; the transcript lists them.`);
  }
  return lines.join('  \n');
}

/** The row's context value, tokens the `view/item/context` menus match with regular expressions. */
export function sessionContextValue(node: FlatNode): string {
  if (node.kind === 'branch') return RowContexts.branch; // not a session: no session menu applies
  if (node.flags.includes('inline')) return RowContexts.inlineSubagent; // part of its parent's file, likewise
  const tokens: string[] = [
    RowContexts.session,
    node.archived ? RowContexts.archived : RowContexts.active,
    node.live ? RowContexts.live : RowContexts.finished,
  ];
  if (isEligible(node)) tokens.push(RowContexts.eligible);
  if (!['never', 'unknown'].includes(reviewStateName(node.review))) tokens.push(RowContexts.reviewed);
  return tokens.join(ROW_TOKEN_SEPARATOR);
}

export function sessionItem(forest: SessionForest, node: FlatNode, nowMs: number): SessionItem {
  return {
    label: sessionLabel(node, node.parent === null ? undefined : forest.get(node.parent)),
    description: sessionDescription(node, nowMs),
    tooltip: sessionTooltip(node),
    icon: sessionIcon(node),
    contextValue: sessionContextValue(node),
    expanded: forest.children(node.id).length > 0 ? true : null,
  };
}

function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, '\\$&');
}
