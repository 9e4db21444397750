import assert from 'node:assert/strict';
import { test } from 'node:test';

import { SessionForest, inParentTranscript, sessionContextValue, sessionItem, visibleNodes } from '../src/sessionTree';
import { FAMILY, HOUR, NOW, node } from './fixtures';

test('the flat pre-order list becomes roots with their children in daemon order', () => {
  const forest = new SessionForest(FAMILY);
  assert.deepEqual(
    forest.roots().map((n) => n.id),
    ['session-main', 'session-lost'],
  );
  assert.deepEqual(
    forest.children('session-main').map((n) => n.id),
    ['session-fork', 'helper'],
  );
  assert.deepEqual(forest.children('session-fork'), []);
});

test('a node whose parent is not in the list is shown as a root, not lost', () => {
  const forest = new SessionForest([node('child', { kind: 'fork', parent: 'gone', depth: 1 })]);
  assert.deepEqual(
    forest.roots().map((n) => n.id),
    ['child'],
  );
});

test('a fork says its fork turn (in the label, visible at any width), age and review badge', () => {
  const forest = new SessionForest(FAMILY);
  const fork = sessionItem(forest, FAMILY[1], NOW);
  assert.equal(fork.label, 'After turn 2 · Title of session-fork');
  assert.equal(fork.description, '2 h ago · ✓ consolidated');
  assert.deepEqual(fork.icon, { id: 'git-branch' });
  assert.equal(fork.expanded, null);
  assert.equal(sessionItem(forest, FAMILY[0], NOW).expanded, true);
});

test('an orphan is flagged by icon, badge and tooltip; live shows as a badge', () => {
  const forest = new SessionForest(FAMILY);
  const lost = sessionItem(forest, FAMILY[3], NOW);
  assert.equal(lost.icon.id, 'warning');
  assert.equal(lost.label, 'After turn 1 · Title of session-lost');
  assert.equal(lost.description, '3 h ago · ● live · orphan');
  assert.match(lost.tooltip, /Orphan: its parent session is in no configured session root/);
  assert.match(lost.tooltip, /Id: `session-lost`/);
  assert.match(lost.tooltip, /Created: 2026-11-30 09:00:00 UTC/);
});

test('icons follow the kind: root, fork, subagent', () => {
  const forest = new SessionForest(FAMILY);
  assert.equal(sessionItem(forest, FAMILY[0], NOW).icon.id, 'comment-discussion');
  const helper = sessionItem(forest, FAMILY[2], NOW);
  assert.equal(helper.icon.id, 'hubot');
  assert.equal(helper.label, 'Untitled helper');
  assert.equal(helper.description, 'subagent · 4 h ago');
});

test('a Claude Code or Codex session names its harness by badge, icon and tooltip', () => {
  const claude = node('cc', { format: 'claude-code', createdAt: NOW - HOUR });
  const codex = node('cx', { format: 'codex', createdAt: NOW - HOUR });
  const forest = new SessionForest([claude, codex]);
  const shown = sessionItem(forest, claude, NOW);
  assert.equal(shown.description, 'Claude Code · 1 h ago');
  assert.equal(shown.icon.id, 'sparkle');
  assert.match(shown.tooltip, /Harness: Claude Code/);
  assert.equal(sessionItem(forest, codex, NOW).description, 'Codex · 1 h ago');
  assert.equal(sessionItem(forest, codex, NOW).icon.id, 'terminal');
});

test('an in-file branch sits under its session, says where it left, and has no session menu', () => {
  const main = node('cc', { format: 'claude-code', createdAt: NOW - HOUR });
  const branch = node('cc@leaf', {
    kind: 'branch', format: 'claude-code', parent: 'cc', depth: 1, forkTurn: 1, createdAt: NOW - HOUR,
  }); // prettier-ignore
  const forest = new SessionForest([main, branch]);
  assert.deepEqual(forest.children('cc').map((n) => n.id), ['cc@leaf']);
  const shown = sessionItem(forest, branch, NOW);
  assert.equal(shown.description, 'Claude Code · abandoned after turn 1 · 1 h ago');
  assert.equal(shown.icon.id, 'history');
  assert.equal(shown.contextValue, 'branch');
});

