import assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';

import { aboveName, ancestorsOf, homeRelative, nearestAbove } from '../src/ancestors';

test('the folders above a workspace folder that may be its project: nearest first, strictly below home', () => {
  assert.deepEqual(ancestorsOf('/home/me/work/proj/app', '/home/me'), ['/home/me/work/proj', '/home/me/work']);
  assert.deepEqual(ancestorsOf('/home/me/proj', '/home/me'), []); // a project at home's top has none
  assert.deepEqual(ancestorsOf('/home/me', '/home/me'), []);
  // Not below the home folder: none, however deep (agents run there for anything).
  assert.deepEqual(ancestorsOf('/tmp/scratch/sub', '/home/me'), []);
  assert.deepEqual(ancestorsOf('/home/other/proj/sub', '/home/me'), []);
  assert.deepEqual(ancestorsOf('/home/meadow/proj/app', '/home/me'), []); // a name that starts alike is not below
  assert.deepEqual(ancestorsOf('/srv/proj/app', ''), []); // no home folder known
  assert.deepEqual(ancestorsOf('/home/me/proj/app', '/home/me/'), ['/home/me/proj']); // however home is spelled
});

test('on Windows, the folders above and a folder named from home are told by its paths', () => {
  const home = 'C:\\Users\\me';
  assert.deepEqual(ancestorsOf('C:\\Users\\me\\work\\proj\\app', home, path.win32), ['C:\\Users\\me\\work\\proj', 'C:\\Users\\me\\work']);
  assert.deepEqual(ancestorsOf('c:\\users\\me\\proj\\app', home, path.win32), ['c:\\users\\me\\proj']); // case does not matter there
  assert.deepEqual(ancestorsOf('D:\\Users\\me\\proj\\app', home, path.win32), []); // another drive
  assert.deepEqual(ancestorsOf('C:\\Users\\meadow\\proj\\app', home, path.win32), []);
  assert.equal(homeRelative('C:\\Users\\me\\proj', home, path.win32), '~\\proj');
  assert.equal(homeRelative('D:\\proj', home, path.win32), 'D:\\proj');
  assert.equal(aboveName('C:\\Users\\me\\proj', 'C:\\Users\\me\\proj\\app', home, path.win32), 'the parent folder ~\\proj');
});

test('a folder is named from home only when below it', () => {
  assert.equal(homeRelative('/home/me/.claude/projects', '/home/me'), '~/.claude/projects');
  assert.equal(homeRelative('/home/me', '/home/me'), '/home/me');
  assert.equal(homeRelative('/home/meadow/x', '/home/me'), '/home/meadow/x');
  assert.equal(homeRelative('/srv/x', ''), '/srv/x');
});

test('the nearest folder above that has what the folder lacks; one that cannot be asked is passed by, and said to be', async () => {
  const asked: string[] = [];
  const has = async (folder: string): Promise<boolean> => {
    asked.push(folder);
    if (folder === '/home/me/a/b') throw new Error('the language server is not running');
    return folder === '/home/me/a';
  };
  assert.deepEqual(await nearestAbove('/home/me/a/b/c/d', '/home/me', has), { folder: '/home/me/a', skipped: true });
  assert.deepEqual(asked, ['/home/me/a/b/c', '/home/me/a/b', '/home/me/a']); // no further once found
  // Found before the folder that fails: nothing nearer was passed by.
  assert.deepEqual(await nearestAbove('/home/me/a/x', '/home/me', has), { folder: '/home/me/a', skipped: false });
  assert.deepEqual(await nearestAbove('/home/me/x/y', '/home/me', async () => false), { folder: undefined, skipped: false });
});

test('a hint names the folder above as the user reads it: the parent, or a folder further up', () => {
  assert.equal(aboveName('/home/me/proj', '/home/me/proj/app', '/home/me'), 'the parent folder ~/proj');
  assert.equal(aboveName('/home/me/proj', '/home/me/proj/app/src', '/home/me'), 'the folder ~/proj above it');
});
