import assert from 'node:assert/strict';
import { test } from 'node:test';

import { fileTarget, sessionIdFromTranscriptPath, sessionTarget, transcriptUri } from '../src/args';
import { node } from './fixtures';

test('a tree element, an object, a bare id and a transcript URI all name a session', () => {
  assert.deepEqual(sessionTarget({ type: 'session', cwd: '/p', node: node('s1') }), { session: 's1', cwd: '/p' });
  assert.deepEqual(sessionTarget({ session: 's2', turn: 3 }), { session: 's2', turn: 3 });
  assert.deepEqual(sessionTarget('s3'), { session: 's3' });
  assert.deepEqual(sessionTarget({ scheme: 'remem-session', path: '/session-abc.md' }), { session: 'session-abc' });
});

test('nothing usable means nothing chosen: the command asks instead', () => {
  assert.deepEqual(sessionTarget(undefined), {});
  assert.deepEqual(sessionTarget(''), {});
  assert.deepEqual(sessionTarget({ session: 42, turn: -1 }), {});
  assert.deepEqual(sessionTarget({ turn: 1.5 }), {});
  assert.deepEqual(sessionTarget({ scheme: 'file', path: '/x.md' }), {});
  assert.deepEqual(sessionTarget({ scheme: 'remem-session', path: '/no-suffix' }), {});
});

test('transcript URIs encode the id and read back to it', () => {
  assert.equal(transcriptUri('session-a b'), 'remem-session:/session-a%20b.md');
  // VS Code hands the provider the decoded path.
  assert.equal(sessionIdFromTranscriptPath('/session-a b.md'), 'session-a b');
});

test('a receipt is named by the Memory item it was opened from, or by review id', () => {
  assert.deepEqual(fileTarget({ type: 'memory', cwd: '/p', node: { path: '/h/r.json' } }), { path: '/h/r.json' });
  assert.deepEqual(fileTarget({ review: 'r9' }), { review: 'r9' });
  assert.deepEqual(fileTarget('r9'), {});
});
