import './clientHarness';

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';

import { RememClient } from '../src/client';
import { fixesOf, OPEN_COMMAND_SETTING, RESTART_SERVER, SHOW_LOG } from '../src/fixes';
import { PROTOCOL } from '../src/protocol';
import { ScriptedServer, State, ui } from './clientHarness';

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

const log = { info: () => undefined, warn: () => undefined, error: () => undefined };
const CONNECTION_INACTIVE = -32096; // the library's "Client is not running"
const PENDING_RESPONSE_REJECTED = -32097; // its "Pending response rejected since connection got disposed"
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

test('a server the library restarted after it died says so before the views read again: what they found above is asked again', async () => {
  const client = new RememClient(log as never);
  const heard: string[] = [];
  client.onRunningAgain(() => heard.push('running again'));
  client.onTreeChanged(() => heard.push('tree changed'));
  await client.start();
  const changed = ui.states[ui.states.length - 1];
  changed({ newState: State.Starting });
  changed({ newState: State.Running });
  assert.deepEqual(heard, []); // the first start
  changed({ newState: State.Stopped }); // the server died
  changed({ newState: State.Starting });
  changed({ newState: State.Running });
  assert.deepEqual(heard, ['running again', 'tree changed']);
});

/** A client restarted (as "Remem: Restart Server" and a change of `remem.command` do) with `setting`. */
async function restartedWith(setting: unknown): Promise<RememClient> {
  ui.setting = setting;
  ui.errors.length = 0;
  const client = new RememClient(log as never);
  await client.restart(); // resolves: the caller goes on to read the views again
  return client;
}

test('a restart with a missing executable says so once and leaves the views to show why', async () => {
  const client = await restartedWith('/nowhere/remem');
  assert.equal(ui.errors.length, 1); // the message with its fixes, never the same text again as an error
  assert.match(ui.errors[0], /"\/nowhere\/remem" was not found: nothing is there\./);
  assert.equal(client.currentStatus.state, 'no-server');
  await assert.rejects(client.request('remem/sessionTree', { cwd: '/p' }), /"\/nowhere\/remem" was not found/);
});

test('what a setting that runs nothing names: the editor\'s PATH, the file it names, or nothing at all', async (t) => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'remem-command-'));
  fs.mkdirSync(path.join(folder, 'bin'));
  ui.folders = [{ uri: { scheme: 'file', fsPath: folder } }];
  t.after(() => {
    ui.folders = undefined;
    fs.rmSync(folder, { recursive: true });
  });
  const said = async (setting: string): Promise<string> => {
    await restartedWith(setting);
    assert.equal(ui.errors.length, 1);
    return ui.errors[0];
  };
  const setThePath = /Set "remem\.command" to the full path of the remem executable/;
  // A bare name is looked up on the PATH the editor started with, which may lack a terminal's;
  // remem may not be installed at all: how to is said.
  const bare = await said('remem-not-installed');
  assert.match(bare, /"remem-not-installed" was not found on the editor's PATH \(the one it was started with/);
  assert.match(bare, /Install remem: "bash scripts\/setup" in a checkout of remem puts it in the checkout's \.venv\/bin; then set "remem\.command" to its full path/);
  // A folder exists: it is not the executable, and is not said to be missing.
  const bin = await said(path.join(folder, 'bin'));
  assert.match(bin, /bin" is not a file \(a folder\?\): name the executable itself/);
  assert.match(bin, setThePath);
  // A file without its execute permission, named as it was resolved, from the workspace folder.
  fs.writeFileSync(path.join(folder, 'bin', 'remem'), '#!/bin/sh\n', { mode: 0o644 });
  const plain = await said('bin/remem');
  assert.ok(plain.includes(`"bin/remem" (${path.join(folder, 'bin', 'remem')}) is a file without execute permission`), plain);
  assert.match(plain, setThePath);
  // Nothing there.
  assert.ok((await said('bin/nothing')).includes(`"bin/nothing" (${path.join(folder, 'bin', 'nothing')}) was not found: nothing is there.`));
  assert.match(await said('  '), /"remem\.command" is empty\./);
});

test('a path that cannot be looked at says why, not that nothing is there; a file on PATH that cannot run says so', async (t) => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'remem-command-'));
  const plainBin = path.join(folder, 'plain-bin');
  fs.mkdirSync(plainBin);
  fs.writeFileSync(path.join(plainBin, 'remem-plain'), '#!/bin/sh\n', { mode: 0o644 });
  fs.symlinkSync('loop', path.join(folder, 'loop')); // stat fails with ELOOP, also as root (EACCES would not)
  const editorPath = process.env.PATH;
  process.env.PATH = `${plainBin}${path.delimiter}${editorPath}`;
  t.after(() => {
    process.env.PATH = editorPath;
    fs.rmSync(folder, { recursive: true });
  });
  await restartedWith(path.join(folder, 'loop', 'remem'));
  assert.equal(ui.errors.length, 1);
  assert.ok(ui.errors[0].includes(`"${path.join(folder, 'loop', 'remem')}" cannot be reached (ELOOP: too many symbolic links encountered).`), ui.errors[0]);
  await restartedWith('remem-plain');
  assert.equal(ui.errors.length, 1);
  const plain = `"remem-plain" (${path.join(plainBin, 'remem-plain')}) is a file without execute permission`;
  assert.ok(ui.errors[0].includes(plain), ui.errors[0]);
});

