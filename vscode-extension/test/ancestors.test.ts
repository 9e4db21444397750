import assert from 'node:assert/strict';
import { test } from 'node:test';

import { aboveName, ancestorsOf, nearestAbove } from '../src/ancestors';

test('the folders above a workspace folder that may be its project: nearest first, never home nor the root', () => {
  assert.deepEqual(ancestorsOf('/home/me/work/proj/app', '/home/me'), ['/home/me/work/proj', '/home/me/work']);
  assert.deepEqual(ancestorsOf('/home/me/proj', '/home/me'), []); // a project at home's top has none
  assert.deepEqual(ancestorsOf('/home/me', '/home/me'), []);
  // Outside the home folder, up to the root, which is left out.
  assert.deepEqual(ancestorsOf('/srv/proj/app', '/home/me'), ['/srv/proj', '/srv']);
  assert.deepEqual(ancestorsOf('/srv', '/home/me'), []);
  assert.deepEqual(ancestorsOf('/home/meadow/proj/app', '/home/me'), ['/home/meadow/proj', '/home/meadow', '/home']);
});

test('the nearest folder above that has what the folder lacks; one that cannot be asked is passed by', async () => {
  const asked: string[] = [];
  const has = async (folder: string): Promise<boolean> => {
    asked.push(folder);
    if (folder === '/srv/a/b') throw new Error('the language server is not running');
    return folder === '/srv/a' || folder === '/srv';
  };
  assert.equal(await nearestAbove('/srv/a/b/c', '/home/me', has), '/srv/a');
  assert.deepEqual(asked, ['/srv/a/b', '/srv/a']); // no further once found
  assert.equal(await nearestAbove('/srv/x', '/home/me', async () => false), undefined);
});

test('a hint names the folder above as the user reads it: the parent, or a folder further up', () => {
  assert.equal(aboveName('/home/me/proj', '/home/me/proj/app', '/home/me'), 'the parent folder ~/proj');
  assert.equal(aboveName('/home/me/proj', '/home/me/proj/app/src', '/home/me'), 'the folder ~/proj above it');
  assert.equal(aboveName('/srv/proj', '/srv/proj/app', '/home/me'), 'the parent folder /srv/proj');
});
