import assert from 'node:assert/strict';
import { test } from 'node:test';

import { folderPlace, memoryNodes } from '../src/memoryTree';
import type { MemoryOverview } from '../src/protocol';
import { HOUR, NOW, PROJ } from './fixtures';

const AT_PROJ = { cwd: '/proj', place: 'this workspace', home: '/home/me' };

const OVERVIEW: MemoryOverview = {
  global: { path: '/h/memory/GLOBAL.md', valid: false, problems: 2 },
  workspace: { key: 'proj-1', folder: '/h/memory/workspaces/proj-1', index: '/h/memory/workspaces/proj-1/MEMORY.md' },
  records: [
    { name: 'use-uv', type: 'feedback', description: 'Use uv', path: '/w/use-uv.md', valid: true, problems: 0 },
    { name: 'arch', type: 'project', description: 'Layout', path: '/w/arch.md', valid: false, problems: 1 },
  ],
  receipts: [
    {
      review: 'r1',
      status: 'failed-provider',
      session: 's1',
      title: 'Fix the parser',
      changes: 0,
      updatedAt: new Date(NOW - HOUR).toISOString(),
      path: '/h/reviews/r1.json',
    },
    {
      review: 'r2',
      status: 'committed',
      session: 's2',
      title: 'Add tests',
      changes: 3,
      updatedAt: new Date(NOW - 2 * HOUR).toISOString(),
      path: '/h/reviews/r2.json',
    },
    {
      review: 'r3',
      status: 'cancelled',
      session: 's3',
      title: 'Try a refactor',
      changes: 0,
      updatedAt: new Date(NOW - 3 * HOUR).toISOString(),
      path: '/h/reviews/r3.json',
    },
  ],
};

test('global, workspace records (sorted, with validity) and receipts, each opening its file', () => {
  const [global, workspace, receipts] = memoryNodes(OVERVIEW, AT_PROJ, NOW);
  assert.equal(global.kind, 'file');
  assert.equal(global.kind === 'file' && global.description, 'Global memory · 2 problems');
  assert.equal(global.kind === 'file' && global.path, '/h/memory/GLOBAL.md');
  assert.equal(workspace.kind === 'section' && workspace.description, '2 records · 1 invalid');
  const records = workspace.kind === 'section' ? workspace.children : [];
  assert.deepEqual(
    records.map((r) => (r.kind === 'file' ? [r.label, r.description, r.icon.id, r.path] : r.kind)),
    [
      ['MEMORY.md', 'index', 'list-unordered', '/h/memory/workspaces/proj-1/MEMORY.md'],
      ['arch', 'project · 1 problem', 'error', '/w/arch.md'],
      ['use-uv', 'feedback · valid', 'pass', '/w/use-uv.md'],
    ],
  );
  const rows = receipts.kind === 'section' ? receipts.children : [];
  assert.deepEqual(
    rows.map((r) => (r.kind === 'file' ? [r.label, r.description, r.icon.id] : r.kind)),
    [
      ['Fix the parser', 'failed-provider · 0 changes · 1 h ago', 'error'],
      ['Add tests', 'committed · 3 changes · 2 h ago', 'pass'],
      ['Try a refactor', 'cancelled · 0 changes · 3 h ago', 'circle-slash'], // the user's choice, no failure
    ],
  );
});

test('an untitled session\'s receipt is named as its picker names it, the whole id in its tooltip', () => {
  const untitled = { ...OVERVIEW.receipts[0], session: 'session-12345678-aaaa', title: '  ' };
  const [, , receipts] = memoryNodes({ ...OVERVIEW, receipts: [untitled] }, AT_PROJ, NOW);
  const [row] = receipts.kind === 'section' ? receipts.children : [];
  assert.equal(row.label, 'Session 12345678');
  assert.match(row.kind === 'file' ? row.tooltip : '', /\nSession session-12345678-aaaa\n/);
});

test('an interrupted review\'s receipt is a warning, not a failure, its tooltip saying how to run it again', () => {
  const stopped = { ...OVERVIEW.receipts[0], status: 'interrupted' };
  const [, , receipts] = memoryNodes({ ...OVERVIEW, receipts: [stopped] }, AT_PROJ, NOW);
  const [row] = receipts.kind === 'section' ? receipts.children : [];
  assert.equal(row.kind, 'file');
  if (row.kind !== 'file') return;
  assert.deepEqual(row.icon, { id: 'warning', color: 'list.warningForeground' });
  assert.match(row.tooltip, /^Stopped without finishing: its process was killed or could not record its end\. /m);
  assert.match(row.tooltip, /Consolidate Session on the session \(Session Branches\), or `remem consolidate s1`, reviews it again\.$/);
});

test('an empty workspace and no receipts say so instead of showing nothing', () => {
  const empty: MemoryOverview = {
    global: { path: '/g', valid: true, problems: 0 },
    workspace: { key: null, folder: null, index: null },
    records: [],
    receipts: [],
  };
  const [global, workspace, receipts] = memoryNodes(empty, AT_PROJ, NOW);
  assert.equal(global.kind === 'file' && global.description, 'Global memory · valid');
  assert.equal(workspace.kind === 'section' && workspace.description, '0 records · no memory folder yet');
  assert.deepEqual(workspace.kind === 'section' && workspace.children.map((c) => c.kind), ['note']);
  assert.deepEqual(receipts.kind === 'section' && receipts.children.map((c) => c.kind), ['note']);
  const said = (folders: typeof PROJ, cwd = '/proj') => {
    const [, , section] = memoryNodes(empty, { ...AT_PROJ, cwd, place: folderPlace(cwd, folders) }, NOW);
    return section.kind === 'section' ? section.children.map((c) => c.label) : [];
  };
  assert.deepEqual(said(PROJ), ['No consolidation has run in this workspace yet.']);
  // A window of several folders has a receipts section under each: whose none has run is named.
  const two = [...PROJ, { name: 'tools', cwd: '/tools' }];
  assert.deepEqual(said(two, '/tools'), ['No consolidation has run in tools yet.']);
  assert.deepEqual(said(two), ['No consolidation has run in proj yet.']);
});

test('a workspace without records names the folder above whose workspace has some', () => {
  const empty: MemoryOverview = { ...OVERVIEW, records: [], workspace: { key: null, folder: null, index: null } };
  const app = { cwd: '/home/me/proj/app', place: 'this workspace', home: '/home/me' };
  const labels = (folder: typeof app & { recordsAbove?: string }) => {
    const [, workspace] = memoryNodes(empty, folder, NOW);
    return workspace.kind === 'section' ? workspace.children.map((c) => c.label) : [];
  };
  assert.deepEqual(labels({ ...app, recordsAbove: '/home/me/proj' }), [
    'No records yet: consolidate a session',
    'Records were kept for the parent folder ~/proj: open it to see them',
  ]);
  assert.deepEqual(labels(app), ['No records yet: consolidate a session']);
});