test('a missing executable is said with Open Settings and Show Log, and its error names them for the views', async () => {
  ui.buttons.length = 0;
  ui.executed.length = 0;
  ui.choose = (buttons) => buttons[0];
  let client: RememClient;
  try {
    client = await restartedWith('/nowhere/remem');
    await settle();
  } finally {
    ui.choose = () => undefined;
  }
  assert.deepEqual(ui.buttons, [['Open Settings', 'Show Log']]);
  assert.deepEqual(ui.executed, [['workbench.action.openSettings', 'remem.command']]); // at the setting
  const error = await client.request('remem/sessionTree', { cwd: '/p' }).catch((e: unknown) => e);
  assert.deepEqual(fixesOf(error), [OPEN_COMMAND_SETTING, SHOW_LOG]); // a view's error row opens the setting
});

test('a request made while a restart stops the old server waits for the new one', async (t) => {
  const client = await restartedWith(process.execPath);
  const server = ui.server;
  ui.server = new ScriptedServer();
  t.after(() => {
    ui.server = server;
  });
  let stopped: () => void = () => undefined;
  const old = (client as unknown as { client: { stop: () => Promise<void> } }).client;
  old.stop = () => new Promise<void>((resolve) => (stopped = resolve)); // a real stop takes up to 2 s
  const restarting = client.restart(); // "Remem: Restart Server", or remem.command changed
  const asked = client.request('remem/sessionTree', { cwd: '/p' });
  await settle();
  assert.equal(ui.server.requests.length, 0, 'not sent to the server being stopped');
  stopped();
  await restarting;
  await settle();
  assert.deepEqual(ui.server.requests.map((r) => r.params), [{ cwd: '/p' }], 'sent to the new server');
  ui.server.answer({ nodes: [] });
  assert.deepEqual(await asked, { nodes: [] }); // never "not running. Run Remem: Restart Server"
});

test('a remem.command that is not a string is said to be one, as a missing executable is', async () => {
  for (const setting of [['remem', 'lsp'], 3]) {
    const client = await restartedWith(setting);
    assert.equal(client.currentStatus.state, 'no-server'); // never a spinner left spinning
    assert.equal(ui.errors.length, 1);
    assert.match(ui.errors[0], /"remem\.command" must be a string/);
    assert.ok(ui.errors[0].includes(JSON.stringify(setting)), ui.errors[0]);
    await assert.rejects(client.request('remem/sessionTree', { cwd: '/p' }), /"remem\.command" must be a string/);
  }
});

