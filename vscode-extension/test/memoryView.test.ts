import './clientHarness'; // the `vscode` module the view imports

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { FixableError, RESTART_SERVER, SHOW_LOG } from '../src/fixes';
import * as flows from '../src/flows';
import { ClientCommands } from '../src/ids';
import { MemoryView } from '../src/memoryView';
import { type MemoryOverview, Requests } from '../src/protocol';
import type { FoldersAbove } from '../src/ancestors';
import { findingSessionsAbove, SessionsView } from '../src/sessionsView';
import { folderServer, homeAt, Kept, NOW, node } from './fixtures';

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

const overview = (receipts: number): MemoryOverview =>
  ({
    global: { path: '/h/GLOBAL.md', valid: true, problems: 0 },
    workspace: { key: 'k', folder: '/h/w/k', index: null },
    records: [],
    receipts: Array.from({ length: receipts }, (_, n) => ({
      review: `r${n}`, status: 'committed', session: `s${n}`, title: `T${n}`, changes: 1, updatedAt: '', path: `/h/r${n}.json`,
    })),
  }) as unknown as MemoryOverview;

test('a change heard while the first overview is coming is drawn: that answer may predate it', async () => {
  const answers: Array<(o: MemoryOverview) => void> = [];
  const server = {
    request: <R>(): Promise<R> => new Promise<R>((resolve) => answers.push(resolve as (o: MemoryOverview) => void)),
    command: async <R>(): Promise<R> => undefined as R,
  };
  const view = new MemoryView(server, () => [{ name: 'proj', cwd: '/proj' }]);
  const labels = async () => JSON.stringify(await view.getChildren());
  assert.match(await labels(), /Loading memory/);
  view.refresh(); // a consolidation committed: the editor draws again, the first answer still to come
  assert.match(await labels(), /Loading memory/);
  answers.shift()?.(overview(0)); // the first answer, read before the commit
  await settle();
  assert.equal(answers.length, 1, 'asked again');
  answers.shift()?.(overview(1));
  await settle();
  assert.match(await labels(), /T0/);
});

test('a change heard after the first overview came, before it was drawn, is drawn: that answer predates it', async () => {
  const answers: Array<(o: MemoryOverview) => void> = [];
  const server = {
    request: <R>(): Promise<R> => new Promise<R>((resolve) => answers.push(resolve as (o: MemoryOverview) => void)),
    command: async <R>(): Promise<R> => undefined as R,
  };
  const view = new MemoryView(server, () => [{ name: 'proj', cwd: '/proj' }]);
  assert.match(JSON.stringify(await view.getChildren()), /Loading memory/);
  answers.shift()?.(overview(0)); // the first answer comes; the editor is yet to draw it
  await settle();
  view.refresh(); // an undo committed meanwhile: the editor draws once, for both
  const drawn = view.getChildren();
  assert.equal(answers.length, 1, 'asked again');
  answers.shift()?.(overview(1));
  assert.match(JSON.stringify(await drawn), /T0/);
});

test('in a window of several folders, one folder\'s first answer does not make the others ask twice', async () => {
  let asked = 0;
  const answers: Array<(o: MemoryOverview) => void> = [];
  const server = {
    request: <R>(): Promise<R> => {
      asked++;
      return new Promise<R>((resolve) => answers.push(resolve as (o: MemoryOverview) => void));
    },
    command: async <R>(): Promise<R> => undefined as R,
  };
  const folders = [{ name: 'a', cwd: '/a' }, { name: 'b', cwd: '/b' }];
  const view = new MemoryView(server, () => folders);
  const drawAll = async () => {
    for (const folder of await view.getChildren()) await view.getChildren(folder);
  };
  await drawAll();
  answers.shift()?.(overview(0)); // /a answers; the view draws again while /b's is coming
  await settle();
  await drawAll();
  answers.shift()?.(overview(0));
  await settle();
  assert.equal(asked, 2);
});

test('a removed workspace folder is forgotten: its memory files are judged no more', async () => {
  const mine = {
    ...overview(0),
    workspace: { key: 'k', folder: '/h/w/a', index: null },
  } as unknown as MemoryOverview;
  let folders = [{ name: 'a', cwd: '/a' }];
  const server = { request: async <R>() => mine as R, command: async <R>() => undefined as R };
  const view = new MemoryView(server, () => folders);
  await view.getChildren();
  await settle();
  assert.equal(view.shows('/h/w/a/rec.md'), true);
  folders = [];
  view.refresh(); // as onDidChangeWorkspaceFolders does
  assert.equal(view.shows('/h/w/a/rec.md'), false); // an edit to it no longer re-reads the view
  assert.equal(view.shows('/h/GLOBAL.md'), false);
});

