import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  fileTarget,
  keyedRow,
  receiptTabTitle,
  sessionIdFromTranscriptPath,
  sessionTarget,
  transcriptHeading,
  transcriptUri,
  turnLine,
} from '../src/args';
import { node } from './fixtures';

test('a tree element, an object, a bare id and a transcript URI all name a session', () => {
  assert.deepEqual(sessionTarget({ type: 'session', cwd: '/p', node: node('s1') }), { session: 's1', cwd: '/p' });
  assert.deepEqual(sessionTarget({ session: 's2', turn: 3 }), { session: 's2', turn: 3 });
  const lens = { session: 's2', turn: 3, expectedRevision: 'r1' }; // a transcript's branch lens
  assert.deepEqual(sessionTarget(lens), lens);
  assert.deepEqual(sessionTarget('s3'), { session: 's3' });
  // A workspace folder's row names no session, but its folder: a command asks only for the session.
  assert.deepEqual(sessionTarget({ type: 'folder', folder: { name: 'b', cwd: '/b' } }), { cwd: '/b' });
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

test('transcript URIs encode the id and read back to it; a title names the tab, never the id alone', () => {
  assert.equal(transcriptUri('session-a b'), 'remem-session:/session-a%20b.md');
  assert.equal(transcriptUri('s1', 'Fix a/b\nnow'), 'remem-session:/s1/Fix%20a%20b%20now.md');
  assert.equal(transcriptUri('s1', 'x'.repeat(70)), `remem-session:/s1/${'x'.repeat(59)}%E2%80%A6.md`);
  // Cut by characters, as the server cuts it: an emoji across the cut stays whole.
  const rocket = `${'a'.repeat(58)}🚀 and more`;
  assert.equal(transcriptUri('s1', rocket), `remem-session:/s1/${'a'.repeat(58)}%F0%9F%9A%80%E2%80%A6.md`);
  // VS Code hands the provider the decoded path.
  assert.equal(sessionIdFromTranscriptPath('/session-a b.md'), 'session-a b');
  assert.equal(sessionIdFromTranscriptPath('/s1/After turn 2 · Fix it.md'), 's1');
  assert.deepEqual(sessionTarget({ type: 'session', cwd: '/p', node: node('s1'), label: 'Fix it' }), {
    session: 's1',
    cwd: '/p',
    label: 'Fix it',
  });
});

test('a transcript is headed by the name its tab shows, in full when the tree gave that name', () => {
  const long = `After turn 2 · ${'Retry the upload with backoff and jitter '.repeat(2)}`;
  const path = (title: string) => decodeURIComponent(transcriptUri('s1', title).replace('remem-session:', ''));
  assert.equal(transcriptHeading(path('After turn 2 of Fix it'), 'After turn 2 · new branch (1)'), 'After turn 2 of Fix it');
  assert.equal(transcriptHeading(path(long), long), long); // the tab cuts it; the heading does not
  assert.equal(transcriptHeading(path(long), undefined), `${long.slice(0, 59)}…`);
  assert.equal(transcriptHeading('/s1.md', 'Fix it'), undefined); // no name: the server's title
});

test('a receipt is named by the Memory item it was opened from, or by review id', () => {
  assert.deepEqual(fileTarget({ type: 'memory', cwd: '/p', node: { path: '/h/r.json' } }), { path: '/h/r.json' });
  assert.deepEqual(fileTarget({ review: 'r9' }), { review: 'r9' });
  assert.deepEqual(fileTarget('r9'), {});
});

test('receipt tabs are named by the session title, flattened', () => {
  assert.equal(receiptTabTitle('Fix a/b'), 'Receipt: Fix a b');
  assert.equal(receiptTabTitle(), 'Receipt');
});

test('a turn is found by its heading in a transcript', () => {
  const markdown = '# T\n\n## Turn 1 — completed — x\nhi\r\n## Turn 12 — aborted — y\n';
  assert.equal(turnLine(markdown, 1), 2);
  assert.equal(turnLine(markdown, 12), 4);
  assert.equal(turnLine(markdown, 2), -1);
});

test('a key acts on the selected row, else the last one selected, but never on a folder removed since', () => {
  const key = { selected: true };
  const inA = { type: 'session', cwd: '/a', node: node('s1') };
  const inB = { type: 'session', cwd: '/b', node: node('s2') };
  const folderB = { type: 'folder', folder: { name: 'b', cwd: '/b' } };
  const both = [{ cwd: '/a' }, { cwd: '/b' }];
  assert.equal(keyedRow(key, [inA], inB, both), inA);
  // A refresh has emptied the selection: the last row selected stands in.
  assert.equal(keyedRow(key, [], inB, both), inB);
  assert.equal(keyedRow(key, [], folderB, both), folderB);
  // From two folders to one: a row of the folder removed is acted on no more; the command asks.
  assert.equal(keyedRow(key, [], inB, [{ cwd: '/a' }]), undefined);
  assert.equal(keyedRow(key, [], folderB, [{ cwd: '/a' }]), undefined);
  assert.equal(keyedRow(key, [], inA, [{ cwd: '/a' }]), inA);
  // A menu's or a caller's argument is the row itself.
  assert.equal(keyedRow(inB, [inA], undefined, [{ cwd: '/a' }]), inB);
});