test('context values carry what the menus need: archived, live, eligible, reviewed', () => {
  assert.equal(sessionContextValue(FAMILY[0]), 'session:active:finished:eligible');
  assert.equal(sessionContextValue(FAMILY[1]), 'session:active:finished:eligible:reviewed');
  assert.equal(sessionContextValue(FAMILY[3]), 'session:active:live');
  assert.equal(sessionContextValue(node('a', { archived: true })), 'session:archived:finished');
  // A subagent is reviewed as part of its parent: no Consolidate on its row.
  assert.equal(sessionContextValue(node('s', { kind: 'subagent' })), 'session:active:finished');
});

test('a review state unknown (the receipts cannot be read) is said so, with no Consolidate nor Show Receipt', () => {
  const unknown = node('u', { review: { state: 'unknown' }, createdAt: NOW - HOUR });
  // A review would be refused for the receipts it cannot read, and no receipt can be shown.
  assert.equal(sessionContextValue(unknown), 'session:active:finished');
  const item = sessionItem(new SessionForest([]), unknown, NOW);
  assert.equal(item.description, '1 h ago · ? review state unknown');
  assert.match(item.tooltip, /^Review: review state unknown$/m);
  assert.doesNotMatch(item.tooltip, /not consolidated/);
});

test('a review state this extension does not know (a newer daemon\'s) is unknown: neither reviewed nor offered', () => {
  const newer = node('n', { review: { state: 'superseded' } as never, createdAt: NOW - HOUR });
  assert.equal(sessionContextValue(newer), 'session:active:finished');
  const item = sessionItem(new SessionForest([]), newer, NOW);
  assert.equal(item.description, '1 h ago · ? review state unknown');
  assert.match(item.tooltip, /^Review: review state unknown$/m);
});

test('every review state has its own badge; a bare string state is read too', () => {
  const forest = new SessionForest([]);
  const badge = (review: (typeof FAMILY)[0]['review']) =>
    sessionItem(forest, node('x', { review, createdAt: NOW - HOUR }), NOW).description;
  assert.equal(badge({ state: 'failed', status: 'provider-failed' }), '1 h ago · ✗ consolidation failed');
  assert.equal(badge({ state: 'changed' }), '1 h ago · △ changed since consolidated');
  // The daemon counts a cancelled review as failed; the user chose it, so it is no failure.
  assert.equal(badge({ state: 'failed', status: 'cancelled' }), '1 h ago · ○ consolidation cancelled');
  const cancelled = node('x', { review: { state: 'failed', status: 'cancelled' } });
  assert.match(sessionItem(forest, cancelled, NOW).tooltip, /Review: consolidation cancelled$/m);
  assert.equal(badge('no-change'), '1 h ago · ✓ reviewed, no change');
  assert.equal(badge({ state: 'pending', status: 'running' }), '1 h ago · … consolidation pending');
  // A review killed under way: its receipt says running, but no run holds it.
  assert.equal(badge({ state: 'interrupted', status: 'running' }), '1 h ago · ⚠ consolidation interrupted');
  const stopped = node('x', { review: { state: 'interrupted', status: 'running' } });
  assert.match(sessionItem(forest, stopped, NOW).tooltip, /Review: consolidation interrupted: stopped without finishing; consolidate it again$/m);
});

test('markdown in titles cannot break the tooltip', () => {
  const item = sessionItem(new SessionForest([]), node('x', { title: 'fix *all* [links]' }), NOW);
  assert.match(item.tooltip, /^\*\*fix \\\*all\\\* \\\[links\\\]\*\*/);
});

