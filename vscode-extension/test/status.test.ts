import assert from 'node:assert/strict';
import { test } from 'node:test';

import { resolveExecutable } from '../src/executable';
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
  const exists = (p: string) => present.has(p);
  const onPath = resolveExecutable('remem', { PATH: '/usr/bin:/usr/local/bin' }, '/proj', exists);
  assert.equal(onPath, '/usr/local/bin/remem');
  assert.equal(resolveExecutable('.venv/bin/remem', { PATH: '' }, '/proj', exists), '/proj/.venv/bin/remem');
  assert.equal(resolveExecutable('remem', { PATH: '/usr/bin' }, '/proj', exists), null);
  assert.equal(resolveExecutable('  ', { PATH: '/usr/local/bin' }, '/proj', exists), null);
  assert.equal(resolveExecutable('/nowhere/remem', {}, '/proj', exists), null);
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
