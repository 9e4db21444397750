import assert from 'node:assert/strict';
import { test } from 'node:test';

import { fixesOf, RESTART_SERVER } from '../src/fixes';
import type { FolderElement } from '../src/folderView';
import * as flows from '../src/flows';
import { NO_MODEL, type PickItem } from '../src/picks';
import { SESSIONS_UNREADABLE } from '../src/ids';
import type { FlatNode, HistoryEntry, SessionTreeResult } from '../src/protocol';
import { emptyRows } from '../src/sessionsState';
import { FAMILY, NOW, node } from './fixtures';

/** A scripted UI and server that record what the flow asked and sent. */
class Harness implements flows.Ui, flows.Server {
  readonly asked: string[] = [];
  readonly placeholders: string[] = [];
  readonly sent: Array<[string, object]> = [];
  readonly opened: string[] = [];
  picks: Array<(items: PickItem[]) => PickItem | undefined> = [];
  inputs: Array<string | undefined> = [];
  confirmAnswer = true;
  infoAnswers: Array<string | undefined> = [];
  confirmed: Array<[string, string]> = [];
  responses: Record<string, unknown> = { 'remem/settings': ROUTE, 'remem/models': UNLISTED };
  folders: flows.Folder[] = [{ name: 'proj', cwd: '/proj' }];
  active: string | undefined = undefined;
  copied: string[] = [];
  sessionRefreshes = 0;
  memoryRefreshes = 0;

  readonly ctx: flows.FlowContext = {
    ui: this,
    server: this,
    folders: () => this.folders,
    now: () => NOW,
    activeSession: () => this.active,
    refreshSessions: () => this.sessionRefreshes++,
    refreshMemory: () => this.memoryRefreshes++,
  };

  async pick<T extends PickItem>(items: T[], options: { title: string; placeholder: string }) {
    this.asked.push(`pick:${options.title}:${items.map((i) => i.label).join('|')}`);
    this.placeholders.push(options.placeholder);
    const answer = this.picks.shift();
    assert.ok(answer, `unexpected pick: ${options.placeholder}`);
    return answer(items) as T | undefined;
  }
  readonly prompts: string[] = [];
  async input(options: { title: string; prompt: string; value?: string }) {
    this.asked.push(`input:${options.value ?? ''}`);
    this.prompts.push(options.prompt);
    return this.inputs.shift();
  }
  async confirm(message: string, detail: string) {
    this.confirmed.push([message, detail]);
    return this.confirmAnswer;
  }
  readonly offered: string[][] = []; // the actions of each info and warning, in order
  /** As in VS Code, a message nobody clicks settles only once closed (`closeMessages`); by default
   * the fake answers each at once. */
  messagesStayOpen = false;
  private readonly open: Array<() => void> = [];
  async info(message: string, ...actions: string[]) {
    this.asked.push(`info:${message}`);
    this.offered.push(actions);
    return this.answered(this.infoAnswers.shift());
  }
  warnings: string[] = [];
  warnAnswers: Array<string | undefined> = [];
  problemsShown = 0;
  async warn(message: string, ...actions: string[]) {
    this.warnings.push(message);
    this.offered.push(actions);
    return this.answered(this.warnAnswers.shift());
  }
  private answered(answer: string | undefined): Promise<string | undefined> {
    if (answer !== undefined || !this.messagesStayOpen) return Promise.resolve(answer);
    return new Promise((resolve) => this.open.push(() => resolve(undefined)));
  }
  closeMessages() {
    for (const close of this.open.splice(0)) close();
  }
  async showProblems() {
    this.problemsShown++;
  }
  async copy(text: string) {
    this.copied.push(text);
  }
  async openDiff(left: string, right: string, title: string) {
    this.opened.push(`diff:${left} ↔ ${right} · ${title}`);
  }
  async openFile(path: string) {
    this.opened.push(path);
  }
  async openTranscript(session: string, title?: string, turn?: number, keepFocus?: boolean) {
    const at = turn === undefined ? '' : `@${turn}`;
    this.opened.push(`transcript:${session}${title ? `:${title}` : ''}${at}${keepFocus ? ' (focus kept)' : ''}`);
  }
  async openReceipt(review: string, title?: string) {
    this.opened.push(`receipt:${review}${title ? `:${title}` : ''}`);
  }
  /** Each status-bar progress shown, with the requests sent while it showed. */
  readonly busyWith: Array<[string, string[]]> = [];
  private sentWhileBusy: string[] | undefined;
  async busy<T>(message: string, task: () => Promise<T>): Promise<T> {
    const sent: string[] = [];
    this.busyWith.push([message, sent]);
    this.sentWhileBusy = sent;
    try {
      return await task();
    } finally {
      this.sentWhileBusy = undefined;
    }
  }
  async request<R>(method: string, params: object): Promise<R> {
    this.sent.push([method, params]);
    this.sentWhileBusy?.push(method);
    const response = this.responses[method];
    return (typeof response === 'function' ? response(params) : response) as R; // a function answers by params
  }
  async command<R>(id: string, arg: object): Promise<R> {
    this.sent.push([id, arg]);
    return this.responses[id] as R;
  }
}

const ROUTE = {
  provider: 'deepseek',
  model: 'deepseek-v4-flash',
  providers: ['deepseek', 'openai', 'ollama'],
  apiKeyEnv: 'DEEPSEEK_API_KEY',
  revision: 'r',
  keyReady: true,
  keyProblem: null,
  settingsFile: '/h/settings.yml',
};
const UNLISTED = { provider: 'openai', keyReady: true, keyProblem: null, models: [], note: 'HTTP 404' };
const NO_KEY = { ...ROUTE, keyReady: false, keyProblem: 'no API key for provider `deepseek`: set DEEPSEEK_API_KEY' };
const byLabel = (label: string) => (items: PickItem[]) => items.find((i) => i.label === label);
const TURNS = {
  turns: [
    { turn: 1, startSeq: 0, endSeq: 5, status: 'completed', user: 'one', forkable: true },
    { turn: 2, startSeq: 6, endSeq: 9, status: 'completed', user: 'two', forkable: true },
  ],
};

test('consolidate from the palette: pick among eligible sessions, then run the server command', async () => {
  const h = new Harness();
  h.responses['remem/sessionTree'] = { nodes: FAMILY };
  h.picks.push(byLabel('Title of session-main'));
  await flows.run(() => flows.consolidateSession(h.ctx));
  assert.deepEqual(h.asked, [
    'pick:Remem: Consolidate Session:After turn 2 · Title of session-fork|Title of session-main',
  ]);
  assert.deepEqual(h.sent, [
    ['remem/sessionTree', { cwd: '/proj' }], // whether there is any to consolidate
    ['remem/settings', {}], // the route is checked before a session is asked for
    ['remem.lsp.consolidate', { session: 'session-main' }],
  ]);
  assert.equal(h.sessionRefreshes, 1);
  assert.equal(h.memoryRefreshes, 1);
});

test('consolidate from the palette reads the sessions under a status-bar progress, the key asked after it', async () => {
  const h = new Harness();
  h.responses['remem/sessionTree'] = { nodes: FAMILY };
  h.responses['remem/settings'] = NO_KEY; // the warning that asks for a key is no progress's
  await flows.run(() => flows.consolidateSession(h.ctx));
  assert.deepEqual(h.busyWith, [[flows.READING_SESSIONS, ['remem/sessionTree']]]);
  assert.equal(flows.READING_SESSIONS, "Reading this workspace's sessions…");
  assert.equal(h.warnings.length, 1);
});

test('every read of the sessions a command waits on is under the status-bar progress, not only a picker\'s', async () => {
  const reads = [['remem/sessionTree']]; // one progress, the one read made while it showed
  // A link's session named by id only: its tab is named as the tree names it.
  const link = new Harness();
  link.responses['remem/sessionTree'] = { nodes: [node('s1')] };
  await flows.run(() => flows.openTranscript(link.ctx, { session: 's1' }));
  assert.deepEqual(link.opened, ['transcript:s1:Title of s1']);
  assert.deepEqual(link.busyWith, reads.map((sent) => [flows.READING_SESSIONS, sent]));
  // A key on a row drawn archived: whether it still is is read again before it acts.
  const key = new Harness();
  key.responses['remem/sessionTree'] = { nodes: [node('s1')] };
  await flows.run(() => flows.setArchived(key.ctx, { type: 'session', cwd: '/proj', node: node('s1', { archived: true }) }, true));
  assert.deepEqual(key.sent.at(-1), ['remem.lsp.archive', { session: 's1' }]);
  assert.deepEqual(key.busyWith, reads.map((sent) => [flows.READING_SESSIONS, sent]));
});

test('consolidate from a tree item asks nothing; a dismissed pick sends nothing', async () => {
  const h = new Harness();
  await flows.run(() => flows.consolidateSession(h.ctx, { type: 'session', cwd: '/proj', node: node('s9') }));
  assert.deepEqual(h.sent.slice(1), [['remem.lsp.consolidate', { session: 's9' }]]);

  const dismissed = new Harness();
  dismissed.responses['remem/sessionTree'] = { nodes: FAMILY };
  dismissed.picks.push(() => undefined);
  await flows.run(() => flows.consolidateSession(dismissed.ctx));
  assert.deepEqual(dismissed.sent, [
    ['remem/sessionTree', { cwd: '/proj' }],
    ['remem/settings', {}],
  ]);
});

test('with nothing eligible the user is told why instead of seeing an empty picker', async () => {
  const h = new Harness();
  h.responses['remem/sessionTree'] = { nodes: [node('busy', { live: true })] };
  await flows.run(() => flows.consolidateSession(h.ctx));
  assert.equal(h.asked.length, 1);
  assert.match(h.asked[0], /^info:No session of this workspace can be consolidated now: live and archived sessions cannot, nor subagents/);
  assert.deepEqual(h.sent, [['remem/sessionTree', { cwd: '/proj' }]]); // no route checked for nothing
  // A folder no agent has worked in yet is not told its sessions are live or archived.
  const empty = new Harness();
  empty.responses['remem/sessionTree'] = { nodes: [] };
  await flows.run(() => flows.consolidateSession(empty.ctx));
  assert.deepEqual(empty.asked, [`info:${flows.NO_SESSIONS_YET}`]);
  assert.match(flows.NO_SESSIONS_YET, /no agent sessions yet/);
});

/** Each palette command that picks a session, and the picker's sentence when the folder has
 * sessions but none it would offer (undefined: it offers every session). */
type Picker = [string, (ctx: flows.FlowContext) => Promise<unknown>, FlatNode[], RegExp | undefined];
const PICKERS: Picker[] = [
  [
    'Consolidate Session',
    (ctx) => flows.consolidateSession(ctx),
    [node('busy', { live: true })],
    /^No session of this workspace can be consolidated now/,
  ],
  ['Branch from Turn', (ctx) => flows.branchFromTurn(ctx), [], undefined],
  ['Open Session Transcript', (ctx) => flows.openTranscript(ctx), [], undefined],
  ['Rename Session', (ctx) => flows.renameSession(ctx), [], undefined],
  [
    'Archive Session',
    (ctx) => flows.setArchived(ctx, undefined, true),
    [node('old', { archived: true })],
    /^Every session of this workspace is archived already\.$/,
  ],
  ['Restore Session', (ctx) => flows.setArchived(ctx, undefined, false), [node('s1')], /^No session of this workspace is archived: there is nothing to restore\.$/],
];
const UNREADABLE = { path: '/h/.claude/projects/-proj', message: 'Permission denied' };