test('a folder whose memory cannot be asked for says why, and its row runs the fix', async () => {
  const error = new FixableError('remem: the language server is not running.', [RESTART_SERVER, SHOW_LOG]);
  const server = { request: async <R>(): Promise<R> => Promise.reject(error), command: async <R>() => undefined as R };
  const view = new MemoryView(server, () => [{ name: 'p', cwd: '/p' }]);
  await view.getChildren();
  await settle();
  const [row] = await view.getChildren();
  const item = view.getTreeItem(row) as unknown as { label: string; command?: { command: string } };
  assert.equal(item.label, error.message);
  assert.equal(item.command?.command, RESTART_SERVER.command);
});

test('a workspace without records says so, and a click on it consolidates a session of that folder', async () => {
  const server = { request: async <R>() => overview(0) as R, command: async <R>() => undefined as R };
  const folders = [
    { name: 'a', cwd: '/a' },
    { name: 'b', cwd: '/b' },
  ];
  const view = new MemoryView(server, () => folders);
  const [, b] = await view.getChildren(); // a row per folder
  await view.getChildren(b);
  await settle();
  const [, workspace, receipts] = await view.getChildren(b);
  // Its receipts are the folder's own: that none has run is said of it by name.
  const [none] = await view.getChildren(receipts);
  assert.equal((view.getTreeItem(none) as unknown as { label: string }).label, 'No consolidation has run in b yet.');
  const [note] = await view.getChildren(workspace);
  const item = view.getTreeItem(note) as unknown as { label: string; command?: { command: string; arguments: unknown[] } };
  assert.match(item.label, /^No records yet/);
  assert.deepEqual(item.command?.command, ClientCommands.consolidateSession);
  // The folder's sessions are offered: no "which folder?" although the window has two.
  const h = { sent: [] as Array<[string, object]> };
  const ctx = {
    ui: { pick: async () => undefined, busy: (_: string, task: () => Promise<unknown>) => task() } as unknown as flows.Ui,
    server: {
      request: async <R>(method: string, params: object) => {
        h.sent.push([method, params]);
        return (method === Requests.settings ? { keyReady: true } : { nodes: [node('s1')] }) as R;
      },
      command: async <R>() => undefined as R,
    },
    folders: () => folders,
    now: () => NOW,
    activeSession: () => undefined,
    refreshSessions: () => undefined,
    refreshMemory: () => undefined,
  };
  await flows.run(() => flows.consolidateSession(ctx, ...(item.command?.arguments ?? [])));
  assert.deepEqual(h.sent, [
    [Requests.sessionTree, { cwd: '/b' }],
    [Requests.settings, {}],
  ]);
});

const OVERVIEW = Requests.memoryOverview;
const TREE = Requests.sessionTree;
const RECORDED = { ...overview(0), records: [{ name: 'r', type: 'project', description: 'd', path: '/p/r.md', valid: true, problems: 0 }] };

/** A server where `/home/me/proj` has sessions and records (its overview held back until `held`
 * settles, when given), and every other folder neither, but for the records `recorded` names. */
function projectServer(held?: Promise<unknown>, recorded = new Set<string>()) {
  return folderServer((method, cwd) => {
    const proj = cwd === '/home/me/proj';
    if (method === TREE) return { nodes: proj ? [node('p1')] : [] };
    if (!proj) return recorded.has(cwd) ? RECORDED : overview(0);
    return held ? held.then(() => RECORDED) : RECORDED;
  });
}

/** The Memory view of one workspace folder, and its workspace section's rows as the editor draws
 * them: each draw reads the view again, and lets what it asked for answer. */
function oneFolder(server: ReturnType<typeof folderServer>, cwd: string, above?: FoldersAbove) {
  const view = new MemoryView(server, () => [{ name: 'x', cwd }], above);
  let redraws = 0;
  view.onDidChangeTreeData(() => redraws++);
  const workspaceRows = async (): Promise<string[]> => {
    const [, workspace] = await view.getChildren();
    const rows = workspace ? await view.getChildren(workspace) : [];
    return rows.map((row) => (row as { node: { label: string } }).node.label); // a record's row needs an editor to draw
  };
  /** Draws until the rows stand still: the first answer, then what it started. */
  const settled = async (): Promise<string[]> => {
    for (let round = 0; round < 3; round++) {
      await workspaceRows();
      await settle();
    }
    return workspaceRows();
  };
  return { view, workspaceRows, settled, redraws: () => redraws };
}

/** What `server` was asked of folders other than the workspace folder `/home/me/proj/app`. */
const askedAbove = (server: ReturnType<typeof folderServer>): string[] =>
  server.asked.filter((asked) => !asked.endsWith(' /home/me/proj/app'));

const NONE = 'No records yet: consolidate a session';
const HINT = 'Records were kept for the parent folder ~/proj: open it to see them';

