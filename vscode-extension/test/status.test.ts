import assert from 'node:assert/strict';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';

import { CANNOT_START, type Found, notFoundMessage, notStringMessage, resolveExecutable } from '../src/executable';
import { age } from '../src/format';
import { statusView } from '../src/status';

test('the status bar says connected, starting, unavailable (with why) and a running consolidation', () => {
  assert.equal(statusView({ state: 'connected' }).text, '$(check) remem');
  assert.equal(statusView({ state: 'starting' }).text, '$(loading~spin) remem');
  const down = statusView({ state: 'unavailable', message: 'daemon failed: no space left' });
  assert.equal(down.warning, true);
  assert.match(down.tooltip, /no space left/);
  // The client's own: no server runs, so nothing is validated (the daemon's outage keeps validation).
  const none = statusView({ state: 'no-server', message: 'remem not found on PATH' });
  assert.match(none.tooltip, /not running: memory files are not validated/);
  assert.doesNotMatch(none.tooltip, /still validated/);
  const busy = statusView({ state: 'connected', consolidating: 'session-0123456789' });
  assert.equal(busy.text, '$(sync~spin) remem: consolidating');
  assert.match(busy.tooltip, /01234567 \(session-0123456789\)/);
});

test('a bare command is looked up on PATH, a path is taken relative to the folder', () => {
  const present = new Set(['/usr/local/bin/remem', '/proj/.venv/bin/remem']);
  const found = (p: string): Found => (present.has(p) ? 'executable' : 'missing');
  const onPath = resolveExecutable('remem', { PATH: '/usr/bin:/usr/local/bin' }, '/proj', found);
  assert.deepEqual(onPath, { executable: '/usr/local/bin/remem' });
  assert.deepEqual(resolveExecutable('.venv/bin/remem', { PATH: '' }, '/proj', found), { executable: '/proj/.venv/bin/remem' });
  assert.deepEqual(resolveExecutable('remem', { PATH: '/usr/bin' }, '/proj', found), { problem: 'not-on-path', name: 'remem' });
  assert.deepEqual(resolveExecutable('  ', { PATH: '/usr/local/bin' }, '/proj', found), { problem: 'empty' });
  assert.deepEqual(resolveExecutable('/nowhere/remem', {}, '/proj', found), {
    problem: 'missing',
    name: '/nowhere/remem',
    path: '/nowhere/remem',
  });
});

test('a path that runs nothing says why: nothing there, no file, no execute permission', () => {
  for (const what of ['missing', 'not-a-file', 'not-executable'] as const) {
    assert.deepEqual(resolveExecutable('bin/remem', {}, '/proj', () => what), { problem: what, name: 'bin/remem', path: '/proj/bin/remem' });
  }
  // On PATH, what is no executable file is passed by, as a shell does.
  const found = (p: string): Found => (p === '/a/remem' ? 'not-executable' : p === '/b/remem' ? 'executable' : 'not-a-file');
  assert.deepEqual(resolveExecutable('remem', { PATH: '/c:/a:/b' }, '/proj', found), { executable: '/b/remem' });
  // With no executable of that name, the file found that cannot run is why, not "not on PATH".
  assert.deepEqual(resolveExecutable('remem', { PATH: '/c:/a:/d' }, '/proj', found), { problem: 'not-executable', name: 'remem', path: '/a/remem' });
});

test('every message of a remem.command that runs nothing opens with the one prefix, once', () => {
  const messages = [
    notStringMessage(['remem', 'lsp']),
    notFoundMessage({ problem: 'empty' }),
    notFoundMessage({ problem: 'not-on-path', name: 'remem' }),
    notFoundMessage({ problem: 'missing', name: 'bin/remem', path: '/proj/bin/remem' }),
    notFoundMessage({ problem: 'unreachable', reason: 'EACCES: permission denied', name: 'remem', path: '/a/remem' }),
  ];
  for (const message of messages) {
    assert.ok(message.startsWith(CANNOT_START), message);
    assert.equal(message.split(CANNOT_START).length, 2, message);
  }
});

test('"~" is the user\'s home folder, also where HOME is not set', (t) => {
  const home = process.env.HOME;
  delete process.env.HOME;
  t.after(() => {
    process.env.HOME = home;
  });
  const expected = path.join(os.homedir(), '.venv/bin/remem');
  assert.deepEqual(resolveExecutable('~/.venv/bin/remem', {}, '/proj', () => 'executable'), { executable: expected });
});

test('ages read like a person would say them', () => {
  const now = 10 ** 12;
  assert.equal(age(now - 30_000, now), 'just now');
  assert.equal(age(now - 5 * 60_000, now), '5 min ago');
  assert.equal(age(now - 3 * 3_600_000, now), '3 h ago');
  assert.equal(age(now - 2 * 86_400_000, now), '2 d ago');
  assert.equal(age(now - 65 * 86_400_000, now), '2 mo ago');
  assert.equal(age(now - 800 * 86_400_000, now), '2 y ago');
  assert.equal(age(now + 60_000, now), 'just now');
});