test('every session picker of a folder whose sessions could not be read says so with why, not that it has none', async () => {
  for (const [name, flow] of PICKERS) {
    const unread = new Harness();
    unread.responses['remem/sessionTree'] = { nodes: [], errors: [UNREADABLE] };
    await flows.run(() => flow(unread.ctx));
    // In the words of the view's empty state, then the daemon's.
    const [viewSays] = emptyRows(unread.responses['remem/sessionTree'] as SessionTreeResult, '/proj', '/h');
    assert.equal(viewSays.label, SESSIONS_UNREADABLE);
    // A warning, which the user must notice: not information that none are there.
    assert.deepEqual(unread.warnings, [`${SESSIONS_UNREADABLE}: /h/.claude/projects/-proj: Permission denied.`], name);
    assert.deepEqual(unread.asked, [], name);
    // Several: the first said, the others counted, where the view lists them.
    const several = new Harness();
    const another = { path: '/h/.codex/sessions', message: 'Input/output error.' };
    several.responses['remem/sessionTree'] = { nodes: [], errors: [UNREADABLE, another] };
    await flows.run(() => flow(several.ctx));
    assert.deepEqual(several.warnings, [
      `${SESSIONS_UNREADABLE}: /h/.claude/projects/-proj: Permission denied (and 1 more, which Session Branches lists).`,
    ], name);
    // None there and nothing unread: none yet, and where they come from, as information.
    const empty = new Harness();
    empty.responses['remem/sessionTree'] = { nodes: [] };
    await flows.run(() => flow(empty.ctx));
    assert.deepEqual(empty.asked, [`info:${flows.NO_SESSIONS_YET}`], name);
    assert.deepEqual(empty.warnings, [], name);
  }
  assert.match(flows.NO_SESSIONS_YET, /no agent sessions yet: they appear once Claude Code, Codex or DSH has worked in this folder/);
});

test('a picker with sessions but none to offer says why, and whether some could not be read', async () => {
  for (const [name, flow, nodes, none] of PICKERS) {
    if (!none) continue;
    const h = new Harness();
    h.responses['remem/sessionTree'] = { nodes };
    await flows.run(() => flow(h.ctx));
    assert.equal(h.asked.length, 1, name);
    assert.match(h.asked[0].replace(/^info:/, ''), none, name);
    // What could not be read may be the session looked for: said after why.
    const partly = new Harness();
    partly.responses['remem/sessionTree'] = { nodes, errors: [UNREADABLE] };
    await flows.run(() => flow(partly.ctx));
    assert.deepEqual(partly.warnings, [
      `${h.asked[0].replace(/^info:/, '')} Some of this workspace's sessions could not be read: /h/.claude/projects/-proj: Permission denied.`,
    ], name);
    assert.deepEqual(partly.asked, [], name);
  }
});

test('review receipts that cannot be read leave a folder without sessions one with none yet, and nothing to consolidate', async () => {
  const reviews = { path: '/h/.remem/memory/reviews', message: 'the review receipts cannot be read', kind: 'reviews' as const };
  for (const [name, flow] of PICKERS) {
    const empty = new Harness();
    empty.responses['remem/sessionTree'] = { nodes: [], errors: [reviews] };
    await flows.run(() => flow(empty.ctx));
    // Every session there was read: none is there yet, not none could be read.
    assert.deepEqual([...empty.asked, ...empty.warnings].map((m) => m.replace(/^info:/, '')), [flows.NO_SESSIONS_YET], name);
  }
  const h = new Harness();
  h.responses['remem/sessionTree'] = { nodes: [node('done', { review: { state: 'unknown' } })], errors: [reviews] };
  await flows.run(() => flows.consolidateSession(h.ctx));
  // Not offered, where its review was refused HOME_UNUSABLE once picked; why is said.
  assert.deepEqual(h.sent, [['remem/sessionTree', { cwd: '/proj' }]]);
  assert.match([...h.asked, ...h.warnings].join('\n'), /nor any while the review receipts cannot be read \(Session Branches says why\)\.$/);
});

test('with no key and nothing to consolidate, only that is said: no key is asked for in vain', async () => {
  for (const nodes of [[], [node('busy', { live: true })]]) {
    const h = new Harness();
    h.responses['remem/settings'] = NO_KEY;
    h.responses['remem/sessionTree'] = { nodes };
    await flows.run(() => flows.consolidateSession(h.ctx));
    assert.equal(h.asked.length, 1);
    assert.match(h.asked[0], /^info:(This workspace has no agent sessions yet|No session of this workspace can be consolidated)/);
    assert.deepEqual(h.warnings, [], 'no key asked for');
    assert.deepEqual(h.sent, [['remem/sessionTree', { cwd: '/proj' }]]);
  }
  // With one to consolidate, the key is asked for before the pick (decision 0102).
  const h = new Harness();
  h.responses['remem/settings'] = NO_KEY;
  h.responses['remem/sessionTree'] = { nodes: [node('s1')] };
  await flows.run(() => flows.consolidateSession(h.ctx));
  assert.equal(h.warnings.length, 1);
  assert.match(h.warnings[0], /^Remem cannot consolidate yet/);
  assert.deepEqual(h.asked, [], 'no session picked before the key');
});

test('branch: pick session and turn, confirm the warning, fork with confirmed: true', async () => {
  const h = new Harness();
  h.responses['remem/sessionTree'] = { nodes: FAMILY };
  h.responses['remem/sessionTurns'] = TURNS;
  h.responses['remem.lsp.fork'] = { id: 'session-child' };
  h.picks.push(byLabel('Title of session-main'), byLabel('Turn 1'));
  let child: string | null = null;
  await flows.run(async () => {
    child = await flows.branchFromTurn(h.ctx);
  });
  assert.equal(child, 'session-child');
  assert.deepEqual(h.confirmed, [['Branch the session after turn 1?', flows.BRANCH_WARNING]]);
  assert.match(flows.BRANCH_WARNING, /copies the conversation only/);
  assert.match(flows.BRANCH_WARNING, /files .* and external side effects .* are not rolled back/);
  assert.deepEqual(h.sent.slice(1), [
    ['remem/sessionTurns', { id: 'session-main' }],
    ['remem.lsp.fork', { session: 'session-main', turn: 1, confirmed: true }],
  ]);
  assert.equal(h.sessionRefreshes, 1);
  // Success says so, opens the child (its tab named, never a bare id) and offers its id to resume it.
  assert.deepEqual(h.opened, ['transcript:session-child:After turn 1 of Title of session-main']);
  assert.equal(
    h.asked.at(-1),
    'info:Branched “Title of session-main” after turn 1: the new session is open. Resume it in DSH by its id.',
  );
  assert.deepEqual(h.copied, []);
});

test('branch from the palette offers the transcript in the active editor first; its id can be copied', async () => {
  const h = new Harness();
  h.active = 'session-fork';
  h.infoAnswers.push(flows.COPY_ID);
  h.responses['remem/sessionTree'] = { nodes: FAMILY };
  h.responses['remem/sessionTurns'] = TURNS;
  h.responses['remem.lsp.fork'] = { id: 'session-child' };
  let offered: PickItem[] = [];
  h.picks.push((items) => {
    offered = items;
    return items[0];
  }, byLabel('Turn 2'));
  await flows.run(() => flows.branchFromTurn(h.ctx));
  assert.equal(offered[0].label, 'After turn 2 · Title of session-fork');
  assert.match(offered[0].description ?? '', /^open in the editor · /);
  assert.equal(offered.length, FAMILY.length);
  assert.deepEqual(h.sent.at(-1), ['remem.lsp.fork', { session: 'session-fork', turn: 2, confirmed: true }]);
  assert.deepEqual(h.copied, ['session-child']);
});

test('a Claude Code or Codex branch names the whole command that resumes it, which can be copied', async () => {
  const h = new Harness();
  h.infoAnswers.push(flows.COPY_RESUME);
  const command = "cd '/w/my app' && CLAUDE_CONFIG_DIR=/x/claude-config claude --resume cc-child";
  h.responses['remem.lsp.fork'] = { id: 'cc-child', command, note: null };
  await flows.run(() => flows.branchFromTurn(h.ctx, { session: 'session-main', turn: 1 }));
  assert.ok((h.asked.at(-1) ?? '').endsWith(`Resume it with \`${command}\`.`), h.asked.at(-1));
  assert.deepEqual(h.copied, [command]);
});

test('a branch whose session folder is gone names its command and why it fails now', async () => {
  const h = new Harness();
  h.infoAnswers.push(flows.COPY_RESUME);
  const command = "cd /w/gone && claude --resume cc-child";
  const note = "the session's folder /w/gone is not there any more: the command's `cd` fails until the folder is made again";
  h.responses['remem.lsp.fork'] = { id: 'cc-child', command, note };
  await flows.run(() => flows.branchFromTurn(h.ctx, { session: 'session-main', turn: 1 }));
  assert.ok((h.asked.at(-1) ?? '').endsWith(`Resume it with \`${command}\`. Note: ${note}.`), h.asked.at(-1));
  assert.deepEqual(h.copied, [command]);
});

test('a branch its harness would not find says where the harness looks, and offers its id', async () => {
  const h = new Harness();
  h.infoAnswers.push(flows.COPY_ID);
  const note = 'Claude Code does not look in /copies/-w: it resumes sessions from $CLAUDE_CONFIG_DIR/projects only';
  h.responses['remem.lsp.fork'] = { id: 'cc-child', command: null, note };
  await flows.run(() => flows.branchFromTurn(h.ctx, { session: 'session-main', turn: 1 }));
  assert.ok((h.asked.at(-1) ?? '').endsWith(`the new session is open. ${note}.`), h.asked.at(-1));
  assert.ok(!(h.asked.at(-1) ?? '').includes('DSH'));
  assert.deepEqual(h.copied, ['cc-child']);
});

test('a branch sends the revision its turn was chosen from: of the turns picked, or of the lens\'s text', async () => {
  const h = new Harness();
  h.responses['remem/sessionTurns'] = { ...TURNS, revision: 'rev-picked' };
  h.responses['remem.lsp.fork'] = { id: 'session-child' };
  h.picks.push(byLabel('Turn 2'));
  await flows.run(() => flows.branchFromTurn(h.ctx, { session: 'session-main' }));
  assert.deepEqual(
    h.sent.find(([id]) => id === 'remem.lsp.fork'),
    ['remem.lsp.fork', { session: 'session-main', turn: 2, confirmed: true, expectedRevision: 'rev-picked' }],
  );
  // A transcript's lens names the turn and the revision of the text it sits in: nothing is read first.
  const lens = new Harness();
  lens.responses['remem.lsp.fork'] = { id: 'session-child' };
  await flows.run(() =>
    flows.branchFromTurn(lens.ctx, { session: 'session-main', turn: 2, expectedRevision: 'rev-shown' }),
  );
  assert.deepEqual(lens.sent[0], [
    'remem.lsp.fork',
    { session: 'session-main', turn: 2, confirmed: true, expectedRevision: 'rev-shown' },
  ]);
});

