import './clientHarness'; // the `vscode` module the view imports

import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { Folder } from '../src/flows';
import { Requests, type SessionTreeResult } from '../src/protocol';
import { FixableError, OPEN_COMMAND_SETTING, SHOW_LOG } from '../src/fixes';
import { type SessionElement, SessionsView } from '../src/sessionsView';
import { folderServer, homeAt, Kept, node } from './fixtures';

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

const TREE = Requests.sessionTree;

/** Session Branches of one workspace folder over `server`, and its note rows as the editor draws
 * them: each draw reads the view again, and lets what it asked for answer. */
function oneFolder(server: ReturnType<typeof folderServer>, cwd: string) {
  const sessions = new SessionsView(server, () => [{ name: 'x', cwd }], new Kept());
  let redraws = 0;
  sessions.onDidChangeTreeData(() => redraws++);
  const notes = async (): Promise<string[]> => {
    const rows = await sessions.getChildren();
    const notes = rows.filter((row) => row.type === 'note');
    return notes.map((row) => (sessions.getTreeItem(row) as unknown as { label: string }).label);
  };
  /** Draws until the rows stand still: the first answer, then what it started. */
  const settled = async (): Promise<string[]> => {
    for (let round = 0; round < 3; round++) {
      await notes();
      await settle();
    }
    return notes();
  };
  return { sessions, notes, settled, redraws: () => redraws };
}

const HINT = /^Sessions were recorded in/;

test('a subfolder of a project without sessions names the folder above whose workspace has them', async (t) => {
  homeAt(t, '/home/me');
  const trees: Record<string, SessionTreeResult> = {
    '/home/me/proj': { nodes: [node('p1')] },
    '/home/me': { nodes: [node('h1')] }, // the home folder's, never named
  };
  const server = folderServer((_method, cwd) => trees[cwd] ?? { nodes: [] });
  const labels = async (cwd: string): Promise<string[]> => {
    server.asked.length = 0;
    return oneFolder(server, cwd).settled();
  };
  const [none, hint] = await labels('/home/me/proj/app');
  assert.equal(none, 'No agent sessions of this workspace were found');
  assert.equal(hint, 'Sessions were recorded in the parent folder ~/proj');
  assert.deepEqual(server.asked, [`${TREE} /home/me/proj/app`, `${TREE} /home/me/proj`]);
  // Further down: named too, the nearest first.
  assert.equal((await labels('/home/me/proj/app/src'))[1], 'Sessions were recorded in the folder ~/proj above it');
  // A project of its own at home's top: the home folder's sessions are no hint.
  assert.ok(!(await labels('/home/me/other')).some((label) => HINT.test(label)));
  assert.deepEqual(server.asked, [`${TREE} /home/me/other`]);
  // A folder with sessions asks nothing more.
  await labels('/home/me/proj');
  assert.deepEqual(server.asked, [`${TREE} /home/me/proj`]);
});

test('review receipts that cannot be read leave an empty folder empty: the folder above is still named', async (t) => {
  homeAt(t, '/home/me');
  const reviews = { path: '/home/me/.remem/memory/reviews', message: 'the review receipts cannot be read', kind: 'reviews' as const };
  const trees: Record<string, SessionTreeResult> = {
    '/home/me/proj': { nodes: [node('p1', { review: { state: 'unknown' } })], errors: [reviews] },
  };
  const server = folderServer((_method, cwd) => trees[cwd] ?? { nodes: [], errors: [reviews] });
  const notes = await oneFolder(server, '/home/me/proj/app').settled();
  assert.ok(notes.includes('Sessions were recorded in the parent folder ~/proj'), JSON.stringify(notes));
});

test('outside the home folder no folder above is asked: none is a project below home', async (t) => {
  homeAt(t, '/home/me');
  const server = folderServer((_method, cwd) => ({ nodes: cwd === '/tmp/scratch/sub' || cwd === '/home/other/proj/sub' ? [] : [node('n')] }));
  for (const cwd of ['/tmp/scratch/sub', '/home/other/proj/sub']) {
    server.asked.length = 0;
    const rows = await oneFolder(server, cwd).settled();
    assert.ok(!rows.some((label) => HINT.test(label)), cwd);
    assert.deepEqual(server.asked, [`${TREE} ${cwd}`]);
  }
});