test('a subfolder of a project without records names the folder above whose workspace has some', async (t) => {
  homeAt(t, '/home/me');
  const server = projectServer();
  assert.deepEqual(await oneFolder(server, '/home/me/proj/app').settled(), [NONE, HINT]);
  // The folder above with sessions, then its records (each draw reads the folder's own overview).
  assert.deepEqual(askedAbove(server), [`${TREE} /home/me/proj`, `${OVERVIEW} /home/me/proj`]);
  // The home folder's records are no hint: a project at its top is one of its own.
  server.asked.length = 0;
  assert.deepEqual(await oneFolder(server, '/home/me/other').settled(), [NONE]);
  assert.deepEqual(new Set(server.asked), new Set([`${OVERVIEW} /home/me/other`]));
});

test('an empty folder asks the folders above it once a window: not at each refresh, again at Refresh or when its records are gone', async (t) => {
  homeAt(t, '/home/me');
  const recorded = new Set<string>();
  const server = projectServer(undefined, recorded);
  const memory = oneFolder(server, '/home/me/proj/app');
  await memory.settled();
  // A memory change, a session's new label, a consolidation's end: only the folder's own overview.
  server.asked.length = 0;
  for (let n = 0; n < 2; n++) {
    memory.view.refresh();
    assert.deepEqual(await memory.settled(), [NONE, HINT]);
  }
  assert.deepEqual(askedAbove(server), []);
  // The view's Refresh button: asked again, the hint shown meanwhile.
  server.asked.length = 0;
  memory.view.forgetAbove();
  memory.view.refresh();
  assert.deepEqual(await memory.workspaceRows(), [NONE, HINT]);
  await memory.settled();
  assert.deepEqual(askedAbove(server), [`${TREE} /home/me/proj`, `${OVERVIEW} /home/me/proj`]);
  // Its own records came, then went (undone): the records above are asked again (the sessions
  // above are Session Branches' to find again).
  recorded.add('/home/me/proj/app');
  memory.view.refresh();
  await memory.settled();
  recorded.clear();
  server.asked.length = 0;
  memory.view.refresh();
  assert.deepEqual(await memory.settled(), [NONE, HINT]);
  assert.deepEqual(askedAbove(server), [`${OVERVIEW} /home/me/proj`]);
});

test('the Memory view starts from the folder above that Session Branches found: it asks no tree of its own', async (t) => {
  homeAt(t, '/home/me');
  const server = projectServer();
  const cwd = '/home/me/proj/app';
  const above = findingSessionsAbove(server);
  const sessions = new SessionsView(server, () => [{ name: 'x', cwd }], new Kept(), above);
  for (let round = 0; round < 3; round++) {
    await sessions.getChildren();
    await settle();
  }
  server.asked.length = 0;
  assert.deepEqual(await oneFolder(server, cwd, above).settled(), [NONE, HINT]);
  assert.ok(!server.asked.some((asked) => asked.startsWith(TREE)), server.asked.join(', '));
});

test('what Session Branches\' Refresh finds above anew, the Memory view asks the records of and draws', async (t) => {
  homeAt(t, '/home/me');
  let parentWorked = false; // an agent ran in the parent folder, and its session was consolidated
  const server = folderServer((method, cwd) => {
    const parent = cwd === '/home/me/proj' && parentWorked;
    if (method === TREE) return { nodes: parent ? [node('p1')] : [] };
    return parent ? RECORDED : overview(0);
  });
  const cwd = '/home/me/proj/app';
  const above = findingSessionsAbove(server);
  const sessions = new SessionsView(server, () => [{ name: 'x', cwd }], new Kept(), above);
  const drawSessions = async () => {
    for (let round = 0; round < 3; round++) {
      await sessions.getChildren();
      await settle();
    }
  };
  await drawSessions();
  const memory = oneFolder(server, cwd, above);
  assert.deepEqual(await memory.settled(), [NONE]);
  parentWorked = true;
  sessions.forgetAbove(); // Session Branches' Refresh button, not the Memory view's
  sessions.refresh();
  const before = memory.redraws();
  await drawSessions();
  assert.ok(memory.redraws() > before, 'the Memory view is drawn again');
  assert.deepEqual(await memory.settled(), [NONE, HINT]);
});

test('"No records yet" is drawn at once; the folder above is added when it answers', async (t) => {
  homeAt(t, '/home/me');
  let release: () => void = () => undefined;
  const server = projectServer(new Promise<void>((resolve) => {
    release = resolve;
  }));
  const memory = oneFolder(server, '/home/me/proj/app');
  assert.deepEqual(await memory.settled(), [NONE]); // the folder above has not answered
  const before = memory.redraws();
  release();
  await settle();
  assert.ok(memory.redraws() > before, 'the hint is drawn when found');
  assert.deepEqual(await memory.settled(), [NONE, HINT]);
});
