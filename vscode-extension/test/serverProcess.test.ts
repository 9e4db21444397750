import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type TestContext, test } from 'node:test';

import { endProcess, spawnServer } from '../src/serverProcess';

function scratch(t: TestContext): string {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'remem-ext-'));
  t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
  return folder;
}

function script(folder: string, name: string, body: string): string {
  const file = path.join(folder, name);
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

async function output(server: ChildProcess): Promise<string> {
  let text = '';
  server.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString()));
  await new Promise((resolve) => server.once('exit', resolve));
  return text;
}

test('the server is `<executable> lsp`, run in the folder with the given environment', async (t) => {
  const folder = scratch(t);
  const executable = script(folder, 'remem', 'echo "$@|$(pwd)|$REMEM_HOME"');
  const server = await spawnServer(executable, folder, { ...process.env, REMEM_HOME: '/a/home' });
  assert.equal(await output(server), `lsp|${fs.realpathSync(folder)}|/a/home\n`);
});

test('an executable that cannot be run is refused with its name', async (t) => {
  const folder = scratch(t);
  const missing = path.join(folder, 'gone', 'remem');
  await assert.rejects(spawnServer(missing, folder, process.env), (error: Error) => {
    assert.match(error.message, /cannot run ".*gone\/remem lsp": .*ENOENT/);
    return true;
  });
});

test('a server that does not exit after a stop is killed; one that exits is left alone', async (t) => {
  const folder = scratch(t);
  const stubborn = await spawnServer(script(folder, 'stubborn', 'exec sleep 60'), folder, process.env);
  await endProcess(stubborn, 50);
  assert.equal(stubborn.signalCode, 'SIGKILL');

  const quick = await spawnServer(script(folder, 'quick', 'exit 0'), folder, process.env);
  await output(quick);
  await endProcess(quick, 50);
  assert.equal(quick.exitCode, 0);
  assert.equal(quick.signalCode, null);
});