test('an empty folder asks the folders above it once a window: not at each refresh, again at Refresh or when its sessions are gone', async (t) => {
  homeAt(t, '/home/me');
  const cwd = '/home/me/proj/app/src';
  let own: SessionTreeResult = { nodes: [] };
  const server = folderServer((_method, folder) => (folder === cwd ? own : { nodes: folder === '/home/me/proj' ? [node('p1')] : [] }));
  const view = oneFolder(server, cwd);
  assert.match((await view.settled())[1], HINT);
  const probes = [`${TREE} /home/me/proj/app`, `${TREE} /home/me/proj`];
  assert.deepEqual(server.asked, [`${TREE} ${cwd}`, ...probes]);

  // A session changed anywhere (`remem/treeChanged`): only the folder's own tree is asked.
  server.asked.length = 0;
  for (let n = 0; n < 2; n++) {
    view.sessions.refresh();
    assert.match((await view.settled())[1], HINT);
  }
  assert.deepEqual(server.asked, [`${TREE} ${cwd}`, `${TREE} ${cwd}`]);

  // The view's Refresh button: asked again, the hint shown meanwhile.
  server.asked.length = 0;
  view.sessions.forgetAbove();
  view.sessions.refresh();
  assert.match((await view.notes())[1], HINT);
  await view.settled();
  assert.deepEqual(server.asked, [`${TREE} ${cwd}`, ...probes]);

  // Its own sessions came, then went (archived, moved): asked again.
  own = { nodes: [node('s1')] };
  view.sessions.refresh();
  await view.settled();
  own = { nodes: [] };
  server.asked.length = 0;
  view.sessions.refresh();
  await view.settled();
  assert.deepEqual(server.asked, [`${TREE} ${cwd}`, ...probes]);
});

test('a folder above that could not be asked is asked again at the next draw: the finding is kept only once all answered', async (t) => {
  homeAt(t, '/home/me');
  let down = true; // the server restarting, or the daemon unreachable, for the parent's request
  const server = folderServer((_method, cwd) => {
    if (cwd === '/home/me/proj' && down) throw new Error('the language server is not running');
    return { nodes: cwd === '/home/me/proj' ? [node('p1')] : [] };
  });
  const view = oneFolder(server, '/home/me/proj/app');
  assert.ok(!(await view.settled()).some((label) => HINT.test(label)));
  down = false;
  view.sessions.refresh(); // `remem/treeChanged`, as after the library restarted the server
  assert.equal((await view.settled())[1], 'Sessions were recorded in the parent folder ~/proj');
  // Found with every folder answering: kept, not asked again at each change.
  server.asked.length = 0;
  view.sessions.refresh();
  await view.settled();
  assert.deepEqual(server.asked, [`${TREE} /home/me/proj/app`]);
});

test('a folder further up found past one that could not be asked is named until the nearer one answers', async (t) => {
  homeAt(t, '/home/me');
  let down = true;
  const server = folderServer((_method, cwd) => {
    if (cwd === '/home/me/a/proj' && down) throw new Error('daemon unreachable');
    return { nodes: cwd === '/home/me/a/proj' || cwd === '/home/me/a' ? [node('p1')] : [] };
  });
  const view = oneFolder(server, '/home/me/a/proj/app');
  assert.equal((await view.settled())[1], 'Sessions were recorded in the folder ~/a above it');
  down = false;
  view.sessions.refresh();
  assert.equal((await view.settled())[1], 'Sessions were recorded in the parent folder ~/a/proj');
});

test('the empty state is drawn at once; the folder above is added when it answers', async (t) => {
  homeAt(t, '/home/me');
  let answerAbove: (tree: SessionTreeResult) => void = () => undefined;
  const held = new Promise<SessionTreeResult>((resolve) => {
    answerAbove = resolve;
  });
  const server = folderServer((_method, cwd) => (cwd === '/home/me/proj' ? held : { nodes: [] }));
  const view = oneFolder(server, '/home/me/proj/app');
  const rows = await view.settled(); // the folder above has not answered
  assert.equal(rows[0], 'No agent sessions of this workspace were found');
  assert.ok(!rows.some((label) => HINT.test(label)));
  const before = view.redraws();
  answerAbove({ nodes: [node('p1')] });
  await settle();
  assert.ok(view.redraws() > before, 'the hint is drawn when found');
  assert.equal((await view.notes())[1], 'Sessions were recorded in the parent folder ~/proj');
});