test('a branch from a session that changed since its turns were shown says so and shows it again', async () => {
  const h = new Harness();
  const stale = Object.assign(new Error("session 'cc' changed since revision rev-shown (now rev-new)"), {
    data: { code: 'STALE_SOURCE' },
  });
  h.command = async <R>(id: string, arg: object): Promise<R> => {
    h.sent.push([id, arg]);
    throw stale;
  };
  let child: string | null = 'unset';
  await flows.run(async () => {
    child = await flows.branchFromTurn(h.ctx, { session: 'cc', turn: 2, expectedRevision: 'rev-shown' });
  });
  assert.equal(child, 'unset'); // stopped: no branch, and no error
  assert.deepEqual(h.warnings, [flows.STALE_BRANCH]);
  assert.match(flows.STALE_BRANCH, /^Nothing was branched: the session changed since its turns were shown/);
  assert.equal(h.sessionRefreshes, 1); // the tree and the open transcripts are read again
  assert.deepEqual(h.opened, []);
  // Any other refusal is the command's error, as before.
  h.command = async <R>(): Promise<R> => {
    throw Object.assign(new Error('turn 2 is open'), { data: { code: 'OPEN_TURN' } });
  };
  await assert.rejects(() => flows.run(() => flows.branchFromTurn(h.ctx, { session: 'cc', turn: 2 })), /is open/);
});

test('branch declined at the confirmation forks nothing', async () => {
  const h = new Harness();
  h.confirmAnswer = false;
  let child: string | null = 'unset';
  await flows.run(async () => {
    child = await flows.branchFromTurn(h.ctx, { session: 's1', turn: 4 });
  });
  assert.equal(child, null);
  assert.deepEqual(h.sent, []);
  assert.equal(h.confirmed[0][0], 'Branch the session after turn 4?');
});

test('a session with no completed turn cannot be branched, and says so', async () => {
  const h = new Harness();
  h.responses['remem/sessionTurns'] = {
    turns: [{ turn: 1, startSeq: 0, endSeq: null, status: 'open', user: 'x', forkable: false }],
  };
  await flows.run(() => flows.branchFromTurn(h.ctx, 's1'));
  assert.deepEqual(h.asked, ['info:This session has no completed turn to branch after yet.']);
  assert.equal(h.confirmed.length, 0);
});

test('with several folders the user picks one; with none the flow explains', async () => {
  const h = new Harness();
  h.folders = [
    { name: 'a', cwd: '/a' },
    { name: 'b', cwd: '/b' },
  ];
  h.responses['remem/sessionTree'] = { nodes: [node('s1')] };
  h.picks.push(byLabel('b'), byLabel('Title of s1'));
  await flows.run(() => flows.openTranscript(h.ctx));
  assert.deepEqual(h.sent, [['remem/sessionTree', { cwd: '/b' }]]);
  assert.deepEqual(h.opened, ['transcript:s1:Title of s1']); // the tab reads the title
  // A record's provenance lens names the session, its title and the turn: nothing is asked.
  await flows.run(() => flows.openTranscript(h.ctx, { session: 's1', turn: 2, label: 'Fix the uploader' }));
  assert.equal(h.opened.at(-1), 'transcript:s1:Fix the uploader@2');
  // A tree row's click leaves the focus on the row, so its keys (F2, Delete) act on it.
  await flows.run(() => flows.openTranscript(h.ctx, { session: 's1', label: 'Fix the uploader', keepFocus: true }));
  assert.equal(h.opened.at(-1), 'transcript:s1:Fix the uploader (focus kept)');

  const none = new Harness();
  none.folders = [];
  await flows.run(() => flows.openWorkspaceMemory(none.ctx));
  assert.deepEqual(none.asked, ['info:Remem works per workspace: open a folder first.']);
});

test('Global memory opens with no folder open, and with several without asking which', async () => {
  for (const folders of [[], [{ name: 'a', cwd: '/a' }, { name: 'b', cwd: '/b' }]]) {
    const h = new Harness();
    h.folders = folders;
    h.responses['remem/settings'] = { ...ROUTE, globalFile: '/h/GLOBAL.md' };
    await flows.run(() => flows.openGlobalMemory(h.ctx));
    assert.deepEqual(h.asked, [], `${folders.length} folders: nothing asked`);
    assert.deepEqual(h.opened, ['/h/GLOBAL.md']);
    assert.deepEqual(h.sent, [['remem/settings', {}]]);
  }
  // A server that does not name the file: the workspace's overview does.
  const older = new Harness();
  older.responses['remem/memoryOverview'] = OVERVIEW;
  await flows.run(() => flows.openGlobalMemory(older.ctx));
  assert.deepEqual(older.opened, ['/h/GLOBAL.md']);
});

test('with no folder open, Show Memory History shows Global memory\'s', async () => {
  const entry = ENTRY('e'.repeat(40), 'd'.repeat(40), {
    scope: 'global',
    workspace: null,
    actor: { kind: 'cli' },
    stat: { added: [], changed: ['GLOBAL'], removed: [], insertions: 1, deletions: 0 },
  });
  for (const arg of [undefined, { node: { path: '/h/GLOBAL.md' } }]) {
    const h = new Harness();
    h.folders = [];
    h.responses['remem/settings'] = { ...ROUTE, globalFile: '/h/GLOBAL.md' };
    h.responses['remem/memoryHistory'] = { scope: 'global', workspace: null, entries: [entry] };
    h.picks.push((items) => items[0]);
    await flows.run(() => flows.showMemoryHistory(h.ctx, arg));
    assert.ok(!h.asked.some((a) => a.includes('open a folder')), JSON.stringify(h.asked));
    assert.deepEqual(h.sent.find(([method]) => method === 'remem/memoryHistory'), ['remem/memoryHistory', {}]);
    assert.match(h.asked[0], /^pick:Remem: History of Global memory:/);
    assert.match(h.opened[0], /\/GLOBAL\.md · GLOBAL\.md: /);
  }
});

const OVERVIEW = {
  global: { path: '/h/GLOBAL.md', valid: true, problems: 0 },
  workspace: { key: 'k', folder: '/h/w/k', index: '/h/w/k/MEMORY.md' },
  records: [],
  receipts: [
    { review: 'r1', status: 'committed', session: 's1', title: 'T', changes: 1, updatedAt: '', path: '/h/r1.json' },
  ],
};

test('memory files open where the overview says they are', async () => {
  const h = new Harness();
  h.responses['remem/memoryOverview'] = OVERVIEW;
  await flows.run(() => flows.openGlobalMemory(h.ctx));
  await flows.run(() => flows.openWorkspaceMemory(h.ctx));
  await flows.run(() => flows.showReceipt(h.ctx, { type: 'session', cwd: '/proj', node: node('s1') }));
  await flows.run(() => flows.showReceipt(h.ctx, { type: 'memory', cwd: '/proj', node: { path: '/h/r7.json' } }));
  h.responses['remem/receipt'] = { review: 'r8', status: 'committed', session: 's8', path: '/h/r8.json', text: '{}' };
  await flows.run(() => flows.showReceipt(h.ctx, { review: 'r8' }));
  // A receipt opens rendered, its tab named by the session's title; a bare file path opens the file.
  assert.deepEqual(h.opened, ['/h/GLOBAL.md', '/h/w/k/MEMORY.md', 'receipt:r1:T', '/h/r7.json', 'receipt:r8']);
  assert.deepEqual(h.sent.at(-1), ['remem/receipt', { review: 'r8' }]);

  const fresh = new Harness();
  fresh.responses['remem/memoryOverview'] = { ...OVERVIEW, workspace: { key: null, folder: null, index: null } };
  await flows.run(() => flows.openWorkspaceMemory(fresh.ctx));
  assert.match(fresh.asked[0], /^info:This workspace has no memory yet/);
  assert.deepEqual(fresh.opened, []);
});

test('Show Receipt in a workspace with none says none of its sessions was consolidated, not that no consolidation ran', async () => {
  // Another folder of the window may have receipts: the overview lists this one's.
  const h = new Harness();
  h.folders = [
    { name: 'a', cwd: '/a' },
    { name: 'b', cwd: '/b' },
  ];
  h.responses['remem/memoryOverview'] = { ...OVERVIEW, receipts: [] };
  h.picks.push(byLabel('b'));
  await flows.run(() => flows.showReceipt(h.ctx));
  assert.deepEqual(h.sent, [['remem/memoryOverview', { cwd: '/b' }]]);
  assert.deepEqual(h.asked.slice(1), [
    'info:No session of this workspace has been consolidated yet: "Remem: Consolidate Session" consolidates one and writes its receipt.',
  ]);
  // A session's own: among this workspace's newest, and the command that lists all of them.
  const session = new Harness();
  session.responses['remem/memoryOverview'] = OVERVIEW;
  await flows.run(() => flows.showReceipt(session.ctx, { type: 'session', cwd: '/proj', node: node('s2') }));
  assert.deepEqual(session.asked, ["info:No receipt of session s2 among this workspace's 20 most recent; `remem receipts --session s2` lists all."]);
});

