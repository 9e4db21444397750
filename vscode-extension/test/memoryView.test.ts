import './clientHarness'; // the `vscode` module the view imports

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { FixableError, RESTART_SERVER, SHOW_LOG } from '../src/fixes';
import * as flows from '../src/flows';
import { ClientCommands } from '../src/ids';
import { MemoryView } from '../src/memoryView';
import { type MemoryOverview, Requests } from '../src/protocol';
import { NOW, node } from './fixtures';

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

test('a subfolder of a project without records names the folder above whose workspace has some', async (t) => {
  const home = process.env.HOME;
  process.env.HOME = '/home/me';
  t.after(() => {
    process.env.HOME = home;
  });
  const recorded = { ...overview(0), records: [{ name: 'r', type: 'project', description: 'd', path: '/p/r.md', valid: true, problems: 0 }] };
  const asked: string[] = [];
  const server = {
    request: async <R>(_method: string, params: object): Promise<R> => {
      const { cwd } = params as { cwd: string };
      asked.push(cwd);
      return (cwd === '/home/me/proj' || cwd === '/home/me' ? recorded : overview(0)) as R;
    },
    command: async <R>() => undefined as R,
  };
  const workspaceRows = async (cwd: string): Promise<string[]> => {
    asked.length = 0;
    const view = new MemoryView(server, () => [{ name: 'x', cwd }]);
    await view.getChildren();
    await settle();
    const [, workspace] = await view.getChildren();
    const rows = await view.getChildren(workspace);
    return rows.map((row) => (view.getTreeItem(row) as unknown as { label: string }).label);
  };
  assert.deepEqual(await workspaceRows('/home/me/proj/app'), [
    'No records yet: consolidate a session',
    'Records were kept for the parent folder ~/proj: open it to see them',
  ]);
  assert.deepEqual(asked, ['/home/me/proj/app', '/home/me/proj']);
  // The home folder's records are no hint: a project at its top is one of its own.
  assert.deepEqual(await workspaceRows('/home/me/other'), ['No records yet: consolidate a session']);
  assert.deepEqual(asked, ['/home/me/other']);
});
