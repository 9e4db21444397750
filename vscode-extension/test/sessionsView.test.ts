import './clientHarness'; // the `vscode` module the view imports

import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { Folder } from '../src/flows';
import type { SessionTreeResult } from '../src/protocol';
import { FixableError, OPEN_COMMAND_SETTING, SHOW_LOG } from '../src/fixes';
import { type SessionElement, SessionsView } from '../src/sessionsView';
import { Kept, node } from './fixtures';

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

/** Session Branches over a server answering each folder's tree at once, drawn as the editor draws it. */
function view(trees: Record<string, SessionTreeResult>) {
  let folders: Folder[] = [];
  const server = {
    request: async <R>(_method: string, params: object): Promise<R> => trees[(params as { cwd: string }).cwd] as R,
    command: async <R>(): Promise<R> => undefined as R,
  };
  const sessions = new SessionsView(server, () => folders, new Kept());
  let redraws = 0;
  sessions.onDidChangeTreeData(() => redraws++);
  let description: string | undefined;
  sessions.onDescription = (text) => {
    description = text;
  };
  /** The rows as the editor reads them: the root, then each folder's. */
  const draw = async (): Promise<SessionElement[]> => {
    const top = await sessions.getChildren();
    const rows = [...top];
    for (const element of top) if (element.type === 'folder') rows.push(...(await sessions.getChildren(element)));
    return rows;
  };
  return {
    sessions,
    draw,
    setFolders: (cwds: string[]) => {
      folders = cwds.map((cwd) => ({ name: cwd.slice(1), cwd }));
    },
    redraws: () => redraws,
    description: () => description,
  };
}

test('a workspace folder added or removed redraws Session Branches and drops what the removed one showed', async () => {
  const v = view({
    '/a': { nodes: [node('a1')] },
    '/b': { nodes: [node('b1'), node('b2', { archived: true })] },
    '/c': { nodes: [node('c1')] },
  });
  v.setFolders(['/a', '/b']);
  await v.draw();
  await settle(); // the answers come
  await v.draw();
  await v.draw(); // the header counts what the folders' rows hid when last read
  assert.equal(v.description(), '1 archived hidden');
  assert.equal(v.sessions.labelOf('b1'), 'Title of b1');

  const before = v.redraws();
  v.setFolders(['/a']);
  v.sessions.refresh(); // as onDidChangeWorkspaceFolders does
  await settle();
  assert.ok(v.redraws() > before, 'the removed folder is redrawn away, though /a answered the same');
  const rows = await v.draw();
  assert.deepEqual(
    rows.map((row) => (row.type === 'session' ? row.node.id : row.type)),
    ['a1'],
  );
  assert.equal(v.description(), undefined, 'the removed folder\'s archived session is counted no more');
  assert.equal(v.sessions.labelOf('b1'), undefined);

  const again = v.redraws();
  v.setFolders(['/a', '/c']);
  v.sessions.refresh();
  await settle();
  assert.ok(v.redraws() > again, 'an added folder is drawn');
  await v.draw();
  await settle();
  const shown = await v.draw();
  assert.deepEqual(
    shown.map((row) => (row.type === 'session' ? row.node.id : row.type === 'folder' ? row.folder.cwd : row.type)),
    ['/a', '/c', 'a1', 'c1'],
  );
});

test('a folder whose sessions cannot be asked for says why, and its row runs the fix', async () => {
  const fixable = new FixableError('remem: cannot start the language server: "remem" was not found on PATH.', [
    OPEN_COMMAND_SETTING,
    SHOW_LOG,
  ]);
  for (const [error, fix] of [
    [fixable, OPEN_COMMAND_SETTING],
    [new Error('the remem daemon is unavailable'), SHOW_LOG], // the server said more in the log
  ] as const) {
    const server = { request: async <R>(): Promise<R> => Promise.reject(error), command: async <R>() => undefined as R };
    const sessions = new SessionsView(server, () => [{ name: 'p', cwd: '/p' }], new Kept());
    await sessions.getChildren();
    await settle();
    const [row] = await sessions.getChildren();
    const item = sessions.getTreeItem(row) as unknown as { label: string; command?: { command: string; arguments: unknown[] } };
    assert.equal(item.label, error.message);
    assert.deepEqual([item.command?.command, item.command?.arguments], [fix.command, fix.arguments]);
  }
});

test('the trees a past window kept of folders removed since are dropped at the first rows', async () => {
  const kept = new Kept();
  await kept.update('remem.sessionTree:/gone', { nodes: [node('g1')] });
  await kept.update('remem.sessionTree:/a', { nodes: [node('a1')] });
  const server = { request: async <R>(): Promise<R> => ({ nodes: [node('a1')] }) as R, command: async <R>() => undefined as R };
  const sessions = new SessionsView(server, () => [{ name: 'a', cwd: '/a' }], kept);
  await sessions.getChildren();
  assert.deepEqual(kept.keys(), ['remem.sessionTree:/a']);
});

test('a subfolder of a project without sessions names the folder above whose workspace has them', async (t) => {
  const home = process.env.HOME;
  process.env.HOME = '/home/me';
  t.after(() => {
    process.env.HOME = home;
  });
  const trees: Record<string, SessionTreeResult> = {
    '/home/me/proj': { nodes: [node('p1')] },
    '/home/me': { nodes: [node('h1')] }, // the home folder's, never named
  };
  const asked: string[] = [];
  const server = {
    request: async <R>(_method: string, params: object): Promise<R> => {
      const { cwd } = params as { cwd: string };
      asked.push(cwd);
      return (trees[cwd] ?? { nodes: [] }) as R;
    },
    command: async <R>(): Promise<R> => undefined as R,
  };
  const labels = async (cwd: string): Promise<string[]> => {
    asked.length = 0;
    const sessions = new SessionsView(server, () => [{ name: 'x', cwd }], new Kept());
    await sessions.getChildren();
    await settle();
    const rows = await sessions.getChildren();
    const notes = rows.filter((row) => row.type === 'note');
    return notes.map((row) => (sessions.getTreeItem(row) as unknown as { label: string }).label);
  };
  const [none, hint] = await labels('/home/me/proj/app');
  assert.equal(none, 'No agent sessions of this workspace were found');
  assert.equal(hint, 'Sessions were recorded in the parent folder ~/proj');
  assert.deepEqual(asked, ['/home/me/proj/app', '/home/me/proj']);
  // Further down: named too, the nearest first.
  assert.equal((await labels('/home/me/proj/app/src'))[1], 'Sessions were recorded in the folder ~/proj above it');
  // A project of its own at home's top: the home folder's sessions are no hint.
  assert.ok(!(await labels('/home/me/other')).some((label) => label.startsWith('Sessions were recorded')));
  assert.deepEqual(asked, ['/home/me/other']);
  // A folder with sessions asks nothing more.
  await labels('/home/me/proj');
  assert.deepEqual(asked, ['/home/me/proj']);
});