test('sibling branches with the default title are told apart by their own first prompt', () => {
  const parent = node('p', { title: 'Fix the uploader' });
  const branch = (id: string, fields: Partial<typeof parent>) =>
    node(id, { kind: 'fork', parent: 'p', depth: 1, forkTurn: 2, title: 'Fix the uploader (1)', ...fields });
  const nodes = [
    parent,
    branch('a', { ownPrompt: 'Add a retry instead' }),
    branch('b', { ownPrompt: null }),
    branch('c', { title: 'Fix the uploader', forkTurn: 3 }),
    branch('d', { title: 'Try the queue', ownPrompt: 'ignored: it was named' }),
    branch('e', { title: 'Fix the uploader (2)', ownPrompt: null }),
  ];
  const forest = new SessionForest(nodes);
  assert.deepEqual(
    nodes.slice(1).map((n) => sessionItem(forest, n, NOW).label),
    [
      'After turn 2 · Add a retry instead',
      'After turn 2 · new branch (1)',
      'After turn 3 · new branch',
      'After turn 2 · Try the queue',
      'After turn 2 · new branch (2)',
    ],
  );
  assert.equal(sessionItem(forest, parent, NOW).label, 'Fix the uploader');
});

test('a renamed session’s branches keep their own names, not the parent’s old title', () => {
  const parent = node('p', { title: 'Uploader, take two' }); // was "Fix the uploader" at the forks
  const branch = (id: string, fields: Partial<typeof parent>) =>
    node(id, { kind: 'fork', parent: 'p', depth: 1, forkTurn: 2, defaultTitle: true, ...fields });
  const nodes = [
    parent,
    branch('a', { title: 'Fix the uploader', ownPrompt: 'Add a retry instead' }),
    branch('b', { title: 'Fix the uploader (2)', ownPrompt: 'Use a queue' }),
    branch('c', { title: 'Fix the uploader (3)', ownPrompt: null }),
    branch('d', { title: 'Plan (2)', defaultTitle: false, ownPrompt: 'ignored: a person named it' }),
  ];
  const forest = new SessionForest(nodes);
  assert.deepEqual(
    nodes.slice(1).map((n) => sessionItem(forest, n, NOW).label),
    ['After turn 2 · Add a retry instead', 'After turn 2 · Use a queue', 'After turn 2 · new branch (3)', 'After turn 2 · Plan (2)'],
  );
});

test('archived sessions are hidden unless asked for, and counted; their children stay shown', () => {
  const nodes = [node('p', { archived: true }), node('c', { kind: 'fork', forkTurn: 1, parent: 'p', depth: 1 }), node('q')];
  const hidden = visibleNodes(nodes, false);
  assert.deepEqual(
    hidden.nodes.map((n) => n.id),
    ['c', 'q'],
  );
  assert.equal(hidden.hidden, 1);
  assert.deepEqual(
    new SessionForest(hidden.nodes).roots().map((n) => n.id),
    ['c', 'q'],
  );
  assert.deepEqual(visibleNodes(nodes, true), { nodes, hidden: 0 });
});

test('a subagent written inside its session’s file sits under it and opens that transcript, no session menu', () => {
  const main = node('cc', { format: 'claude-code', createdAt: NOW - HOUR });
  const inline = node('cc@s1', {
    kind: 'subagent', format: 'claude-code', parent: 'cc', depth: 1, flags: ['inline'], createdAt: NOW - HOUR,
  }); // prettier-ignore
  const forest = new SessionForest([main, inline]);
  assert.deepEqual(forest.children('cc').map((n) => n.id), ['cc@s1']);
  const shown = sessionItem(forest, inline, NOW);
  assert.equal(shown.description, 'Claude Code · subagent · 1 h ago');
  assert.equal(shown.icon.id, 'hubot');
  assert.equal(shown.contextValue, 'inline-subagent');
  assert.match(shown.tooltip, /inside its session’s file/);
  assert.equal(inParentTranscript(inline) && !inParentTranscript(main), true);
});

test('problems a reader found in a session’s file show as a badge and in the tooltip', () => {
  const forest = new SessionForest([node('cc', { format: 'claude-code', problems: 3, createdAt: NOW - HOUR })]);
  const shown = sessionItem(forest, forest.get('cc')!, NOW);
  assert.equal(shown.description, 'Claude Code · 1 h ago · ⚠ 3 problems');
  assert.match(shown.tooltip, /Problems: 3 problems in its file/);
  const one = node('one', { problems: 1, createdAt: NOW - HOUR });
  assert.match(sessionItem(new SessionForest([one]), one, NOW).description, /⚠ 1 problem$/);
  assert.doesNotMatch(sessionItem(forest, node('ok', { createdAt: NOW - HOUR }), NOW).description, /problem/);
});
