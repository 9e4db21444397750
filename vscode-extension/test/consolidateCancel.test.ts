import './clientHarness';

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { RememClient } from '../src/client';
import type { ConsolidationOutcome } from '../src/protocol';
import { ui } from './clientHarness';

const REQUEST_CANCELLED = -32800;
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

function outcome(status: string, changes: number): ConsolidationOutcome {
  const message = status === 'committed' ? 'Consolidated “s”: 1 change to memory.' : 'Consolidation of “s” cancelled: 0 changes to memory.';
  return { review: 'r', status, changes, receipt: '/r.md', title: 's', message, alreadyReviewed: false, changed: [], history: null };
}

/** A consolidation from the palette, cancelled by the user: what the client sent, and told. */
async function cancelled(answer: () => void) {
  ui.infos.length = 0;
  ui.server.requests.length = ui.server.notifications.length = 0;
  const log = { info: () => undefined, warn: () => undefined, error: () => undefined };
  const client = new RememClient(log as never);
  await client.start();
  const told: ConsolidationOutcome[] = [];
  client.onConsolidated((o) => told.push(o));
  const running = client.command('remem.lsp.consolidate', { session: 's' });
  await settle();
  ui.cancels[ui.cancels.length - 1].press();
  await settle();
  answer();
  const result = await running.then((value) => ({ value }), (error: unknown) => ({ error }));
  const [request] = ui.server.requests;
  return { result, told, request, notifications: ui.server.notifications };
}

test('Cancel asks the run to stop, and a commit already under way is told as committed', async () => {
  const committed = outcome('committed', 1);
  const { result, told, request, notifications } = await cancelled(() => ui.server.answer(committed));
  const token = (request.params as { workDoneToken: string }).workDoneToken;
  assert.equal(request.token, undefined); // the request is not cancelled: its answer says what happened
  assert.deepEqual(notifications.map((n) => [n.method, n.params]), [['window/workDoneProgress/cancel', { token }]]);
  assert.deepEqual(told, [committed]);
  assert.deepEqual(result, { value: committed });
  assert.deepEqual(ui.infos, []); // never "memory is unchanged"
});

test('a run the cancel stopped is told by its own outcome, with its receipt', async () => {
  const stopped = outcome('cancelled', 0);
  const { told, notifications } = await cancelled(() => ui.server.answer(stopped));
  assert.equal(notifications.length, 1);
  assert.deepEqual(told, [stopped]);
  assert.deepEqual(ui.infos, []);
});

test('only RequestCancelled reads as "memory is unchanged"; any other error is the error', async () => {
  const early = await cancelled(() => ui.server.fail(REQUEST_CANCELLED, 'cancelled before it began'));
  assert.deepEqual(early.told, []);
  assert.deepEqual(ui.infos, ['Remem: consolidation cancelled; memory is unchanged.']);
  const broken = await cancelled(() => ui.server.fail(-32020, 'the remem daemon stopped while answering; it may or may not have been done'));
  assert.match(String((broken.result as { error: unknown }).error), /may or may not have been done/);
  assert.deepEqual(ui.infos, []);
});
