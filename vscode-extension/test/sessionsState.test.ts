import assert from 'node:assert/strict';
import { test } from 'node:test';

import { SHOW_LOG } from '../src/fixes';
import type { SessionTreeResult } from '../src/protocol';
import { emptyRows, errorRows, FolderSessions, HARNESSES, loadingRow, settingsRows } from '../src/sessionsState';
import { FAMILY, Kept } from './fixtures';

/** A server whose answers the test releases one at a time. */
function held() {
  const waiting: Array<{ resolve: (r: SessionTreeResult) => void; reject: (e: Error) => void }> = [];
  const ask = (_cwd: string) => new Promise<SessionTreeResult>((resolve, reject) => waiting.push({ resolve, reject }));
  return { ask, waiting };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

test('until the first answer the folder shows loading, never the empty state', async () => {
  const server = held();
  let changes = 0;
  const state = new FolderSessions(new Kept(), server.ask, () => changes++, String);
  assert.deepEqual(state.shown('/proj'), { kind: 'loading' });
  // The loading row says it; the header does not add "refreshing…" where nothing is shown yet.
  assert.equal(state.refreshing, false);
  assert.equal(state.activity, undefined);
  assert.equal(server.waiting.length, 1);
  state.shown('/proj'); // drawing again does not ask again
  assert.equal(server.waiting.length, 1);
  server.waiting[0].resolve({ nodes: [] });
  await settle();
  assert.equal(changes, 1);
  assert.deepEqual(state.shown('/proj'), { kind: 'tree', result: { nodes: [] }, refreshing: false });
  assert.equal(state.refreshing, false);
});

test('the last tree is drawn at once, marked refreshing, then replaced and kept again', async () => {
  const kept = new Kept();
  kept.values.set('remem.sessionTree:/proj', { nodes: FAMILY.slice(0, 1) });
  const server = held();
  const state = new FolderSessions(kept, server.ask, () => undefined, String);
  assert.deepEqual(state.shown('/proj'), { kind: 'tree', result: { nodes: FAMILY.slice(0, 1) }, refreshing: true });
  server.waiting[0].resolve({ nodes: FAMILY });
  await settle();
  assert.deepEqual(state.shown('/proj'), { kind: 'tree', result: { nodes: FAMILY }, refreshing: false });
  assert.deepEqual(kept.values.get('remem.sessionTree:/proj'), { nodes: FAMILY });
});

test('a kept tree is one with sessions, read without asking the server', () => {
  const kept = new Kept();
  kept.values.set('remem.sessionTree:/proj', { nodes: FAMILY.slice(0, 1) });
  kept.values.set('remem.sessionTree:/empty', { nodes: [] });
  const server = held();
  const state = new FolderSessions(kept, server.ask, () => undefined, String);
  assert.deepEqual(state.kept('/proj'), { nodes: FAMILY.slice(0, 1) });
  assert.equal(state.kept('/empty'), undefined);
  assert.equal(state.kept('/other'), undefined);
  assert.equal(server.waiting.length, 0);
});

test('a refresh keeps the rows until the answer; an error replaces them with the reason', async () => {
  const server = held();
  const state = new FolderSessions(new Kept(), server.ask, () => undefined, (e) => `said: ${String(e)}`);
  state.shown('/proj');
  server.waiting[0].resolve({ nodes: FAMILY });
  await settle();
  state.refresh();
  assert.equal(state.shown('/proj').kind, 'tree');
  server.waiting[1].reject(new Error('daemon gone'));
  await settle();
  // Its row's click shows the log, where the server said more.
  assert.deepEqual(state.shown('/proj'), { kind: 'error', message: 'said: Error: daemon gone', fix: SHOW_LOG });
});

test('the empty state names the harnesses, each root searched, and the next steps', () => {
  const rows = emptyRows(
    {
      nodes: [],
      searched: [
        { path: '/home/me/.remem/sessions', exists: true },
        { path: '/data/agents', exists: false },
      ],
      settingsFile: '/home/me/.remem/settings.yml',
    },
    '/home/me/proj',
    '/home/me',
  );
  assert.deepEqual(
    rows.map((r) => [r.label, r.description]),
    [
      ['No agent sessions of this workspace were found', undefined],
      [HARNESSES, undefined],
      ['Looked in ~/.remem/sessions', undefined],
      ['Looked in /data/agents', 'not found'],
      ['Open settings.yml', 'sessions.roots'],
      ['Learn more', 'which sessions remem reads'],
    ],
  );
  assert.deepEqual(rows[4].command, { id: 'remem.openFile', arguments: ['/home/me/.remem/settings.yml'] });
  assert.match(HARNESSES, /Claude Code, Codex and DSH/);
});

test('a tree drawn on the last valid settings says settings.yml is invalid, and why, above it', () => {
  const problem = "/home/me/.remem/settings.yml:4: sessions.roots.0.format: Input should be 'dsh', 'claude-code' or 'codex'";
  const rows = settingsRows({ nodes: FAMILY, settingsProblems: [problem], settingsFile: '/home/me/.remem/settings.yml' });
  assert.deepEqual(
    rows.map((r) => [r.label, r.description, r.icon]),
    [['settings.yml is invalid', 'sessions shown by the last valid settings', 'warning']],
  );
  assert.ok(rows[0].tooltip.startsWith(`${problem}\n`), rows[0].tooltip);
  assert.deepEqual(rows[0].command, { id: 'remem.openFile', arguments: ['/home/me/.remem/settings.yml'] });
  // A valid file: nothing above the tree.
  assert.deepEqual(settingsRows({ nodes: FAMILY }), []);
});

test('the empty state says which harness each default folder is for, found or not', () => {
  const rows = emptyRows(
    {
      nodes: [],
      searched: [
        { path: '/home/me/.remem/sessions', exists: true },
        { path: '/home/me/.claude/projects', exists: true, harness: 'claude-code' },
        { path: '/home/me/.codex/sessions', exists: false, harness: 'codex' },
        { path: '/home/me/.dsh/sessions', exists: false, harness: 'dsh' },
      ],
      settingsFile: '/home/me/.remem/settings.yml',
    },
    '/home/me/proj',
    '/home/me',
  );
  const roots = rows.filter((r) => r.label.startsWith('Looked in '));
  assert.deepEqual(
    roots.map((r) => [r.label, r.description, r.icon]),
    [
      ['Looked in ~/.remem/sessions', undefined, 'folder'],
      ['Looked in ~/.claude/projects', 'Claude Code', 'folder'],
      ['Looked in ~/.codex/sessions', 'Codex · not found', 'folder-library'],
      ['Looked in ~/.dsh/sessions', 'DSH · not found', 'folder-library'],
    ],
  );
  // The tooltip says where the harness's folder is by default and how to point remem elsewhere.
  assert.equal(
    roots[2].tooltip,
    "Codex's sessions folder, $CODEX_HOME/sessions (by default ~/.codex/sessions): /home/me/.codex/sessions does not exist. " +
      'If Codex keeps its sessions elsewhere, add that folder under sessions.roots in settings.yml.',
  );
  assert.equal(
    roots[1].tooltip,
    "Claude Code's sessions folder, $CLAUDE_CONFIG_DIR/projects (by default ~/.claude/projects): no session of this folder",
  );
  assert.equal(roots[0].tooltip, '/home/me/.remem/sessions: no session of this folder');
});

test('a refresh while the server is asked asks again once the answer is in', async () => {
  const server = held();
  const state = new FolderSessions(new Kept(), server.ask, () => undefined, String);
  state.shown('/proj');
  state.refresh();
  state.refresh();
  assert.equal(server.waiting.length, 1);
  server.waiting[0].resolve({ nodes: [] });
  await settle();
  assert.equal(server.waiting.length, 2); // one more ask for both refreshes
  server.waiting[1].resolve({ nodes: FAMILY });
  await settle();
  assert.equal(server.waiting.length, 2);
  assert.deepEqual(state.shown('/proj'), { kind: 'tree', result: { nodes: FAMILY }, refreshing: false });
});

test('a cold listing shows "Indexing N of M sessions…" until its answer comes', async () => {
  const server = held();
  let changes = 0;
  const state = new FolderSessions(new Kept(), server.ask, () => changes++, String);
  state.shown('/proj');
  state.shown('/other');
  assert.equal(loadingRow(state.indexing('/proj')).label, 'Loading the sessions of this workspace…');
  state.progress({ cwd: '/proj', done: 3, total: 40 });
  assert.equal(changes, 1);
  assert.equal(loadingRow(state.indexing('/proj')).label, 'Indexing 3 of 40 sessions…');
  assert.equal(state.indexing('/other'), undefined, 'another folder is not the one indexing');
  assert.equal(state.activity, 'indexing 3 of 40…');
  state.progress({ cwd: '/proj', done: 40, total: 40 });
  assert.equal(state.indexing('/proj'), undefined, 'the last note: the answer is on its way');
  assert.equal(state.activity, undefined); // the row says "Loading…" again
  state.progress({ cwd: '/proj', done: 7, total: 9 });
  server.waiting[0].resolve({ nodes: FAMILY });
  await settle();
  assert.equal(state.indexing('/proj'), undefined, 'the answer ends the indexing');
  changes = 0;
  state.progress({ cwd: '/proj', done: 1, total: 2 }); // a listing nobody here waits for
  assert.equal(changes, 0);
  assert.equal(state.indexing('/proj'), undefined);
  state.progress({ cwd: null, done: 5, total: 6 }); // a listing of everything covers every folder
  assert.equal(loadingRow(state.indexing('/other')).label, 'Indexing 5 of 6 sessions…');
});

test('an answer that changes nothing is not drawn again; a changed one is, with the new labels', async () => {
  const server = held();
  let changes = 0;
  const state = new FolderSessions(new Kept(), server.ask, () => changes++, String);
  state.shown('/proj');
  server.waiting[0].resolve({ nodes: FAMILY });
  await settle();
  assert.equal(changes, 1);
  assert.equal(state.labels().get('session-main'), 'Title of session-main');
  state.refresh();
  server.waiting[1].resolve({ nodes: structuredClone(FAMILY) }); // equal, not the same object
  await settle();
  assert.equal(changes, 1); // a redraw would leave the tree's selection empty for a while
  state.refresh();
  const renamed = FAMILY.map((n) => (n.id === 'session-main' ? { ...n, title: 'Move the uploader' } : n));
  server.waiting[2].resolve({ nodes: renamed });
  await settle();
  assert.equal(changes, 2);
  assert.equal(state.labels().get('session-main'), 'Move the uploader');
  assert.match(state.labels().get('session-fork') ?? '', /^After turn 2 · /); // labelled as the tree does
});

test('what the tree could not read is one row above it, each path and reason in its tooltip', () => {
  const link = { path: '/home/me/.claude/projects/-home-me-proj', message: 'a symbolic link; remem reads only real folders and files inside a session root' };
  const rows = errorRows({ nodes: FAMILY, errors: [link] });
  assert.deepEqual(
    rows.map((r) => [r.label, r.description, r.icon]),
    [['Some sessions could not be read', '1 file or folder', 'warning']],
  );
  assert.ok(rows[0].tooltip.startsWith(`${link.path}: ${link.message}\n`), rows[0].tooltip);
  const many = Array.from({ length: 25 }, (_, n) => ({ path: `/r/${n}.jsonl`, message: 'not UTF-8' }));
  const [row] = errorRows({ nodes: [], errors: many });
  assert.equal(row.description, '25 files or folders');
  assert.match(row.tooltip, /\/r\/19\.jsonl: not UTF-8\n…and 5 more\n/);
  assert.doesNotMatch(row.tooltip, /\/r\/20\.jsonl/);
  // A tree item's plain tooltip shows Markdown as typed: it names the command without backticks.
  assert.match(row.tooltip, /\n\nThe command "remem sessions list" lists them too\.$/);
  assert.doesNotMatch(row.tooltip, /`/);
  // Nothing unreadable (or an older daemon): nothing above the tree.
  assert.deepEqual(errorRows({ nodes: FAMILY, errors: [] }), []);
  assert.deepEqual(errorRows({ nodes: FAMILY }), []);
  // An empty tree with errors does not say there are no sessions, only that none could be read.
  const [unread] = emptyRows({ nodes: [], errors: [link] }, '/home/me/proj', '/home/me');
  assert.equal(unread.label, 'No agent sessions of this workspace could be read');
  // Its tooltip sends the user to what could not be read, not to an agent that has not worked here.
  assert.equal(unread.tooltip, 'The row above says which files or folders could not be read, and why.');
  // A read that failed is a warning to notice, as the row above is; none there is information.
  assert.equal(unread.icon, 'warning');
  const [none] = emptyRows({ nodes: [] }, '/home/me/proj', '/home/me');
  assert.equal(none.tooltip, 'Sessions appear here once an agent harness has worked in this folder.');
  assert.equal(none.icon, 'info');
});

test('review receipts that cannot be read are a row of their own, not sessions that could not be read', () => {
  const reviews = { path: '/home/me/.remem/memory/reviews', message: 'the review receipts cannot be read, so no session\'s review state is shown: …', kind: 'reviews' as const };
  const link = { path: '/home/me/.claude/projects/-home-me-proj', message: 'a symbolic link', kind: 'sessions' as const };
  assert.deepEqual(
    errorRows({ nodes: FAMILY, errors: [reviews] }).map((r) => [r.label, r.description, r.tooltip, r.icon]),
    [['Review states unknown', 'the review receipts cannot be read', `${reviews.path}: ${reviews.message}`, 'warning']],
  );
  // Beside a session that could not be read: each its own row, the sessions' counting only theirs.
  assert.deepEqual(
    errorRows({ nodes: FAMILY, errors: [reviews, link] }).map((r) => [r.label, r.description]),
    [['Review states unknown', 'the review receipts cannot be read'], ['Some sessions could not be read', '1 file or folder']],
  );
  // A workspace without sessions, its receipts closed: none were found, none failed to be read.
  const [none] = emptyRows({ nodes: [], errors: [reviews] }, '/home/me/proj', '/home/me');
  assert.equal(none.label, 'No agent sessions of this workspace were found');
  assert.equal(none.icon, 'info');
});

test('remem\'s file of titles that cannot be read is a row of its own, not sessions that could not be read', () => {
  const metadata = { path: '/home/me/.remem/state/session-meta.json', message: 'cannot be read: not JSON', kind: 'metadata' as const };
  assert.deepEqual(
    errorRows({ nodes: FAMILY, errors: [metadata] }).map((r) => [r.label, r.description, r.tooltip]),
    [['Titles and archive states not read', "sessions shown with their logs' titles", `${metadata.path}: ${metadata.message}`]],
  );
  const [none] = emptyRows({ nodes: [], errors: [metadata] }, '/home/me/proj', '/home/me');
  assert.equal(none.label, 'No agent sessions of this workspace were found');
  // An error of an older daemon, which names no kind, is a session's.
  const [unread] = emptyRows({ nodes: [], errors: [{ path: '/p', message: 'gone' }] }, '/home/me/proj', '/home/me');
  assert.notEqual(unread.label, 'No agent sessions of this workspace were found');
});

test('the trees kept of folders no longer in the workspace are dropped, this window\'s and a past one\'s', async () => {
  const kept = new Kept();
  await kept.update('remem.sessionTree:/gone', { nodes: FAMILY }); // a folder removed while no window was open
  await kept.update('remem.other', 1); // not this state's
  const server = held();
  const state = new FolderSessions(kept, server.ask, () => undefined, String);
  state.shown('/a');
  state.shown('/b');
  for (const waiting of server.waiting) waiting.resolve({ nodes: FAMILY });
  await settle();
  assert.deepEqual(kept.keys(), ['remem.sessionTree:/gone', 'remem.other', 'remem.sessionTree:/a', 'remem.sessionTree:/b']);
  assert.deepEqual(state.forget(new Set(['/a'])), ['/b']);
  assert.deepEqual(kept.keys(), ['remem.other', 'remem.sessionTree:/a']);
});