test('the server runs in the first workspace folder on disk, else the home folder', async (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'remem-folder-'));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  fs.mkdirSync(path.join(root, 'bin'));
  fs.writeFileSync(path.join(root, 'bin', 'remem'), '#!/bin/sh\n', { mode: 0o755 });
  const relative = './bin/remem'; // found from the folder the server runs in
  ui.folders = [
    { uri: { scheme: 'vscode-remote', fsPath: '/remote/only' } },
    { uri: { scheme: 'file', fsPath: path.join(root, 'gone') } },
    { uri: { scheme: 'file', fsPath: root } },
  ];
  let client = await restartedWith(relative);
  assert.deepEqual(ui.errors, []);
  assert.equal(client.currentStatus.state, 'starting');
  ui.folders = [{ uri: { scheme: 'file', fsPath: path.join(root, 'gone') } }];
  const home = process.env.HOME;
  process.env.HOME = root;
  try {
    client = await restartedWith(relative);
  } finally {
    process.env.HOME = home;
    ui.folders = undefined;
  }
  assert.deepEqual(ui.errors, []);
  assert.equal(client.currentStatus.state, 'starting');
});

test('once the library gave up on a crashing server, requests and commands say to restart it', async () => {
  const client = await restartedWith(process.execPath);
  for (const asked of [client.request('remem/sessionTree', { cwd: '/p' }), client.command('remem.lsp.rename', {})]) {
    await settle();
    ui.server.fail(CONNECTION_INACTIVE, 'Client is not running');
    await assert.rejects(asked, /^Error: remem: the language server is not running\. Run "Remem: Restart Server"\.$/);
    assert.deepEqual(fixesOf(await asked.catch((e: unknown) => e)), [RESTART_SERVER, SHOW_LOG]);
  }
});

test('a server that dies while answering is said so, with what to do, not in the library\'s words', async () => {
  const client = await restartedWith(process.execPath);
  const asked = client.command('remem.lsp.rename', { session: 's', title: 't' });
  await settle();
  ui.server.fail(PENDING_RESPONSE_REJECTED, 'Pending response rejected since connection got disposed');
  await assert.rejects(asked, /stopped before it answered; what was asked may or may not have been done: look, then try again/);
  assert.deepEqual(fixesOf(await asked.catch((e: unknown) => e)), [RESTART_SERVER, SHOW_LOG]);
});

test('a server older or newer than the extension is said once at start, with the way out', async () => {
  const started = async (initializeResult: unknown): Promise<string[]> => {
    ui.initializeResult = initializeResult;
    ui.warnings.length = 0;
    ui.buttons.length = 0;
    await new RememClient(log as never).start();
    return [...ui.warnings];
  };
  const older = await started({ capabilities: {} }); // before protocol 31, no server named one
  assert.equal(older.length, 1);
  assert.match(older[0], /^remem: .+ is older than this extension \(protocol 30 or older; the extension speaks \d+\)/);
  assert.match(older[0], /Update remem \(or set "remem\.command" to a newer one\), then restart the server\.$/);
  assert.deepEqual(ui.buttons, [['Restart Server', 'Open Settings']]);
  const named = await started({ capabilities: { experimental: { remem: { protocol: PROTOCOL - 1 } } } });
  assert.match(named[0], new RegExp(`\\(protocol ${PROTOCOL - 1}; the extension speaks ${PROTOCOL}\\)`));
  assert.deepEqual(await started({ capabilities: { experimental: { remem: { protocol: PROTOCOL } } } }), []);
  ui.buttons.length = 0;
  const newer = await started({ capabilities: { experimental: { remem: { protocol: PROTOCOL + 1 } } } });
  assert.equal(newer.length, 1);
  assert.match(newer[0], new RegExp(`^remem: .+ is newer than this extension \\(protocol ${PROTOCOL + 1}; the extension speaks ${PROTOCOL}\\)`));
  assert.match(newer[0], /Update the extension, then reload the window\.$/);
  assert.deepEqual(ui.buttons, [[]]);
  ui.initializeResult = { capabilities: { experimental: { remem: { protocol: PROTOCOL } } } };
});