test('select model: the provider\'s listed models are picked, the key state in the title; Type… types one', async () => {
  const h = new Harness();
  h.responses['remem/models'] = { ...UNLISTED, provider: 'deepseek', models: ['deepseek-v4-pro', 'deepseek-v4-flash'] };
  h.responses['remem.lsp.selectModel'] = { ...ROUTE, model: 'deepseek-v4-pro' };
  h.picks.push(byLabel('deepseek'), byLabel('deepseek-v4-pro'));
  await flows.run(() => flows.selectModel(h.ctx));
  assert.deepEqual(h.sent.slice(1), [
    ['remem/models', { provider: 'deepseek' }],
    ['remem.lsp.selectModel', { provider: 'deepseek', model: 'deepseek-v4-pro' }],
  ]);
  // The current model first and marked, then the rest as listed, then a way to type another.
  assert.equal(
    h.asked[1],
    'pick:Remem: model of deepseek — its route has a key:deepseek-v4-flash|deepseek-v4-pro|Type a model id…',
  );

  const typed = new Harness();
  typed.responses['remem/models'] = { ...NO_KEY_LIST, models: ['gpt-5'] };
  typed.responses['remem.lsp.selectModel'] = { ...ROUTE, provider: 'openai', model: 'gpt-x' };
  typed.picks.push(byLabel('openai'), byLabel('Type a model id…'));
  typed.inputs.push('gpt-x');
  await flows.run(() => flows.selectModel(typed.ctx));
  assert.match(typed.asked[1], /^pick:Remem: model of openai — no API key yet \(no API key for provider `openai`/);
  assert.deepEqual(typed.sent.at(-1), ['remem.lsp.selectModel', { provider: 'openai', model: 'gpt-x' }]);
});

const NO_KEY_LIST = {
  provider: 'openai',
  keyReady: false,
  keyProblem: 'no API key for provider `openai`: set OPENAI_API_KEY',
  models: [],
  note: 'without its key the provider cannot list its models',
};

test('select model: provider pick, model input prefilled for the current provider, then the command', async () => {
  const h = new Harness();
  h.responses['remem.lsp.selectModel'] = { ...ROUTE, provider: 'openai', model: 'gpt-5', apiKeyEnv: 'OPENAI_API_KEY' };
  h.picks.push(byLabel('openai'));
  h.inputs.push('  gpt-5 ');
  await flows.run(() => flows.selectModel(h.ctx));
  assert.deepEqual(h.sent[2], ['remem.lsp.selectModel', { provider: 'openai', model: 'gpt-5' }]);
  assert.deepEqual(h.asked.slice(1), ['input:', 'info:Consolidation now uses openai / gpt-5; its API key is set.']);

  // A route without a key says so and offers to enter one.
  const keyless = new Harness();
  keyless.responses['remem.lsp.selectModel'] = { ...NO_KEY, provider: 'openai', model: 'gpt-5' };
  keyless.picks.push(byLabel('openai'));
  keyless.inputs.push('gpt-5');
  keyless.warnAnswers.push(undefined);
  await flows.run(() => flows.selectModel(keyless.ctx));
  assert.match(keyless.warnings[0], /^Consolidation now uses openai \/ gpt-5, but it has no API key yet: no API key/);
});

test('no key: before any session is asked for, Enter API Key… stores it and the consolidation goes on', async () => {
  const h = new Harness();
  h.responses['remem/settings'] = NO_KEY;
  h.responses['remem.lsp.setApiKey'] = ROUTE;
  h.warnAnswers.push(flows.ENTER_KEY);
  h.inputs.push(' sk-typed ');
  await flows.run(() => flows.consolidateSession(h.ctx, 's1'));
  assert.match(h.warnings[0], /^Remem cannot consolidate yet: no API key for provider `deepseek`/);
  assert.deepEqual(h.sent, [
    ['remem/settings', {}],
    ['remem.lsp.setApiKey', { provider: 'deepseek', apiKey: 'sk-typed' }],
    ['remem.lsp.consolidate', { session: 's1' }],
  ]);
});

test('no key: after Select Consolidation Model the consolidation goes on while the message saying the model stays open', async () => {
  const h = new Harness();
  h.messagesStayOpen = true;
  h.responses['remem/settings'] = NO_KEY;
  h.responses['remem.lsp.selectModel'] = { ...ROUTE, provider: 'openai', model: 'gpt-5', apiKeyEnv: 'OPENAI_API_KEY' };
  h.warnAnswers.push(flows.SELECT_MODEL);
  h.picks.push(byLabel('openai'));
  h.inputs.push('gpt-5');
  const running = flows.run(() => flows.consolidateSession(h.ctx, 's1'));
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(h.asked.at(-1), 'info:Consolidation now uses openai / gpt-5; its API key is set.');
  assert.deepEqual(h.sent.at(-1), ['remem.lsp.consolidate', { session: 's1' }], 'not waiting for the message to close');
  h.closeMessages();
  await running;
});

test('no key: Open Settings opens settings.yml and nothing is consolidated; a dismissal neither', async () => {
  const h = new Harness();
  h.responses['remem/settings'] = NO_KEY;
  h.warnAnswers.push(flows.OPEN_SETTINGS, undefined);
  await flows.run(() => flows.consolidateSession(h.ctx, 's1'));
  await flows.run(() => flows.consolidateSession(h.ctx, 's1'));
  assert.deepEqual(h.opened, ['/h/settings.yml']);
  assert.deepEqual(h.sent, [
    ['remem/settings', {}],
    ['remem/settings', {}],
  ]);
});

test('invalid memory is a refusal that points to the Problems panel, not an error', async () => {
  const h = new Harness();
  const refusal = Object.assign(new Error('workspace memory is invalid; fix memory first'), {
    data: { code: 'MEMORY_INVALID', files: ['/h/memory/workspaces/p/broken.md', '/h/memory/GLOBAL.md'] },
  });
  h.command = async <R>(id: string, arg: object): Promise<R> => {
    h.sent.push([id, arg]);
    throw refusal;
  };
  h.warnAnswers.push(flows.SHOW_PROBLEMS);
  await flows.run(() => flows.consolidateSession(h.ctx, 's1'));
  assert.deepEqual(h.warnings, ['Not consolidated: workspace memory is invalid; fix memory first']);
  assert.equal(h.problemsShown, 1);
  // The first file to fix is opened, so that the language server judges it for the panel.
  assert.deepEqual(h.opened, ['/h/memory/workspaces/p/broken.md']);
  assert.equal(h.sent.filter(([id]) => id === 'remem.lsp.consolidate').length, 1);
});

test('with no folder open, Consolidate Session says so before it checks the route', async () => {
  const h = new Harness();
  h.folders = [];
  h.responses['remem/settings'] = NO_KEY;
  await flows.run(() => flows.consolidateSession(h.ctx));
  assert.deepEqual(h.asked, ['info:Remem works per workspace: open a folder first.']);
  assert.deepEqual(h.warnings, [], 'no key asked for');
  assert.deepEqual(h.sent, []);
  // Several folders: the folder is picked, and its sessions read, before the route is checked.
  const two = new Harness();
  two.folders = [
    { name: 'a', cwd: '/a' },
    { name: 'b', cwd: '/b' },
  ];
  two.responses['remem/sessionTree'] = { nodes: [node('s1')] };
  two.picks.push(byLabel('b'), byLabel('Title of s1'));
  await flows.run(() => flows.consolidateSession(two.ctx));
  assert.deepEqual(two.sent, [
    ['remem/sessionTree', { cwd: '/b' }],
    ['remem/settings', {}],
    ['remem.lsp.consolidate', { session: 's1' }],
  ]);
  assert.equal(two.asked.length, 2);
});

/** A consolidation the server refuses once with `refusal`, then runs. */
function refusingOnce(h: Harness, refusal: Error): void {
  let refused = false;
  h.command = async <R>(id: string, arg: object): Promise<R> => {
    h.sent.push([id, arg]);
    if (id === 'remem.lsp.consolidate' && !refused) {
      refused = true;
      throw refusal;
    }
    return h.responses[id] as R;
  };
}

test('the Memory file\'s source action (the latest session) checks the route and explains refusals too', async () => {
  // No key: the route's fixes first, then the command as the action gave it.
  const h = new Harness();
  h.responses['remem/settings'] = NO_KEY;
  h.responses['remem.lsp.setApiKey'] = ROUTE;
  h.warnAnswers.push(flows.ENTER_KEY);
  h.inputs.push('sk-typed');
  await flows.run(() => flows.consolidateAsked(h.ctx, { cwd: '/proj' }));
  assert.match(h.warnings[0], /^Remem cannot consolidate yet: no API key for provider `deepseek`/);
  assert.deepEqual(h.offered[0], [flows.ENTER_KEY, flows.SELECT_MODEL, flows.OPEN_SETTINGS]);
  assert.deepEqual(h.sent, [
    ['remem/settings', {}],
    ['remem.lsp.setApiKey', { provider: 'deepseek', apiKey: 'sk-typed' }],
    ['remem.lsp.consolidate', { cwd: '/proj' }],
  ]);
  assert.deepEqual([h.sessionRefreshes, h.memoryRefreshes], [1, 1]);

  // Invalid memory: Show Problems, no error.
  const invalid = new Harness();
  refusingOnce(
    invalid,
    Object.assign(new Error('workspace memory is invalid; fix memory first'), {
      data: { code: 'MEMORY_INVALID', files: ['/h/w/k/broken.md'] },
    }),
  );
  invalid.warnAnswers.push(flows.SHOW_PROBLEMS);
  await flows.run(() => flows.consolidateAsked(invalid.ctx, { cwd: '/proj' }));
  assert.deepEqual(invalid.warnings, ['Not consolidated: workspace memory is invalid; fix memory first']);
  assert.deepEqual([invalid.problemsShown, invalid.opened], [1, ['/h/w/k/broken.md']]);

  // A key gone since the check: the fixes, then one more try.
  const gone = new Harness();
  refusingOnce(gone, Object.assign(new Error('no route'), { data: { code: 'NO_ROUTE' } }));
  let checks = 0;
  gone.request = async <R>(method: string, params: object): Promise<R> => {
    gone.sent.push([method, params]);
    return (checks++ === 0 ? ROUTE : NO_KEY) as R;
  };
  gone.responses['remem.lsp.setApiKey'] = ROUTE;
  gone.warnAnswers.push(flows.ENTER_KEY);
  gone.inputs.push('sk-new');
  await flows.run(() => flows.consolidateAsked(gone.ctx, { cwd: '/proj' }));
  assert.equal(gone.sent.filter(([id]) => id === 'remem.lsp.consolidate').length, 2);

  // Already running (a second click): said in words, not as the server's error with the session's id.
  const busy = new Harness();
  refusingOnce(
    busy,
    Object.assign(new Error(`a consolidation of ${'a'.repeat(64)} is already running; cancel it from its progress first`), {
      data: { code: 'RUNNING' },
    }),
  );
  await flows.run(() => flows.consolidateAsked(busy.ctx, { cwd: '/proj' }));
  assert.deepEqual(busy.asked, [`info:${flows.ALREADY_RUNNING}`]);
  assert.equal(busy.sent.filter(([id]) => id === 'remem.lsp.consolidate').length, 1);
});

test('rename prefills the current title; archive and restore name the session', async () => {
  const h = new Harness();
  const element = { type: 'session', cwd: '/proj', node: node('s1', { title: 'Old' }) };
  h.inputs.push('New title');
  await flows.run(() => flows.renameSession(h.ctx, element));
  await flows.run(() => flows.setArchived(h.ctx, element, true));
  await flows.run(() => flows.setArchived(h.ctx, { ...element, node: { ...element.node, archived: true } }, false));
  assert.deepEqual(h.asked, ['input:Old']);
  assert.deepEqual(h.sent, [
    ['remem.lsp.rename', { session: 's1', title: 'New title' }],
    ['remem.lsp.archive', { session: 's1' }],
    ['remem.lsp.restore', { session: 's1' }],
  ]);
});

test('a rename left as prefilled, or emptied, sends nothing: only a title typed is the user\'s', async () => {
  const h = new Harness();
  const titled = { type: 'session', cwd: '/proj', node: node('s1', { title: 'Old' }) };
  const untitled = { type: 'session', cwd: '/proj', node: node('s2', { title: null }) };
  h.responses['remem/sessionTree'] = { nodes: [titled.node, untitled.node] };
  h.inputs.push('Old ', 'Untitled s2', '   ');
  await flows.run(() => flows.renameSession(h.ctx, titled));
  await flows.run(() => flows.renameSession(h.ctx, untitled)); // its made-up name, not a title it has
  await flows.run(() => flows.renameSession(h.ctx, titled));
  assert.deepEqual(h.sent.filter(([id]) => id === 'remem.lsp.rename'), []);
  assert.deepEqual(h.asked, ['input:Old', 'input:Untitled s2', 'input:Old', 'info:No title given; “Old” keeps its title.']);
  assert.equal(h.sessionRefreshes, 0);
});

test('the keyboard\'s archive of an archived row, or restore of an active one, says so and sends nothing', async () => {
  const h = new Harness();
  const archived = { type: 'session', cwd: '/proj', node: node('s1', { archived: true }) };
  const active = { type: 'session', cwd: '/proj', node: node('s2') };
  h.responses['remem/sessionTree'] = { nodes: [archived.node, active.node] };
  await flows.run(() => flows.setArchived(h.ctx, archived, true));
  await flows.run(() => flows.setArchived(h.ctx, active, false));
  assert.deepEqual(h.sent, [
    ['remem/sessionTree', { cwd: '/proj' }], // the row as it is now, not as it was drawn
    ['remem/sessionTree', { cwd: '/proj' }],
  ]);
  assert.deepEqual(h.asked, [
    'info:“Title of s1” is archived already.',
    'info:“Title of s2” is not archived: there is nothing to restore.',
  ]);
});

test('a key on a row drawn before a change the tree has not redrawn yet acts on the session as it is now', async () => {
  // Delete, then Shift+Delete before the redraw: the row last clicked still reads active.
  const h = new Harness();
  const drawn = { type: 'session', cwd: '/proj', node: node('s1', { title: 'Old' }) };
  h.responses['remem/sessionTree'] = { nodes: [node('s1', { title: 'Old', archived: true })] };
  await flows.run(() => flows.setArchived(h.ctx, drawn, false));
  // F2 in the same gap after a rename to "New": typing "Old" back takes the rename back.
  h.responses['remem/sessionTree'] = { nodes: [node('s1', { title: 'New' })] };
  h.inputs.push('Old');
  await flows.run(() => flows.renameSession(h.ctx, drawn));
  assert.deepEqual(
    h.sent.filter(([id]) => id.startsWith('remem.lsp.')),
    [
      ['remem.lsp.restore', { session: 's1' }],
      ['remem.lsp.rename', { session: 's1', title: 'Old' }],
    ],
  );
  assert.deepEqual(h.asked, ['input:Old']);
});

test('rename from the palette prefills the picked session\'s title (not its row\'s "After turn N · ")', async () => {
  const h = new Harness();
  h.responses['remem/sessionTree'] = { nodes: FAMILY };
  h.picks.push(byLabel('After turn 2 · Title of session-fork'));
  h.inputs.push('New title');
  await flows.run(() => flows.renameSession(h.ctx));
  assert.deepEqual(h.asked.slice(1), ['input:Title of session-fork']);
  assert.deepEqual(h.sent.at(-1), ['remem.lsp.rename', { session: 'session-fork', title: 'New title' }]);
});

test('the keyboard on an in-file branch or inline subagent row says what it is and sends nothing', async () => {
  const h = new Harness();
  const branch = { type: 'session', cwd: '/proj', node: node('s1@a3', { kind: 'branch', title: 'and again' }) };
  const inline = { type: 'session', cwd: '/proj', node: node('agent-1', { kind: 'subagent', flags: ['inline'] }) };
  await flows.run(() => flows.renameSession(h.ctx, branch));
  await flows.run(() => flows.setArchived(h.ctx, inline, true));
  assert.deepEqual(h.sent, []);
  assert.deepEqual(h.asked, [
    'info:“and again” is an in-file branch, not a session of its own: rename the session it belongs to.',
    'info:“Title of agent-1” is a subagent written inside its session’s file, not a session of its own: archive the session it belongs to.',
  ]);
});

/** A session with a subagent written inside its file and a path it left, as the daemon lists them. */
const IN_FILE = [
  node('cc', { format: 'claude-code', createdAt: NOW - 3 * 3_600_000 }),
  node('cc@ys1', { kind: 'subagent', flags: ['inline'], parent: 'cc', depth: 1, title: 'find the tests' }),
  node('cc@a3', { kind: 'branch', forkTurn: 2, parent: 'cc', depth: 1, title: 'and again' }),
];

test('from the palette, rows inside their session\'s file are offered by no picker that acts on a session', async () => {
  const h = new Harness();
  h.responses['remem/sessionTree'] = { nodes: IN_FILE };
  h.responses['remem/sessionTurns'] = TURNS;
  h.responses['remem.lsp.fork'] = { id: 'cc-child', command: 'claude --resume cc-child', note: null };
  h.inputs.push('Renamed');
  const first = (items: PickItem[]) => items[0];
  h.picks.push(first, first, byLabel('Turn 1'), first, first);
  await flows.run(() => flows.consolidateSession(h.ctx));
  await flows.run(() => flows.branchFromTurn(h.ctx));
  await flows.run(() => flows.renameSession(h.ctx));
  await flows.run(() => flows.setArchived(h.ctx, undefined, true));
  const pickers = h.asked.filter((a) => a.startsWith('pick:') && !a.includes('Turn 1'));
  assert.deepEqual(pickers, [
    'pick:Remem: Consolidate Session:Title of cc',
    'pick:Remem: Branch from Turn…:Title of cc',
    'pick:Remem: Rename Session…:Title of cc',
    'pick:Remem: Archive Session:Title of cc',
  ]);
  assert.deepEqual(
    h.sent.filter(([id]) => id.startsWith('remem.lsp.')),
    [
      ['remem.lsp.consolidate', { session: 'cc' }],
      ['remem.lsp.fork', { session: 'cc', turn: 1, confirmed: true }],
      ['remem.lsp.rename', { session: 'cc', title: 'Renamed' }],
      ['remem.lsp.archive', { session: 'cc' }],
    ],
  );
});

test('Open Session Transcript offers them, and opens their session\'s transcript, where their turns are', async () => {
  const h = new Harness();
  h.responses['remem/sessionTree'] = { nodes: IN_FILE };
  h.picks.push(byLabel('find the tests'), byLabel('and again'));
  await flows.run(() => flows.openTranscript(h.ctx));
  await flows.run(() => flows.openTranscript(h.ctx));
  assert.equal(h.asked[0], 'pick:Remem: Open Session Transcript:and again|find the tests|Title of cc');
  assert.deepEqual(h.opened, ['transcript:cc:Title of cc', 'transcript:cc:Title of cc']);
  assert.deepEqual(
    h.sent.filter(([method]) => method === 'remem/transcript'),
    [],
  );
});

test('a turn below 1 is refused before anything is asked: turns are numbered from 1', async () => {
  const h = new Harness();
  h.responses['remem/sessionTree'] = { nodes: FAMILY };
  h.responses['remem.lsp.fork'] = { id: 'session-child' }; // the server refuses it; it is never asked
  await flows.run(() => flows.branchFromTurn(h.ctx, { session: 'session-main', turn: 0 }));
  await flows.run(() => flows.branchFromTurn(h.ctx, { turn: 0 })); // no session either: none is picked first
  assert.deepEqual(h.asked, [
    'info:There is no turn 0 to branch after: turns are numbered from 1.',
    'info:There is no turn 0 to branch after: turns are numbered from 1.',
  ]);
  assert.deepEqual(h.confirmed, []);
  assert.deepEqual(h.sent, []);
  // Turn 1 is the first one there is.
  const first = new Harness();
  first.responses['remem.lsp.fork'] = { id: 'session-child' };
  await flows.run(() => flows.branchFromTurn(first.ctx, { session: 'session-main', turn: 1 }));
  assert.deepEqual(first.sent[0], ['remem.lsp.fork', { session: 'session-main', turn: 1, confirmed: true }]);
});

test('server errors are not swallowed as a dismissal', async () => {
  const h = new Harness();
  h.command = async () => {
    throw new Error('remem: session s1 is still live; consolidate it once it has finished');
  };
  await assert.rejects(() => flows.run(() => flows.consolidateSession(h.ctx, 's1')), /still live/);
});

test('a branch sent confirmed that the server answers without making is an older server\'s: update, restart', async () => {
  const h = new Harness();
  h.responses['remem.lsp.fork'] = { id: null };
  const error = await flows.branchFromTurn(h.ctx, { session: 'session-main', turn: 1 }).catch((e: unknown) => e);
  assert.deepEqual(h.sent.at(-1), ['remem.lsp.fork', { session: 'session-main', turn: 1, confirmed: true }]);
  assert.equal((error as Error).message, flows.NO_BRANCH);
  assert.deepEqual(fixesOf(error), [RESTART_SERVER]);
});

test('a branch asked for by id alone (a lens) still names the parent as the tree does', async () => {
  const h = new Harness();
  h.responses['remem/sessionTree'] = { nodes: FAMILY };
  h.responses['remem.lsp.fork'] = { id: 'session-child' };
  await flows.run(() => flows.branchFromTurn(h.ctx, { session: 'session-fork', turn: 3 }));
  assert.deepEqual(h.confirmed[0][0], 'Branch the session after turn 3?');
  assert.deepEqual(h.opened, ['transcript:session-child:After turn 3 of After turn 2 · Title of session-fork']);
});

test('F2 or Delete on a workspace folder\'s row offers that folder\'s sessions without asking which folder', async () => {
  const h = new Harness();
  h.folders = [
    { name: 'a', cwd: '/a' },
    { name: 'b', cwd: '/b' },
  ];
  h.responses['remem/sessionTree'] = { nodes: [node('s1')] };
  const row: FolderElement = { type: 'folder', folder: h.folders[1] }; // the selected row, as the key passes it
  h.picks.push(byLabel('Title of s1'), byLabel('Title of s1'));
  h.inputs.push('New title');
  await flows.run(() => flows.renameSession(h.ctx, row));
  await flows.run(() => flows.setArchived(h.ctx, row, true));
  assert.deepEqual(h.asked, ['pick:Remem: Rename Session…:Title of s1', 'input:Title of s1', 'pick:Remem: Archive Session:Title of s1']);
  assert.deepEqual(h.sent, [
    ['remem/sessionTree', { cwd: '/b' }],
    ['remem.lsp.rename', { session: 's1', title: 'New title' }],
    ['remem/sessionTree', { cwd: '/b' }],
    ['remem.lsp.archive', { session: 's1' }],
  ]);
});

test('archive from the palette offers only active sessions, restore only archived ones', async () => {
  const h = new Harness();
  h.responses['remem/sessionTree'] = { nodes: [node('a'), node('z', { archived: true })] };
  h.picks.push((items) => items[0], (items) => items[0]);
  await flows.run(() => flows.setArchived(h.ctx, undefined, true));
  await flows.run(() => flows.setArchived(h.ctx, undefined, false));
  assert.deepEqual(h.asked, ['pick:Remem: Archive Session:Title of a', 'pick:Remem: Restore Session:Title of z']);
  assert.deepEqual(
    h.sent.filter(([id]) => id.startsWith('remem.lsp.')),
    [
      ['remem.lsp.archive', { session: 'a' }],
      ['remem.lsp.restore', { session: 'z' }],
    ],
  );
});

const ENTRY = (id: string, parent: string | null, fields: Partial<HistoryEntry> = {}): HistoryEntry => ({
  id,
  parent,
  scope: 'workspace',
  workspace: 'k',
  actor: { kind: 'hand-edit' },
  before: 'sha256:b',
  after: 'sha256:a',
  at: new Date(NOW - 2 * 60_000).toISOString(),
  stat: { added: [], changed: ['prefer-uv'], removed: [], insertions: 1, deletions: 1 },
  ...fields,
});
const RECORDS = [
  { name: 'prefer-uv', type: 'feedback', description: 'd', path: '/h/w/k/prefer-uv.md', valid: true, problems: 0 },
];

test('memory history of a record: pick a change, see its diff, undo it after a modal confirmation', async () => {
  const h = new Harness();
  h.responses['remem/memoryOverview'] = { ...OVERVIEW, records: RECORDS };
  const newest = ENTRY('b'.repeat(40), 'a'.repeat(40));
  const older = ENTRY('a'.repeat(40), 'c'.repeat(40), { actor: { kind: 'agent', client: 'claude-code/2.1' } });
  h.responses['remem/memoryHistory'] = { scope: 'workspace', workspace: 'k', entries: [newest, older] };
  h.responses['remem/revertMemory'] = { status: 'committed', revision: 'sha256:x', history: 'd'.repeat(40) };
  h.picks.push((items) => items[1]);
  h.infoAnswers.push(flows.UNDO);
  const item = { type: 'memory', cwd: '/proj', node: { path: '/h/w/k/prefer-uv.md' } };
  const result = await flows.showMemoryHistory(h.ctx, item);
  assert.deepEqual(h.sent[1], ['remem/memoryHistory', { cwd: '/proj', record: 'prefer-uv' }]);
  assert.equal(h.asked[0], 'pick:Remem: History of prefer-uv:Edited by hand|Agent (claude-code/2.1)');
  const diff = /^diff:remem-history:\/c{40}\/prefer-uv\.md ↔ remem-history:\/a{40}\/prefer-uv\.md · prefer-uv\.md: Agent/;
  assert.match(h.opened[0], diff);
  assert.equal(h.confirmed[0][0], 'Undo this change?');
  assert.match(h.confirmed[0][1], /The later change is undone with it:\n• \d{4}-\d\d-\d\d \d\d:\d\d Edited by hand: changed prefer-uv/);
  assert.deepEqual(
    h.sent.at(-1),
    ['remem/revertMemory', { entry: 'c'.repeat(40), expectedRevision: 'sha256:a' }],
    'back to the state before it, from the state the user decided on',
  );
  assert.equal(result?.status, 'committed');
  assert.equal(h.asked.at(-1), 'info:Undone.');
  assert.equal(h.memoryRefreshes, 1);
});

test('undo of an entry past the newest listed says at least how many go with it, naming the newest ten', async () => {
  const h = new Harness();
  h.responses['remem/memoryOverview'] = { ...OVERVIEW, records: RECORDS };
  const hex = (n: number) => n.toString(16).padStart(40, '0');
  const newest = Array.from({ length: 100 }, (_, n) => ENTRY(hex(n + 2), hex(n + 3)));
  const picked = ENTRY(hex(1), hex(0));
  h.responses['remem/memoryHistory'] = (params: { record?: string }) => ({
    scope: 'workspace',
    workspace: 'k',
    entries: params.record ? [newest[0], picked] : newest, // the record's reaches back further
  });
  h.responses['remem/revertMemory'] = { status: 'committed', revision: 'sha256:x', history: 'd'.repeat(40) };
  h.picks.push((items) => items[1]);
  h.infoAnswers.push(flows.UNDO);
  await flows.showMemoryHistory(h.ctx, { type: 'memory', cwd: '/proj', node: { path: '/h/w/k/prefer-uv.md' } });
  const detail = h.confirmed[0][1];
  assert.match(detail, /At least 100 later changes are undone with it:/);
  const lines = detail.split('\n').filter((line) => line.startsWith('• '));
  assert.equal(lines.length, 11);
  assert.equal(lines[10], '• and 90 or more older');
});

test('past the newest listed, the count of older entries the server left out bounds how many go with the undo', async () => {
  const hex = (n: number) => n.toString(16).padStart(40, '0');
  const newest = Array.from({ length: 100 }, (_, n) => ENTRY(hex(n + 2), hex(n + 3)));
  const picked = ENTRY(hex(1), hex(0));
  const confirmation = async (more: number | null) => {
    const h = new Harness();
    h.responses['remem/memoryOverview'] = { ...OVERVIEW, records: RECORDS };
    h.responses['remem/memoryHistory'] = (params: { record?: string }) =>
      params.record
        ? { scope: 'workspace', workspace: 'k', entries: [newest[0], picked], more: 0 }
        : { scope: 'workspace', workspace: 'k', entries: newest, more }; // the picked entry is among the `more`
    h.picks.push((items) => items[1]);
    h.infoAnswers.push(flows.UNDO);
    h.confirmAnswer = false;
    await flows.showMemoryHistory(h.ctx, { type: 'memory', cwd: '/proj', node: { path: '/h/w/k/prefer-uv.md' } });
    const detail = h.confirmed[0][1];
    return [/^.*undone with it:$/m.exec(detail)?.[0], detail.split('\n').filter((line) => line.startsWith('• ')).at(-1)];
  };
  // The picked entry and 89 others are older than the listed 100: 100 to 189 are later.
  assert.deepEqual(await confirmation(90), ['Between 100 and 189 later changes are undone with it:', '• and 90 to 179 older']);
  // It alone is older: every listed one, and no other, is later.
  assert.deepEqual(await confirmation(1), ['The 100 later changes are undone with it:', '• and 90 older']);
  // Not counted (an older entry cannot be read): no bound above.
  assert.deepEqual(await confirmation(null), ['At least 100 later changes are undone with it:', '• and 90 or more older']);
});

test('a history longer than the server lists says how many older changes its pick leaves out, and where they are', async () => {
  const h = new Harness();
  const entries = [ENTRY('b'.repeat(40), 'a'.repeat(40)), ENTRY('a'.repeat(40), 'c'.repeat(40))];
  h.responses['remem/memoryHistory'] = { scope: 'workspace', workspace: 'k', entries, more: 9_998 };
  h.picks.push(() => undefined);
  await flows.run(() => flows.showMemoryHistory(h.ctx));
  assert.equal(
    h.asked[0],
    "pick:Remem: History of proj's memory (the newest 2 of 10000; `remem memory log --limit 0` lists all):Edited by hand|Edited by hand",
  );
  const global = new Harness();
  global.folders = [];
  global.responses['remem/settings'] = { ...ROUTE, globalFile: '/h/GLOBAL.md' };
  global.responses['remem/memoryHistory'] = { scope: 'global', workspace: null, entries, more: null };
  global.picks.push(() => undefined);
  await flows.run(() => flows.showMemoryHistory(global.ctx));
  assert.match(global.asked[0], /^pick:Remem: History of Global memory \(the newest 2, and older ones; `remem memory log --global --limit 0` lists all\):/);
  // One record's, in a window of several folders: the CLI lists its workspace's history, named.
  const record = new Harness();
  record.folders.push({ name: 'other', cwd: "/my mum's work" });
  record.responses['remem/memoryOverview'] = { ...OVERVIEW, records: RECORDS };
  record.responses['remem/memoryHistory'] = { scope: 'workspace', workspace: 'k', entries, more: 5 };
  record.picks.push(() => undefined);
  await flows.run(() => flows.showMemoryHistory(record.ctx, { cwd: "/my mum's work", node: { path: RECORDS[0].path } }));
  assert.match(
    record.asked[0],
    /^pick:Remem: History of prefer-uv \(the newest 2 of 7; `remem memory log --cwd '\/my mum'\\''s work' --limit 0` lists the workspace's, this record's among them\):/,
  );
  // All of it listed: nothing more said.
  const whole = new Harness();
  whole.responses['remem/memoryHistory'] = { scope: 'workspace', workspace: 'k', entries, more: 0 };
  whole.picks.push(() => undefined);
  await flows.run(() => flows.showMemoryHistory(whole.ctx));
  assert.match(whole.asked[0], /^pick:Remem: History of proj's memory:/);
});

test('undo from a record\'s history names every later change of the workspace, whatever record it touched', async () => {
  const h = new Harness();
  h.responses['remem/memoryOverview'] = { ...OVERVIEW, records: RECORDS };
  const stat = (name: string) => ({ added: [], changed: [name], removed: [], insertions: 1, deletions: 0 });
  const other = ENTRY('e'.repeat(40), 'b'.repeat(40), { stat: stat('run-ci'), actor: { kind: 'agent', client: 'codex' }, after: 'sha256:e' });
  const newer = ENTRY('b'.repeat(40), 'f'.repeat(40));
  const between = ENTRY('f'.repeat(40), 'a'.repeat(40), { stat: stat('use-pnpm'), actor: { kind: 'cli' } });
  const picked = ENTRY('a'.repeat(40), 'c'.repeat(40));
  // The server's history of the record lists only the entries touching it; the workspace's, all.
  h.responses['remem/memoryHistory'] = (params: { record?: string }) => ({
    scope: 'workspace',
    workspace: 'k',
    entries: params.record ? [newer, picked] : [other, newer, between, picked],
  });
  h.responses['remem/revertMemory'] = { status: 'committed', revision: 'sha256:x', history: 'd'.repeat(40) };
  h.picks.push((items) => items[1]);
  h.infoAnswers.push(flows.UNDO);
  await flows.showMemoryHistory(h.ctx, { type: 'memory', cwd: '/proj', node: { path: '/h/w/k/prefer-uv.md' } });
  assert.deepEqual(
    h.sent.filter(([method]) => method === 'remem/memoryHistory'),
    [
      ['remem/memoryHistory', { cwd: '/proj', record: 'prefer-uv' }],
      ['remem/memoryHistory', { cwd: '/proj' }],
    ],
  );
  const detail = h.confirmed[0][1];
  assert.match(detail, /The 3 later changes are undone with it:/);
  assert.deepEqual(
    detail.split('\n').filter((line) => line.startsWith('• ')).map((line) => line.replace(/^• \S+ \S+ /, '')),
    ['Agent (codex): changed run-ci (+1 −0)', 'Edited by hand: changed prefer-uv (+1 −1)', 'remem command: changed use-pnpm (+1 −0)'],
  );
  // The workspace as its whole history last showed it, not the record's newest entry.
  assert.deepEqual(h.sent.at(-1), ['remem/revertMemory', { entry: 'c'.repeat(40), expectedRevision: 'sha256:e' }]);
});

test('a history that is not whole says so, when shown and in the undo\'s confirmation', async () => {
  const h = new Harness();
  h.responses['remem/memoryOverview'] = { ...OVERVIEW, records: RECORDS };
  const problem = 'the history could not record what changed (OSError: no space); it records the state it finds once it can';
  const entries = [ENTRY('b'.repeat(40), 'a'.repeat(40)), ENTRY('a'.repeat(40), 'c'.repeat(40))];
  h.responses['remem/memoryHistory'] = { scope: 'workspace', workspace: 'k', entries, problem };
  h.responses['remem/revertMemory'] = { status: 'committed', revision: 'sha256:z', history: null };
  h.picks.push((items) => items[1]);
  h.infoAnswers.push(flows.UNDO);
  await flows.showMemoryHistory(h.ctx, { type: 'memory', cwd: '/proj' });
  assert.deepEqual(h.warnings, [`The history of proj's memory is not whole: ${problem}.`]);
  assert.match(h.confirmed[0][1], /The history is not whole: the history could not record what changed/);
  // Its newest entry is not the state memory is in: checked against it, every undo would conflict.
  assert.deepEqual(h.sent.at(-1), ['remem/revertMemory', { entry: 'c'.repeat(40), expectedRevision: undefined }]);
});

test('a refused undo says why, in the daemon\'s words, and is no error', async () => {
  const h = new Harness();
  h.responses['remem/memoryOverview'] = { ...OVERVIEW, records: RECORDS };
  h.responses['remem/memoryHistory'] = { scope: 'workspace', workspace: 'k', entries: [ENTRY('a'.repeat(40), 'c'.repeat(40))] };
  const message = 'x.md was not a valid record at that entry, so it cannot be put back';
  const refusal = Object.assign(new Error('the changes are invalid; nothing was written'), {
    code: -32010,
    data: { problems: [{ code: 'remem/revert-invalid', message, file: 'x.md' }] },
  });
  const answer = h.request.bind(h);
  h.request = async <R>(method: string, params: object): Promise<R> => {
    if (method === 'remem/revertMemory') throw refusal;
    return answer<R>(method, params);
  };
  h.picks.push((items) => items[0]);
  h.infoAnswers.push(flows.UNDO);
  await flows.run(() => flows.showMemoryHistory(h.ctx));
  assert.deepEqual(h.warnings, [`Nothing was undone: ${message}.`]);
  // The history's own refusal (a first entry whose state before was never recorded), in its words.
  const never = 'aaaaaaaaaaaa is the first entry of this history and found memory already there';
  h.request = async <R>(method: string, params: object): Promise<R> => {
    if (method === 'remem/revertMemory') throw Object.assign(new Error(never), { code: -32015 });
    return answer<R>(method, params);
  };
  h.picks.push((items) => items[0]);
  h.infoAnswers.push(flows.UNDO);
  await flows.run(() => flows.showMemoryHistory(h.ctx));
  assert.deepEqual(h.warnings.at(-1), `Nothing was undone: ${never}`);
  // Another process keeping the scope's lock past the daemon's bound: nothing was written.
  const busy = 'another remem process writing this memory has held ws-k.lock for over 5 s: nothing was written';
  h.request = async <R>(method: string, params: object): Promise<R> => {
    if (method === 'remem/revertMemory') throw Object.assign(new Error(busy), { code: -32018 });
    return answer<R>(method, params);
  };
  h.picks.push((items) => items[0]);
  h.infoAnswers.push(flows.UNDO);
  await flows.run(() => flows.showMemoryHistory(h.ctx));
  assert.deepEqual(h.warnings.at(-1), `Nothing was undone: ${busy}`);
  // Any other failure is the command's error, as before.
  h.request = async <R>(method: string, params: object): Promise<R> => {
    if (method === 'remem/revertMemory') throw new Error('daemon gone');
    return answer<R>(method, params);
  };
  h.picks.push((items) => items[0]);
  h.infoAnswers.push(flows.UNDO);
  await assert.rejects(() => flows.run(() => flows.showMemoryHistory(h.ctx)), /daemon gone/);
});

test('memory history: Global by its file, a declined undo sends nothing, a conflict is told', async () => {
  const h = new Harness();
  h.responses['remem/memoryOverview'] = OVERVIEW;
  const first = ENTRY('e'.repeat(40), null, { scope: 'global', workspace: null, actor: { kind: 'cli' } });
  h.responses['remem/memoryHistory'] = { scope: 'global', workspace: null, entries: [first] };
  h.responses['remem/revertMemory'] = { status: 'committed', revision: 'sha256:0', history: 'd'.repeat(40) };
  h.picks.push((items) => items[0]);
  h.infoAnswers.push(flows.UNDO);
  await flows.run(() => flows.showMemoryHistory(h.ctx, { node: { path: '/h/GLOBAL.md' } }));
  assert.deepEqual(h.sent[1], ['remem/memoryHistory', {}]);
  assert.match(h.opened[0], /^diff:remem-history:\/empty\/GLOBAL\.md ↔ /, 'the first entry starts from nothing');
  // The first entry has no parent to revert to: the undo asks for the state before it.
  const undo = ['remem/revertMemory', { entry: 'e'.repeat(40), before: true, expectedRevision: first.after }];
  assert.deepEqual(h.sent.at(-1), undo);
  assert.equal(h.asked.at(-1), 'info:Undone.');

  const workspace = new Harness();
  workspace.responses['remem/memoryOverview'] = OVERVIEW;
  const stat = { added: ['x'], changed: ['y'], removed: [], insertions: 2, deletions: 0 };
  const two = ENTRY('f'.repeat(40), 'a'.repeat(40), { stat });
  workspace.responses['remem/memoryHistory'] = { scope: 'workspace', workspace: 'k', entries: [two] };
  workspace.responses['remem/revertMemory'] = { status: 'conflict', revision: 'sha256:z', history: null };
  workspace.picks.push((items) => items[0], byLabel('y'));
  workspace.infoAnswers.push(flows.UNDO);
  workspace.confirmAnswer = false;
  await flows.run(() => flows.showMemoryHistory(workspace.ctx));
  assert.deepEqual(workspace.sent[1], ['remem/memoryHistory', { cwd: '/proj' }]);
  assert.match(workspace.opened[0], /\/y\.md · y\.md/);
  assert.ok(!workspace.sent.some(([method]) => method === 'remem/revertMemory'), 'declined: nothing sent');
  workspace.picks.push((items) => items[0], byLabel('x'));
  workspace.infoAnswers.push(flows.UNDO);
  workspace.confirmAnswer = true;
  await flows.run(() => flows.showMemoryHistory(workspace.ctx));
  assert.match(workspace.asked.at(-1) ?? '', /^info:Memory changed meanwhile, so nothing was undone/);
  // Its button shows the history again, as it is now: the same scope's, asked anew.
  assert.deepEqual(workspace.offered.at(-1), [flows.SHOW_HISTORY]);
  const asked = () => workspace.sent.filter(([method]) => method === 'remem/memoryHistory').length;
  const before = asked();
  workspace.picks.push((items) => items[0], byLabel('x'), () => undefined);
  workspace.infoAnswers.push(flows.UNDO, flows.SHOW_HISTORY);
  await flows.run(() => flows.showMemoryHistory(workspace.ctx));
  assert.equal(asked(), before + 2);
  assert.match(workspace.asked.at(-1) ?? '', /^pick:Remem: History of proj's memory:/);
  // With several folders, the one picked is the one shown again: not asked for a second time.
  workspace.folders.push({ name: 'other', cwd: '/other' });
  workspace.picks.push(byLabel('proj'), (items) => items[0], byLabel('x'), () => undefined);
  workspace.infoAnswers.push(flows.UNDO, flows.SHOW_HISTORY);
  const folderAsks = () => workspace.asked.filter((a) => a.startsWith('pick:Remem:proj|other')).length;
  await flows.run(() => flows.showMemoryHistory(workspace.ctx));
  assert.equal(folderAsks(), 1);
  assert.equal(workspace.picks.length, 0);
  assert.match(workspace.asked.at(-1) ?? '', /^pick:Remem: History of proj's memory:/);

  const empty = new Harness();
  empty.responses['remem/memoryOverview'] = OVERVIEW;
  empty.responses['remem/memoryHistory'] = { scope: 'workspace', workspace: 'k', entries: [] };
  await flows.run(() => flows.showMemoryHistory(empty.ctx));
  assert.deepEqual(empty.asked, ["info:No history of proj's memory yet."]);
});

const OUTCOME = {
  review: 'r'.repeat(64),
  status: 'committed',
  changes: 2,
  receipt: '/h/reviews/r.md',
  title: 'Fix the uploader',
  message: 'Consolidated “Fix the uploader”: 2 changes to memory — added run-ci-before-push (feedback), rewrote GLOBAL.md.',
  alreadyReviewed: false,
  changed: [
    { verb: 'Added' as const, name: 'run-ci-before-push', type: 'feedback', path: '/h/w/k/run-ci-before-push.md' },
    { verb: 'Rewrote' as const, name: 'GLOBAL.md', type: null, path: '/h/GLOBAL.md' },
  ],
  history: {
    globalEntry: 'g'.repeat(40),
    workspaceEntry: 'w'.repeat(40),
    added: ['run-ci-before-push'],
    changed: [],
    removed: [],
    globalChanged: true,
  },
};

test('a consolidation result names each change; Show Diff opens the chosen record before and after', async () => {
  const h = new Harness();
  const made = ENTRY('w'.repeat(40), 'p'.repeat(40), { actor: { kind: 'consolidation', review: 'r'.repeat(64) } });
  h.responses['remem/memoryAt'] = { entry: made, files: {} };
  h.infoAnswers = [flows.SHOW_DIFF];
  h.picks = [byLabel('Added run-ci-before-push')];
  await flows.run(() => flows.showConsolidation(h.ctx, OUTCOME));
  assert.deepEqual(h.asked.slice(0, 2), [
    `info:${OUTCOME.message}`,
    'pick:Remem: Consolidation:Added run-ci-before-push|Rewrote GLOBAL.md',
  ]);
  assert.deepEqual(h.offered[0], [flows.OPEN_RECORD, flows.SHOW_DIFF, flows.OPEN_RECEIPT]);
  assert.deepEqual(h.sent, [['remem/memoryAt', { entry: 'w'.repeat(40) }]]);
  const diff = /^diff:remem-history:\/p{40}\/run-ci-before-push\.md ↔ remem-history:\/w{40}\/run-ci-before-push\.md · run-ci-before-push\.md: Consolidation \(review r{12}\)/;
  assert.match(h.opened[0], diff);
});

test('Show Diff of a Global that was empty before the review opens GLOBAL.md of the Global entry', async () => {
  const added = { verb: 'Added' as const, name: 'GLOBAL.md', type: null, path: '/h/GLOBAL.md' };
  const outcome = { ...OUTCOME, changed: [OUTCOME.changed[0], added] };
  const h = new Harness();
  const made = ENTRY('g'.repeat(40), null, { scope: 'global', workspace: null, actor: { kind: 'consolidation', review: 'r'.repeat(64) } });
  h.responses['remem/memoryAt'] = { entry: made, files: {} };
  h.infoAnswers = [flows.SHOW_DIFF];
  h.picks = [byLabel('Added GLOBAL.md')];
  await flows.run(() => flows.showConsolidation(h.ctx, outcome));
  // It was taken for a record: the workspace's entry was asked for, and GLOBAL.md.md opened.
  assert.deepEqual(h.sent, [['remem/memoryAt', { entry: 'g'.repeat(40) }]]);
  assert.match(h.opened[0], /remem-history:\/g{40}\/GLOBAL\.md ·/);
});

test('a consolidation result opens the record or the receipt; a failure warns with the receipt only', async () => {
  const one = { ...OUTCOME, changes: 1, changed: [OUTCOME.changed[0]] };
  const record = new Harness();
  record.infoAnswers = [flows.OPEN_RECORD];
  await flows.run(() => flows.showConsolidation(record.ctx, one));
  assert.deepEqual(record.opened, ['/h/w/k/run-ci-before-push.md']);
  const receipt = new Harness();
  receipt.infoAnswers = [flows.OPEN_RECEIPT];
  await flows.run(() => flows.showConsolidation(receipt.ctx, one));
  assert.deepEqual(receipt.opened, [`receipt:${'r'.repeat(64)}:Fix the uploader`]);
  const failed = new Harness();
  const message = 'Consolidation of “Fix the uploader” ended failed (the model timed out): 0 changes to memory; the receipt says more.';
  await flows.run(() =>
    flows.showConsolidation(failed.ctx, { ...OUTCOME, status: 'failed', changes: 0, changed: [], history: null, message }),
  );
  assert.deepEqual(failed.warnings, [message]);
  assert.deepEqual(failed.offered, [[flows.OPEN_RECEIPT]]);
});

const UNCHOSEN = {
  ...ROUTE,
  provider: 'anthropic',
  model: null,
  providers: ['anthropic', 'deepseek', 'ollama', 'openai'],
  apiKeyEnv: 'ANTHROPIC_API_KEY',
  keyReady: false,
  keyProblem: 'anthropic has no default model: choose one with `remem settings model --provider anthropic --model …`',
};

test('no model chosen (decision 0493): the picker prefills none, and a Claude model typed is what is sent', async () => {
  const h = new Harness();
  h.responses['remem/settings'] = UNCHOSEN;
  h.responses['remem/models'] = { ...UNLISTED, provider: 'anthropic' };
  h.responses['remem.lsp.selectModel'] = { ...UNCHOSEN, model: 'claude-sonnet-4-5', keyReady: true, keyProblem: null };
  h.picks.push(byLabel('anthropic'));
  h.inputs.push('claude-sonnet-4-5');
  await flows.run(() => flows.selectModel(h.ctx));
  assert.equal(h.asked[0], 'pick:Remem: Select Consolidation Model:anthropic|deepseek|ollama|openai');
  assert.equal(h.asked[1], 'input:', 'no model of another provider (nor the default deepseek one) prefilled');
  assert.deepEqual(h.sent.at(-1), ['remem.lsp.selectModel', { provider: 'anthropic', model: 'claude-sonnet-4-5' }]);
  // Enter on an empty box chooses nothing.
  const empty = new Harness();
  empty.responses['remem/settings'] = UNCHOSEN;
  empty.responses['remem/models'] = { ...UNLISTED, provider: 'anthropic' };
  empty.picks.push(byLabel('anthropic'));
  empty.inputs.push('');
  await flows.run(() => flows.selectModel(empty.ctx));
  assert.ok(!empty.sent.some(([id]) => id === 'remem.lsp.selectModel'));
});

test('a typed model is asked as the provider\'s own id, with no other provider\'s as an example', async () => {
  const typed = async (provider: string) => {
    const h = new Harness();
    h.responses['remem/settings'] = UNCHOSEN;
    h.responses['remem/models'] = { ...UNLISTED, provider };
    h.responses['remem.lsp.selectModel'] = { ...ROUTE, provider, model: 'm' };
    h.picks.push(byLabel(provider));
    h.inputs.push('m');
    await flows.run(() => flows.selectModel(h.ctx));
    return h.prompts;
  };
  assert.deepEqual(await typed('anthropic'), ['No list of models: HTTP 404. The model id anthropic knows']);
  assert.deepEqual(await typed('openai'), ['No list of models: HTTP 404. The model id openai knows']);
  assert.deepEqual(await typed('deepseek'), ['No list of models: HTTP 404. The model id deepseek knows']);
});

test('no model chosen, and the provider lists models: the picker says none is chosen, not another provider', async () => {
  const h = new Harness();
  h.responses['remem/settings'] = UNCHOSEN;
  h.responses['remem/models'] = { ...UNLISTED, provider: 'anthropic', models: ['claude-sonnet-4-5'] };
  h.responses['remem.lsp.selectModel'] = { ...UNCHOSEN, model: 'claude-sonnet-4-5', keyReady: true, keyProblem: null };
  h.picks.push(byLabel('anthropic'), byLabel('claude-sonnet-4-5'));
  await flows.run(() => flows.selectModel(h.ctx));
  assert.equal(h.placeholders[1], `The models anthropic lists (now ${NO_MODEL})`);
  // Another provider than the current one: its model is not this one's.
  const other = new Harness();
  other.responses['remem/settings'] = UNCHOSEN;
  other.responses['remem/models'] = { ...UNLISTED, provider: 'deepseek', models: ['deepseek-v4-pro'] };
  other.responses['remem.lsp.selectModel'] = { ...ROUTE, model: 'deepseek-v4-pro' };
  other.picks.push(byLabel('deepseek'), byLabel('deepseek-v4-pro'));
  await flows.run(() => flows.selectModel(other.ctx));
  assert.equal(other.placeholders[1], 'The models deepseek lists (now another provider)');
});

test('no model chosen: the route fix offered is the model, not a key it has', async () => {
  const h = new Harness();
  h.responses['remem/settings'] = UNCHOSEN;
  h.warnAnswers.push(undefined);
  await flows.run(() => flows.consolidateSession(h.ctx, 's1'));
  assert.match(h.warnings[0], /^Remem cannot consolidate yet: anthropic has no default model/);
  assert.deepEqual(h.offered[0], [flows.SELECT_MODEL, flows.OPEN_SETTINGS]);
  assert.ok(!h.sent.some(([id]) => id === 'remem.lsp.consolidate'));
});

// A demo home after the demo: the route scripts/seed_demo.py writes, as the daemon answers it then.
const DEMO_ENDED = {
  ...ROUTE,
  provider: 'demo',
  model: 'remem-demo-scripted',
  providers: ['anthropic', 'deepseek', 'demo', 'ollama', 'openai'],
  apiKeyEnv: 'REMEM_DEMO_MODEL_KEY',
  keyReady: false,
  keyProblem:
    "`demo` is remem's scripted demo model, which serves only while scripts/demo runs: choose a model of yours " +
    'with `remem settings model --provider P --model M`, or run scripts/demo again',
};

test('the demo\'s model after the demo: the route fix offered is a model of the user\'s, not a key (decision 0511)', async () => {
  const h = new Harness();
  h.responses['remem/settings'] = DEMO_ENDED;
  h.responses['remem/models'] = { ...UNLISTED, provider: 'deepseek', models: ['deepseek-v4-flash'] };
  h.responses['remem.lsp.selectModel'] = ROUTE;
  h.warnAnswers.push(flows.SELECT_MODEL);
  h.picks.push(byLabel('deepseek'), byLabel('deepseek-v4-flash'));
  await flows.run(() => flows.consolidateSession(h.ctx, 's1'));
  assert.equal(h.warnings[0], `Remem cannot consolidate yet: ${DEMO_ENDED.keyProblem}`);
  assert.deepEqual(h.offered[0], [flows.SELECT_MODEL, flows.OPEN_SETTINGS]);
  assert.deepEqual(h.sent.at(-1), ['remem.lsp.consolidate', { session: 's1' }]);
  // A provider of the user's own called `demo`, keyed by a variable of theirs, is no demo: its
  // key is offered, as the daemon asks for it.
  const own = new Harness();
  own.responses['remem/settings'] = { ...DEMO_ENDED, apiKeyEnv: 'MY_DEMO_KEY', keyProblem: 'no API key for provider `demo`' };
  own.warnAnswers.push(undefined);
  await flows.run(() => flows.consolidateSession(own.ctx, 's1'));
  assert.deepEqual(own.offered[0], [flows.ENTER_KEY, flows.SELECT_MODEL, flows.OPEN_SETTINGS]);
});

test('the demo\'s model after the demo: Enter API Key… asks for no key and offers a model of the user\'s (decision 0511)', async () => {
  const h = new Harness();
  h.responses['remem/settings'] = DEMO_ENDED;
  h.responses['remem/models'] = { ...UNLISTED, provider: 'deepseek', models: ['deepseek-v4-flash'] };
  h.responses['remem.lsp.selectModel'] = ROUTE;
  h.warnAnswers.push(flows.SELECT_MODEL);
  h.picks.push(byLabel('deepseek'), byLabel('deepseek-v4-flash'));
  await flows.run(() => flows.enterApiKey(h.ctx));
  assert.deepEqual(h.warnings, [`no API key you enter helps demo's route: ${DEMO_ENDED.keyProblem}`]);
  assert.deepEqual(h.offered[0], [flows.SELECT_MODEL, flows.OPEN_SETTINGS]);
  assert.ok(!h.asked.some((asked) => asked.startsWith('input:')), 'no key is typed');
  assert.deepEqual(h.sent.at(-1), ['remem.lsp.selectModel', { provider: 'deepseek', model: 'deepseek-v4-flash' }]);
  // A provider that takes no key (a local server) is told the same way, before a key is typed.
  const local = new Harness();
  local.responses['remem/settings'] = { ...ROUTE, provider: 'ollama', model: 'llama3', apiKeyEnv: null };
  local.warnAnswers.push(undefined);
  await flows.run(() => flows.enterApiKey(local.ctx));
  assert.deepEqual(local.warnings, ['ollama takes no API key']);
  assert.ok(!local.sent.some(([id]) => id === 'remem.lsp.setApiKey'));
  // A provider of the user's own called `demo` is asked its key.
  const own = new Harness();
  own.responses['remem/settings'] = { ...DEMO_ENDED, apiKeyEnv: 'MY_DEMO_KEY' };
  own.responses['remem.lsp.setApiKey'] = ROUTE;
  own.inputs.push('sk-own');
  await flows.run(() => flows.enterApiKey(own.ctx));
  assert.deepEqual(own.sent.at(-1), ['remem.lsp.setApiKey', { provider: 'demo', apiKey: 'sk-own' }]);
});

test('the demo\'s model chosen in Select Consolidation Model: the warning offers another model, not a key (decision 0511)', async () => {
  const h = new Harness();
  h.responses['remem/models'] = { ...NO_KEY_LIST, provider: 'demo', keyProblem: DEMO_ENDED.keyProblem };
  h.responses['remem/settings'] = { ...ROUTE, providers: DEMO_ENDED.providers };
  h.responses['remem.lsp.selectModel'] = DEMO_ENDED;
  h.picks.push(byLabel('demo'));
  h.inputs.push('remem-demo-scripted');
  h.warnAnswers.push(flows.OPEN_SETTINGS);
  const updated = await flows.selectModel(h.ctx);
  assert.equal(updated.keyReady, false);
  assert.deepEqual(h.warnings, [
    `Consolidation now uses demo / remem-demo-scripted, but it cannot run: ${DEMO_ENDED.keyProblem}`,
  ]);
  assert.deepEqual(h.offered.at(-1), [flows.SELECT_MODEL, flows.OPEN_SETTINGS]);
  assert.deepEqual(h.opened, [DEMO_ENDED.settingsFile]);
});

test('a key stored for a route that still cannot run claims no route', async () => {
  const h = new Harness();
  h.responses['remem/settings'] = UNCHOSEN;
  h.responses['remem.lsp.setApiKey'] = UNCHOSEN;
  h.inputs.push('sk-ant');
  const updated = await flows.enterApiKey(h.ctx);
  assert.equal(updated.keyReady, false);
  assert.equal(
    h.asked.at(-1),
    `info:The API key of anthropic is stored; consolidation cannot run yet: ${UNCHOSEN.keyProblem}.`,
  );
});
