import './clientHarness';

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { RememClient } from '../src/client';
import { ui } from './clientHarness';

const log = { info: () => undefined, warn: () => undefined, error: () => undefined };

test('the server\'s code action consolidates through the extension\'s flow, not straight to the server', async () => {
  ui.server.requests.length = 0;
  const client = new RememClient(log as never);
  await client.start();
  const flowed: object[] = [];
  client.consolidateThrough(async (arg) => {
    flowed.push(arg);
  });
  const passed: string[] = [];
  const next = (command: string) => {
    passed.push(command);
    return undefined;
  };
  const middleware = ui.options?.middleware;
  assert.ok(middleware);
  // The Memory file's source action: "Consolidate the latest session of <workspace>".
  await middleware.executeCommand('remem.lsp.consolidate', [{ cwd: '/proj' }], next);
  assert.deepEqual(flowed, [{ cwd: '/proj' }]);
  assert.deepEqual(ui.server.requests, [], 'nothing sent before the flow checked the route');
  assert.deepEqual(passed, []);
  // The server's other commands go on as they came.
  await middleware.executeCommand('remem.lsp.regenerateIndex', [{ cwd: '/proj' }], next);
  assert.deepEqual(passed, ['remem.lsp.regenerateIndex']);
  assert.deepEqual(flowed, [{ cwd: '/proj' }]);
});

test('the flow\'s own consolidation runs the command under the progress notification, not the flow again', async () => {
  ui.server.requests.length = 0;
  const client = new RememClient(log as never);
  await client.start();
  let flows = 0;
  client.consolidateThrough(async () => flows++);
  const running = client.command('remem.lsp.consolidate', { cwd: '/proj' });
  await new Promise((resolve) => setTimeout(resolve, 0));
  const [request] = ui.server.requests;
  assert.equal(request.method, 'workspace/executeCommand');
  const params = request.params as { command: string; arguments: object[]; workDoneToken: string };
  assert.deepEqual(params.arguments, [{ cwd: '/proj', announce: false }]);
  assert.ok(params.workDoneToken);
  ui.server.answer({ review: 'r', status: 'no-change', changes: 0, message: 'm', changed: [], history: null });
  await running;
  assert.equal(flows, 0);
});

test('a server command the library runs for a quick fix shows its failure, not only the log', async () => {
  const logged: string[] = [];
  const client = new RememClient({ ...log, error: (line: string) => logged.push(line) } as never);
  await client.start();
  const middleware = ui.options?.middleware;
  assert.ok(middleware);
  ui.errors.length = 0;
  const failing = () => Promise.reject(new Error('the remem daemon is unavailable: it stopped'));
  await assert.rejects(Promise.resolve(middleware.executeCommand('remem.lsp.regenerateIndex', [{ cwd: '/proj' }], failing)));
  // Run with no code action of the server's offering it (another extension's call): no title known.
  assert.deepEqual(ui.errors, ['Remem: the action failed: the remem daemon is unavailable: it stopped']);
  assert.deepEqual(logged, ['remem.lsp.regenerateIndex failed: the remem daemon is unavailable: it stopped']); // for a report
  // The quick fix the server offered, clicked: named by its title, by no id of the server's.
  const title = 'Regenerate MEMORY.md from the saved records (through the remem daemon)';
  const offered = [{ title, command: { title, command: 'remem.lsp.regenerateIndex' } }, { title: 'Replace with what the records render to' }];
  assert.deepEqual(await middleware.provideCodeActions?.({}, {}, {}, {}, async () => offered), offered);
  ui.errors.length = 0;
  await assert.rejects(Promise.resolve(middleware.executeCommand('remem.lsp.regenerateIndex', [{ cwd: '/proj' }], failing)));
  assert.deepEqual(ui.errors, [`Remem: “${title}” failed: the remem daemon is unavailable: it stopped`]);
});

test('a quick fix run while the server is down says to restart it, not the library\'s words', async () => {
  const client = new RememClient(log as never);
  await client.start();
  const middleware = ui.options?.middleware;
  assert.ok(middleware);
  ui.errors.length = 0;
  ui.buttons.length = 0;
  const inactive = () => Promise.reject(Object.assign(new Error('Client is not running'), { code: -32096 }));
  await assert.rejects(Promise.resolve(middleware.executeCommand('remem.lsp.regenerateIndex', [{ cwd: '/proj' }], inactive)));
  assert.deepEqual(ui.errors, ['remem: the language server is not running. Run "Remem: Restart Server".']);
  assert.deepEqual(ui.buttons, [['Restart Server', 'Show Log']]);
});
