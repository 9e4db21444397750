import './clientHarness'; // the `vscode` module the receipt view imports

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ReceiptPanels } from '../src/receipts';
import { ui } from './clientHarness';

test('a receipt opened twice while it is read gets one tab; opened again later, it is read again', async () => {
  const asked: string[] = [];
  const server = {
    request: async <R>(_method: string, params: object): Promise<R> => {
      asked.push((params as { review: string }).review);
      await new Promise((resolve) => setTimeout(resolve, 5)); // the server takes a while
      return { review: 'r1', session: 's1', title: 'Fix the uploader', summary: '# Receipt' } as R;
    },
    command: async <R>(): Promise<R> => undefined as R,
  };
  const receipts = new ReceiptPanels(server);
  await Promise.all([receipts.show('r1'), receipts.show('r1')]); // a double click
  assert.equal(ui.panels.length, 1);
  assert.equal(ui.panels[0].title, 'Receipt: Fix the uploader');
  assert.deepEqual(asked, ['r1']);
  await receipts.show('r1');
  assert.equal(ui.panels.length, 1); // the same tab, revealed
  assert.deepEqual(asked, ['r1', 'r1']);
});
