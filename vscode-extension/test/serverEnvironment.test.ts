import './clientHarness';

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';

import { RememClient } from '../src/client';
import { ui } from './clientHarness';

const log = { info: () => undefined, warn: () => undefined, error: () => undefined };

test("the server gets the editor's environment but REMEM_NO_DAEMON, the CLI's switch a login shell may export", async (t) => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'remem-env-'));
  const executable = path.join(folder, 'remem');
  fs.writeFileSync(executable, '#!/bin/sh\necho "${REMEM_NO_DAEMON-unset}|$REMEM_HOME"\n', { mode: 0o755 });
  const editor = { ...process.env };
  process.env.REMEM_NO_DAEMON = '1';
  process.env.REMEM_HOME = '/a/home';
  ui.setting = executable;
  t.after(() => {
    process.env = editor;
    fs.rmSync(folder, { recursive: true });
  });
  await new RememClient(log as never).start();
  const server = await ui.spawn!();
  let said = '';
  server.stdout?.on('data', (chunk: Buffer) => (said += chunk.toString()));
  await new Promise((resolve) => server.once('exit', resolve));
  assert.equal(said, 'unset|/a/home\n'); // a server that got it would turn the daemon's features off
  assert.equal(process.env.REMEM_NO_DAEMON, '1'); // the extension host's own is left as it is
});
