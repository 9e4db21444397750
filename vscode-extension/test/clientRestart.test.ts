import './clientHarness';

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { RememClient } from '../src/client';
import { State, ui } from './clientHarness';

test('a server the library restarted after it died makes the views read again; the first start does not', async () => {
  const log = { info: () => undefined, warn: () => undefined, error: () => undefined };
  const client = new RememClient(log as never);
  let trees = 0;
  let memories = 0;
  client.onTreeChanged(() => trees++);
  client.onMemoryChanged(() => memories++);
  await client.start();
  const changed = ui.states[ui.states.length - 1];
  changed({ newState: State.Starting });
  changed({ newState: State.Running });
  assert.deepEqual([trees, memories], [0, 0]); // the views ask at once and wait for the start
  changed({ newState: State.Starting }); // the server died and the library starts a new one
  changed({ newState: State.Running });
  assert.deepEqual([trees, memories], [1, 1]);
});
