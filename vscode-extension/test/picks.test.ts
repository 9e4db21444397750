import assert from 'node:assert/strict';
import { test } from 'node:test';

import { actorText, consolidationPicks, iconless, providerPicks, receiptPicks, sessionPicks, transcriptPicks, turnPicks } from '../src/picks';
import { FAMILY, HOUR, NOW, node } from './fixtures';

test('consolidation offers only finished, unarchived sessions that are no subagent, newest first, with age and review state', () => {
  const nodes = [...FAMILY, node('old-archived', { archived: true, createdAt: NOW - HOUR / 2 })];
  const picks = consolidationPicks(nodes, NOW);
  assert.deepEqual(
    picks.map((p) => p.session),
    ['session-fork', 'session-main'], // the subagent `helper` is reviewed with its parent
  );
  assert.equal(picks[0].label, 'After turn 2 · Title of session-fork');
  assert.equal(picks[0].description, '2 h ago · consolidated');
  assert.equal(picks[0].detail, 'branch from turn 2 · session-fork');
  assert.equal(picks[1].description, '5 h ago · not consolidated yet');
});

test('a session whose review state is unknown is not offered for consolidation, and is said unknown, not unconsolidated', () => {
  const unknown = node('u', { review: { state: 'unknown' }, createdAt: NOW - HOUR });
  assert.deepEqual(consolidationPicks([unknown], NOW), []);
  assert.equal(sessionPicks([unknown], NOW)[0].description, '1 h ago · review state unknown');
});

test('every session can be picked for transcripts and branching; live and archived are said', () => {
  const picks = sessionPicks([...FAMILY, node('arch', { archived: true, createdAt: NOW })], NOW);
  assert.deepEqual(
    picks.map((p) => p.session),
    ['arch', 'session-fork', 'session-lost', 'helper', 'session-main'],
  );
  assert.equal(picks[0].description, 'just now · not consolidated yet · archived');
  assert.equal(picks[2].description, '3 h ago · not consolidated yet · live');
});

/** A Claude Code 1.0 session with a subagent written inside its file and a path it left (a
 * rewind), as the daemon answers them: ids of the form `<session>@<uuid>`. */
const IN_FILE = [
  node('cc', { format: 'claude-code', createdAt: NOW - 3 * HOUR }),
  node('cc@ys1', { kind: 'subagent', flags: ['inline'], parent: 'cc', depth: 1, title: 'find the tests', createdAt: NOW - HOUR }),
  node('cc@a3', { kind: 'branch', forkTurn: 2, parent: 'cc', depth: 1, title: 'and again', createdAt: NOW - 2 * HOUR }),
];

test('a row inside its session\'s file is no session of its own: no picker that acts by id offers it', () => {
  assert.deepEqual(
    sessionPicks(IN_FILE, NOW).map((p) => p.session),
    ['cc'],
  );
  assert.deepEqual(
    consolidationPicks(IN_FILE, NOW).map((p) => p.session),
    ['cc'],
  );
});

test('its transcript is its session\'s: picking it opens that one, named as the session\'s row', () => {
  const picks = transcriptPicks([...IN_FILE, node('other', { createdAt: NOW })], NOW);
  assert.deepEqual(
    picks.map((p) => [p.label, p.session, p.title]),
    [
      ['Title of other', 'other', undefined],
      ['find the tests', 'cc', 'Title of cc'],
      ['and again', 'cc', 'Title of cc'],
      ['Title of cc', 'cc', undefined],
    ],
  );
  assert.equal(picks[1].detail, 'subagent written inside its session’s file · in the transcript of “Title of cc”');
  assert.equal(picks[2].detail, 'abandoned after turn 2 · in the transcript of “Title of cc”');
  // Without its session in the list there is nothing to open.
  assert.deepEqual(
    transcriptPicks(IN_FILE.slice(1), NOW).map((p) => p.session),
    [],
  );
});

test('only completed turns can be branched after, latest first, with the prompt shortened', () => {
  const long = 'word '.repeat(60);
  const picks = turnPicks([
    { turn: 1, startSeq: 0, endSeq: 9, status: 'completed', user: 'first\n  prompt', forkable: true },
    { turn: 2, startSeq: 10, endSeq: 19, status: 'aborted', user: long, forkable: true },
    { turn: 3, startSeq: 20, endSeq: null, status: 'open', user: 'still going', forkable: false },
  ]);
  assert.deepEqual(
    picks.map((p) => p.turn),
    [2, 1],
  );
  assert.equal(picks[1].detail, 'first prompt');
  assert.equal(picks[0].detail?.length, 120);
  assert.ok(picks[0].detail?.endsWith('…'));
  assert.equal(picks[0].description, 'aborted');
});

test('receipts are labelled by session title, falling back to the session id', () => {
  const picks = receiptPicks(
    [
      {
        review: 'r1',
        status: 'committed',
        session: 'session-12345678-aaaa',
        title: null,
        changes: 1,
        updatedAt: new Date(NOW - 2 * HOUR).toISOString(),
        path: '/h/r1.json',
      },
    ],
    NOW,
  );
  assert.deepEqual(picks, [
    {
      label: 'Session 12345678',
      description: 'committed · 1 change · 2 h ago',
      detail: 'review r1',
      review: 'r1',
      title: null,
    },
  ]);
});

test('the current provider comes first and is marked with its model', () => {
  const picks = providerPicks({
    provider: 'openai',
    model: 'gpt-x',
    providers: ['deepseek', 'openai', 'ollama'],
    apiKeyEnv: 'OPENAI_API_KEY',
    revision: 'r',
    keyReady: true,
    keyProblem: null,
    settingsFile: '/h/settings.yml',
  });
  assert.deepEqual(
    picks.map((p) => [p.provider, p.description]),
    [
      ['openai', 'current · gpt-x'],
      ['deepseek', undefined],
      ['ollama', undefined],
    ],
  );
});

test('a current provider without a chosen model says so, never "null" (decision 0493)', () => {
  const picks = providerPicks({
    provider: 'anthropic',
    model: null,
    providers: ['anthropic', 'deepseek'],
    apiKeyEnv: 'ANTHROPIC_API_KEY',
    revision: 'r',
    keyReady: false,
    keyProblem: 'anthropic has no default model: choose one',
    settingsFile: '/h/settings.yml',
  });
  assert.equal(picks[0].description, 'current · no model chosen');
});

test('a revert names the entry it went back to, or the empty state before the first', () => {
  const revert = (reverts: string | null) => ({
    id: 'b'.repeat(40),
    parent: 'a'.repeat(40),
    scope: 'workspace' as const,
    workspace: 'k',
    actor: { kind: 'revert' as const, reverts },
    before: 'sha256:b',
    after: 'sha256:a',
    at: new Date(NOW).toISOString(),
    stat: null,
  });
  assert.equal(actorText(revert('c'.repeat(40))), `Revert (back to ${'c'.repeat(12)})`);
  assert.equal(actorText(revert(null)), 'Revert (back to before the first entry)');
});

test('a quick pick shows `$(…)` in a title or prompt as written, not as an icon', () => {
  const item = { label: 'run $(date) now', description: '$(zap)', detail: 'a $(x) b $(y)', session: 's' };
  assert.deepEqual(iconless(item), {
    label: 'run \\$(date) now',
    description: '\\$(zap)',
    detail: 'a \\$(x) b \\$(y)',
    session: 's',
  });
  assert.deepEqual(iconless({ label: 'plain' }), { label: 'plain', description: undefined, detail: undefined });
});
