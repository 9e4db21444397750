import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { SessionTreeResult } from '../src/protocol';
import { FolderSessions, relabelled } from '../src/sessionsState';
import { Kept, node } from './fixtures';

const settle = () => new Promise((resolve) => setImmediate(resolve));

/** One folder's sessions as Session Branches follows them: each answer's relabels, as the view
 * reports them. `answer` is what the server answers next (an Error is a failed answer). */
function followed(kept = new Kept()) {
  let answer: SessionTreeResult | Error = { nodes: [] };
  let labels = new Map<string, string>();
  const relabels: Array<Record<string, string>> = [];
  const ask = async (): Promise<SessionTreeResult> => {
    if (answer instanceof Error) throw answer;
    return answer;
  };
  const state = new FolderSessions(
    kept,
    ask,
    () => {
      const now = state.labels();
      const changed = relabelled(labels, now);
      labels = now;
      if (changed.size) relabels.push(Object.fromEntries(changed));
    },
    String,
  );
  const next = async (result: SessionTreeResult | Error, first = false): Promise<void> => {
    answer = result;
    if (first) state.shown('/proj');
    else state.refresh();
    await settle();
  };
  return { next, relabels };
}

test("a single folder's first answer relabels its sessions: their tabs may be older than the tree", async () => {
  const tree = followed();
  await tree.next({ nodes: [node('s1', { title: 'Renamed in the CLI' })] }, true);
  assert.deepEqual(tree.relabels, [{ s1: 'Renamed in the CLI' }]);
});

test("a window that starts from the kept tree relabels on the server's first answer", async () => {
  const kept = new Kept();
  kept.values.set('remem.sessionTree:/proj', { nodes: [node('s1', { title: 'Old' })] });
  const tree = followed(kept);
  await tree.next({ nodes: [node('s1', { title: 'New' })] }, true);
  assert.deepEqual(tree.relabels, [{ s1: 'New' }]);
});

test('a rename made while the answer was an error is relabelled by the next good answer', async () => {
  const tree = followed();
  await tree.next({ nodes: [node('s1', { title: 'Old' })] }, true);
  await tree.next(new Error('the remem daemon is unavailable'));
  await tree.next({ nodes: [node('s1', { title: 'New' })] });
  assert.deepEqual(tree.relabels, [{ s1: 'Old' }, { s1: 'New' }]);
});

test('an answer that names every session as before relabels none', () => {
  const labels = new Map([
    ['s1', 'Old'],
    ['s2', 'Other'],
  ]);
  assert.deepEqual(relabelled(labels, new Map(labels)), new Map());
  assert.deepEqual(relabelled(labels, new Map([...labels, ['s2', 'Renamed']])), new Map([['s2', 'Renamed']]));
});
