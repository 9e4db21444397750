/** The rows' context values the code gives and the `viewItem` clauses of `package.json`'s menus
 * must agree: a value renamed on one side alone leaves a menu that never shows, or a row without
 * its menu. */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

import { ClientCommands, ROW_TOKEN_SEPARATOR, RowContexts, Views } from '../src/ids';
import { fileContextValue, type MemoryNode, memoryNodes } from '../src/memoryTree';
import type { FlatNode, MemoryOverview, ReviewStateName } from '../src/protocol';
import { sessionContextValue } from '../src/sessionTree';
import { NOW, node } from './fixtures';

interface MenuItem {
  command: string;
  when?: string;
}

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as {
  contributes: { menus: Record<string, MenuItem[]>; keybindings: MenuItem[] };
};
const { menus, keybindings } = manifest.contributes;

/** A row as a when clause sees it: its view and its context value. */
interface Row {
  view: string;
  viewItem: string;
}

/** `view == X && viewItem =~ /re/ …` judged on `row`. Any other term fails the test: a clause
 * this cannot judge would be passed by in silence. */
function matches(when: string, row: Row): boolean {
  return when.split('&&').every((term) => {
    const clause = term.trim();
    const equal = /^(view|viewItem) == ([\w.:-]+)$/.exec(clause);
    if (equal) return row[equal[1] as keyof Row] === equal[2];
    const regex = /^viewItem =~ \/(.+)\/(\w*)$/.exec(clause);
    if (regex) return new RegExp(regex[1], regex[2]).test(row.viewItem);
    throw new Error(`a term of "${when}" this test cannot judge: ${clause}`);
  });
}

const REVIEWS: ReviewStateName[] = ['never', 'consolidated', 'no-change', 'failed', 'pending', 'interrupted', 'changed'];
const KINDS: FlatNode['kind'][] = ['root', 'fork', 'subagent', 'branch'];
const FLAGS = [[], ['inline'], ['orphan'], ['cycle']];

/** Every context value a session row can have: the code's answer for each kind of node. */
function sessionValues(): Set<string> {
  const values = new Set<string>();
  for (const kind of KINDS) {
    for (const flags of FLAGS) {
      for (const archived of [false, true]) {
        for (const live of [false, true]) {
          for (const state of REVIEWS) {
            values.add(sessionContextValue(node('s', { kind, flags, archived, live, review: { state, status: null } })));
          }
        }
      }
    }
  }
  return values;
}

const OVERVIEW: MemoryOverview = {
  global: { path: '/h/GLOBAL.md', valid: true, problems: 0 },
  workspace: { key: 'k', folder: '/h/w/k', index: '/h/w/k/MEMORY.md' },
  records: [{ name: 'use-uv', type: 'feedback', description: 'd', path: '/h/w/k/use-uv.md', valid: true, problems: 0 }],
  receipts: [
    { review: 'r1', status: 'committed', session: 's1', title: 't', changes: 1, updatedAt: new Date(NOW).toISOString(), path: '/h/r/r1.json' },
  ],
};

/** Every context value a Memory row has: Global memory, the index, a record, a receipt. */
function memoryValues(): Set<string> {
  const values = new Set<string>();
  const visit = (n: MemoryNode): void => {
    if (n.kind === 'file') values.add(fileContextValue(n));
    if (n.kind === 'section') n.children.forEach(visit);
  };
  memoryNodes(OVERVIEW, { cwd: '/proj', place: 'this workspace', home: '/home/me' }, NOW).forEach(visit);
  return values;
}

const ROWS: Row[] = [
  ...[...sessionValues()].map((viewItem) => ({ view: Views.sessions, viewItem })),
  ...[...memoryValues()].map((viewItem) => ({ view: Views.memory, viewItem })),
];
// Rows that are no session of their own, and receipts (a click opens them): no menu is theirs.
const MENULESS = new Set<string>([RowContexts.branch, RowContexts.inlineSubagent, RowContexts.receipt]);
const ITEM_MENU = menus['view/item/context'];

test('every value of the table is one the code gives a row, or a token of one', () => {
  const tokens = new Set(ROWS.flatMap((row) => row.viewItem.split(ROW_TOKEN_SEPARATOR)));
  for (const value of Object.values(RowContexts)) assert.ok(tokens.has(value), value);
});

test('each item menu matches rows the code draws: its viewItem is a value the code gives', () => {
  assert.ok(ITEM_MENU.length > 0);
  for (const { command, when } of ITEM_MENU) {
    assert.match(when ?? '', /viewItem/, `${command} is on every row of its view`);
    assert.ok(
      ROWS.some((row) => matches(when ?? '', row)),
      `${command}: no row the code draws matches "${when}"`,
    );
  }
});

test('each row the code draws has its menu, but rows that are no session of their own and receipts', () => {
  for (const row of ROWS) {
    const offered = ITEM_MENU.filter(({ when }) => matches(when ?? '', row)).map((m) => m.command);
    if (MENULESS.has(row.viewItem)) assert.deepEqual(offered, [], `${row.viewItem} gets no menu`);
    else assert.ok(offered.length > 0, `${row.view} row "${row.viewItem}" has no menu`);
  }
});

test('a session row\'s menu offers what applies to it, told by its tokens', () => {
  const offered = (viewItem: string) =>
    new Set(ITEM_MENU.filter(({ when }) => matches(when ?? '', { view: Views.sessions, viewItem })).map((m) => m.command));
  const done = offered(sessionContextValue(node('s', { review: { state: 'consolidated', status: null } })));
  const { consolidateSession, archiveSession, showReceipt, restoreSession } = ClientCommands;
  for (const command of [consolidateSession, archiveSession, showReceipt]) assert.ok(done.has(command), command);
  assert.ok(!done.has(restoreSession));
  const archivedLive = offered(sessionContextValue(node('s', { archived: true, live: true })));
  assert.ok(archivedLive.has(restoreSession));
  for (const command of [consolidateSession, archiveSession, showReceipt]) assert.ok(!archivedLive.has(command), command);
});

test('no menu but an item\'s names a row\'s context value, nor does a keybinding', () => {
  // VS Code gives a keybinding's when clause no viewItem: one that names it never fires.
  const rowless = Object.entries(menus).filter(([name]) => name !== 'view/item/context');
  for (const [name, items] of [...rowless, ['keybindings', keybindings] as const]) {
    for (const { command, when } of items) assert.doesNotMatch(when ?? '', /viewItem/, `${name}: ${command}`);
  }
});
