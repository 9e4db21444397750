/**
 * What each client command does, written against two small interfaces — the editor's UI and
 * the language server — so the flows (which session, which turn, what is confirmed, what the
 * server is asked) are tested without an editor. `vscodeapi.ts` implements `Ui` over `vscode`.
 */

import { fileTarget, historyUri, sessionTarget, type SessionTarget } from './args';
import { FixableError, RESTART_SERVER } from './fixes';
import { GLOBAL_FILE, memoryFile, readSeverity, type Severity, sessionLabel, sessionTitle, shortId } from './format';
import { CommandTitles, OPEN_SETTINGS, paletteName, SESSIONS_UNREADABLE, ViewNames } from './ids';
import {
  type ChangedRecord,
  type ConsolidationOutcome,
  type FlatNode,
  type ForkResult,
  HISTORY_REFUSED,
  type HistoryEntry,
  type HistoryLogResult,
  type ListError,
  type MemoryAtResult,
  type MemoryOverview,
  type ModelList,
  type ModelSettings,
  type ReceiptResult,
  Requests,
  type RevertResult,
  SCOPE_BUSY,
  ServerCommands,
  type SessionTreeResult,
  type SetApiKeyArgs,
  type TurnsResult,
  unreadSessions,
} from './protocol';
import {
  actorText,
  consolidationPicks,
  historyPicks,
  modelPicks,
  NO_MODEL,
  type PickItem,
  providerPicks,
  type SessionPick,
  receiptPicks,
  sessionPicks,
  statText,
  transcriptPicks,
  turnPicks,
} from './picks';
import { inParentTranscript } from './sessionTree';

export interface Ui {
  pick<T extends PickItem>(items: T[], options: { title: string; placeholder: string }): Promise<T | undefined>;
  input(options: { title: string; prompt: string; value?: string; password?: boolean }): Promise<string | undefined>;
  /** A modal question with one action besides Cancel; true when the action was chosen. */
  confirm(message: string, detail: string, action: string): Promise<boolean>;
  info(message: string, ...actions: string[]): Promise<string | undefined>;
  warn(message: string, ...actions: string[]): Promise<string | undefined>;
  showProblems(): Promise<void>;
  openFile(path: string): Promise<void>;
  copy(text: string): Promise<void>;
  /** `title` names its tab (without it the tab shows the id); `turn` is the turn to show;
   * `keepFocus` leaves the focus where it is (a tree row's keys still act on the row). */
  openTranscript(session: string, title?: string, turn?: number, keepFocus?: boolean): Promise<void>;
  /** A receipt rendered for a person, in the receipt view; `title` (the session's) names its tab. */
  openReceipt(review: string, title?: string): Promise<void>;
  /** VS Code's diff editor on two documents (URIs), left ↔ right. */
  openDiff(left: string, right: string, title: string): Promise<void>;
  /** Runs `task` with `message` in the status bar while it runs (VS Code shows it only once the
   * task took 150 ms: a quick one does not flicker). */
  busy<T>(message: string, task: () => Promise<T>): Promise<T>;
}

export interface Server {
  request<R>(method: string, params: object): Promise<R>;
  command<R>(id: string, arg: object): Promise<R>;
}

export interface Folder {
  name: string;
  cwd: string; // absolute file-system path
}

export interface FlowContext {
  ui: Ui;
  server: Server;
  folders(): Folder[];
  now(): number;
  /** The session of the transcript in the active editor, if one is. */
  activeSession(): string | undefined;
  refreshSessions(): void;
  refreshMemory(): void;
}

/** Ends a flow quietly: the user dismissed a picker or was already told why nothing happens. */
class Stop extends Error {}

// Pickers titled by the command that opens them, as the palette names it (`package.json`'s title).
const CONSOLIDATE_SESSION = paletteName(CommandTitles.consolidateSession);
const BRANCH_FROM_TURN = paletteName(CommandTitles.branchFromTurn);
const OPEN_TRANSCRIPT = paletteName(CommandTitles.openTranscript);
const SHOW_RECEIPT = paletteName(CommandTitles.showReceipt);
const SHOW_MEMORY_HISTORY = paletteName(CommandTitles.showMemoryHistory);
const SELECT_CONSOLIDATION_MODEL = paletteName(CommandTitles.selectModel);
const RENAME_SESSION = paletteName(CommandTitles.renameSession);

export const BRANCH_WARNING =
  'Branching copies the conversation only: files in your workspace and external side effects ' +
  '(commands run, services called) are not rolled back.';

/** Runs a flow; a `Stop` (dismissed picker, nothing to do) is not an error. */
export async function run(flow: () => Promise<unknown>): Promise<void> {
  try {
    await flow();
  } catch (error) {
    if (!(error instanceof Stop)) throw error;
  }
}

async function stop(ui: Ui, message?: string, severity: Severity = 'info'): Promise<never> {
  if (message) await (severity === 'warning' ? ui.warn(message) : ui.info(message));
  throw new Stop();
}

function chosen<T>(value: T | undefined): T {
  if (value === undefined) throw new Stop();
  return value;
}

export async function chooseFolder(ctx: FlowContext, cwd?: string): Promise<Folder> {
  const folders = ctx.folders();
  const named = cwd ? folders.find((f) => f.cwd === cwd) : undefined;
  if (named) return named;
  if (cwd) return { name: cwd, cwd };
  if (folders.length === 0) return stop(ctx.ui, 'Remem works per workspace: open a folder first.');
  if (folders.length === 1) return folders[0];
  const items = folders.map((f) => ({ label: f.name, description: f.cwd, folder: f }));
  const pick = await ctx.ui.pick(items, { title: 'Remem', placeholder: 'Which workspace folder?' });
  return chosen(pick).folder;
}

export const READING_SESSIONS = "Reading this workspace's sessions…";

/** The folder's sessions, read under a status-bar progress: a flow reads them while the user waits
 * (before a picker, a key prompt, a tab's name, a key's act), and a cold tree takes a second or more
 * with nothing else on screen yet. */
async function treeOf(ctx: FlowContext, folder: Folder): Promise<SessionTreeResult> {
  const read = () => ctx.server.request<SessionTreeResult>(Requests.sessionTree, { cwd: folder.cwd });
  return ctx.ui.busy(READING_SESSIONS, read);
}

async function sessionsOf(ctx: FlowContext, folder: Folder): Promise<FlatNode[]> {
  return (await treeOf(ctx, folder)).nodes;
}

interface Chosen {
  session: string;
  label?: string; // as the tree and the pickers name it
  node?: FlatNode; // the row picked, when the user picked one
}

/** The session named by the argument, or the one the user picks from `candidates`. */
async function chooseSession(
  ctx: FlowContext,
  target: SessionTarget,
  candidates: Candidates,
  title: string,
  choice: Choice = {},
): Promise<Chosen> {
  if (target.session) return { session: target.session, label: target.label };
  return pickOffered(ctx, await offered(ctx, target, candidates, choice), title);
}

type Candidates = (nodes: FlatNode[], now: number) => SessionPick[];
/** `preferred`: the session offered first; `none`: why there is none to pick when the folder has
 * sessions, but none of the candidates (without it, the picker offers every session). */
type Choice = { none?: string; preferred?: string };

/** The sessions of a folder a picker would offer, and the folder's sessions they are rows of. */
interface Offer {
  nodes: FlatNode[];
  items: SessionPick[];
}

/** What the picker of `target`'s folder would offer; with nothing to offer, says why and stops. */
async function offered(ctx: FlowContext, target: SessionTarget, candidates: Candidates, { none, preferred }: Choice): Promise<Offer> {
  const tree = await treeOf(ctx, await chooseFolder(ctx, target.cwd));
  const { nodes } = tree;
  const items = preferredFirst(candidates(nodes, ctx.now()), preferred);
  if (items.length === 0) return stop(ctx.ui, nothingOffered(tree, none), readSeverity(tree.errors));
  return { nodes, items };
}

export const NO_SESSIONS_YET =
  'This workspace has no agent sessions yet: they appear once Claude Code, Codex or DSH has worked in ' +
  `this folder. ${ViewNames.sessions} lists where remem looked.`;

/** Why a picker of the folder whose sessions are `tree` has nothing to offer: it has no sessions yet,
 * none could be read (as the view's empty state says it), or `none` — and then whether some could not
 * be read, which may be the ones the user looked for. */
function nothingOffered(tree: SessionTreeResult, none = NO_SESSIONS_YET): string {
  const unread = unreadText(unreadSessions(tree.errors));
  if (tree.nodes.length === 0) return unread ? `${SESSIONS_UNREADABLE}: ${unread}` : NO_SESSIONS_YET;
  return unread ? `${none} Some of this workspace's sessions could not be read: ${unread}` : none;
}

/** What could not be read, for a message: the first in the daemon's words, the others counted
 * (Session Branches' warning row lists each); '' when everything was read. */
function unreadText(errors: readonly ListError[]): string {
  const [first] = errors;
  if (!first) return '';
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more, which ${ViewNames.sessions} lists)` : '';
  return `${first.path}: ${first.message.replace(/\.$/, '')}${more}.`;
}

async function pickOffered(ctx: FlowContext, { nodes, items }: Offer, title: string): Promise<Chosen> {
  const pick = chosen(await ctx.ui.pick(items, { title, placeholder: 'Pick a session (newest first)' }));
  return { session: pick.session, label: pick.title ?? pick.label, node: nodes.find((n) => n.id === pick.session) };
}

/** How the tree names `session`, for a command that got only its id (a lens, a link). */
async function labelOf(ctx: FlowContext, session: string): Promise<string | undefined> {
  for (const folder of ctx.folders()) {
    const nodes = await sessionsOf(ctx, folder).catch(() => []);
    const node = nodes.find((n) => n.id === session);
    if (node) return sessionLabel(node, nodes.find((n) => n.id === node.parent));
  }
  return undefined;
}

/** `preferred` (the session open in the editor) first, said to be open, so Enter picks it. */
function preferredFirst(items: SessionPick[], preferred: string | undefined): SessionPick[] {
  const at = items.findIndex((item) => item.session === preferred);
  if (at < 0) return items;
  const open = { ...items[at], description: `open in the editor · ${items[at].description ?? ''}` };
  return [open, ...items.slice(0, at), ...items.slice(at + 1)];
}

export async function consolidateSession(ctx: FlowContext, arg?: unknown): Promise<void> {
  const target = sessionTarget(arg);
  // Whether the folder has a session to consolidate is said before the route is checked, not
  // after a key was asked for in vain (decision 0476); the key is still asked before the pick
  // (decision 0102).
  const offer = target.session ? null : await offered(ctx, target, consolidationPicks, { none: NOTHING_TO_CONSOLIDATE });
  await ensureRoute(ctx);
  const session = offer ? (await pickOffered(ctx, offer, CONSOLIDATE_SESSION)).session : target.session;
  await consolidate(ctx, { session });
}

/** Why none of the folder's sessions can be consolidated: none is one the daemon takes. */
const NOTHING_TO_CONSOLIDATE =
  'No session of this workspace can be consolidated now: live and archived sessions cannot, nor ' +
  'subagents, which are consolidated with the session that started them, nor any while the review ' +
  `receipts cannot be read (${ViewNames.sessions} says why).`;

/** `remem.lsp.consolidate` as the server's code action (`{cwd}`: the workspace's latest finished
 * session) or another caller runs it: the same flow as Consolidate Session's once the session is
 * known — the route checked first, refusals explained, the views refreshed. */
export async function consolidateAsked(ctx: FlowContext, arg: object): Promise<void> {
  await ensureRoute(ctx);
  await consolidate(ctx, arg);
}

async function consolidate(ctx: FlowContext, target: object): Promise<void> {
  try {
    // The server reports progress and says how many changes were made when it is done.
    await ctx.server.command(ServerCommands.consolidate, target);
  } catch (error) {
    await explainRefusal(ctx, error); // returns once the route was fixed: try once more
    await ctx.server.command(ServerCommands.consolidate, target);
  } finally {
    ctx.refreshSessions();
    ctx.refreshMemory();
  }
}

export const OPEN_RECORD = 'Open Record';
export const SHOW_DIFF = 'Show Diff';
export const OPEN_RECEIPT = 'Open Receipt';
// Told as information, not a warning: the run did what it should, or what the user asked (a cancel).
const TOLD_AS_INFO = new Set(['committed', 'no-change', 'cancelled']);

/** The server's sentence about a consolidation, with the record, its diff and the receipt to open. */
export async function showConsolidation(ctx: FlowContext, outcome: ConsolidationOutcome): Promise<void> {
  const opened = outcome.changed.filter((c) => c.path !== null);
  const diffable = outcome.changed.filter((c) => historyEntryOf(outcome, c) !== null);
  const actions = [
    ...(opened.length ? [OPEN_RECORD] : []),
    ...(diffable.length ? [SHOW_DIFF] : []),
    OPEN_RECEIPT,
  ];
  const tell = TOLD_AS_INFO.has(outcome.status) ? ctx.ui.info : ctx.ui.warn;
  const choice = await tell.call(ctx.ui, outcome.message, ...actions);
  if (choice === OPEN_RECEIPT) return ctx.ui.openReceipt(outcome.review, outcome.title || undefined);
  if (choice === OPEN_RECORD) return ctx.ui.openFile(chosen((await whichChange(ctx, opened)).path ?? undefined));
  if (choice === SHOW_DIFF) {
    const change = await whichChange(ctx, diffable);
    const entry = historyEntryOf(outcome, change) as string;
    const { entry: made } = await ctx.server.request<MemoryAtResult>(Requests.memoryAt, { entry });
    await openEntryDiff(ctx, made, rewroteGlobal(change) ? GLOBAL_FILE : memoryFile(change.name));
  }
}

/** The history entry a change of `outcome` is in: Global's or the workspace's. */
function historyEntryOf(outcome: ConsolidationOutcome, change: ChangedRecord): string | null {
  const link = outcome.history;
  if (!link) return null;
  return rewroteGlobal(change) ? link.globalEntry : link.workspaceEntry;
}

/** A review changes Global memory by writing it whole: Rewrote, or Added when it was empty. No
 * record is named GLOBAL.md (a record's name has no capitals nor dot). */
function rewroteGlobal(change: ChangedRecord): boolean {
  return change.name === GLOBAL_FILE;
}

async function whichChange(ctx: FlowContext, changes: ChangedRecord[]): Promise<ChangedRecord> {
  if (changes.length === 1) return changes[0];
  const items = changes.map((c) => ({ label: `${c.verb} ${c.name}`, description: c.type ?? '', change: c }));
  const pick = await ctx.ui.pick(items, { title: 'Remem: Consolidation', placeholder: 'Which change?' });
  return chosen(pick).change;
}

export const ENTER_KEY = CommandTitles.enterApiKey;
export const SELECT_MODEL = CommandTitles.selectModel; // the button is the command, by the name the palette finds
export { OPEN_SETTINGS }; // settings.yml, where the model route is set
export const SHOW_PROBLEMS = 'Show Problems';
export const ALREADY_RUNNING =
  'This session is being consolidated already: its progress notification, in the window that started it, can cancel it.';

/** Before a session is asked for: a route without a key is a next step, not a later failure. */
async function ensureRoute(ctx: FlowContext): Promise<void> {
  const settings = await ctx.server.request<ModelSettings>(Requests.settings, {});
  if (!settings.keyReady) await offerRouteFixes(ctx, settings);
}

// The variable scripts/demo gives its scripted model's per-run key in: DEMO_KEY_ENV of the
// daemon's consolidation/route.py, which tells the demo's route by it whatever its provider is
// called (decision 0506). The wire carries the variable (`apiKeyEnv`), not whether it is the demo's;
// tests/contract/test_demo_key_env.py keeps this copy the daemon's.
const DEMO_KEY_ENV = 'REMEM_DEMO_MODEL_KEY';

/** Whether a key typed for the route's provider can help: not where the provider takes none
 * (`apiKeyEnv` null: a local server), nor for the demo's model, which no key brings back after
 * the demo (decision 0511). */
function takesKey(settings: ModelSettings): boolean {
  return settings.apiKeyEnv !== null && settings.apiKeyEnv !== DEMO_KEY_ENV;
}

async function offerRouteFixes(ctx: FlowContext, settings: ModelSettings): Promise<void> {
  // No model chosen is said before a missing key, so the key is not what to offer then.
  const keyFixes = takesKey(settings) && settings.model !== null;
  const actions = keyFixes ? [ENTER_KEY, SELECT_MODEL, OPEN_SETTINGS] : [SELECT_MODEL, OPEN_SETTINGS];
  const choice = await ctx.ui.warn(`Remem cannot consolidate yet: ${settings.keyProblem ?? 'no model route'}`, ...actions);
  if (choice === ENTER_KEY && (await storeApiKey(ctx, settings.provider)).keyReady) return;
  if (choice === SELECT_MODEL && (await selectModel(ctx)).keyReady) return;
  if (choice === OPEN_SETTINGS) await ctx.ui.openFile(settings.settingsFile);
  throw new Stop();
}

/** Where no key can help the route, the ways on are another model and settings.yml. */
async function offerAnotherModel(ctx: FlowContext, message: string, settings: ModelSettings): Promise<ModelSettings> {
  const choice = await ctx.ui.warn(message, SELECT_MODEL, OPEN_SETTINGS);
  if (choice === SELECT_MODEL) return selectModel(ctx);
  if (choice === OPEN_SETTINGS) await ctx.ui.openFile(settings.settingsFile);
  return settings;
}

/** The palette's Enter API Key…: the current provider's key, where a key can help its route. */
export async function enterApiKey(ctx: FlowContext): Promise<ModelSettings> {
  const settings = await ctx.server.request<ModelSettings>(Requests.settings, {});
  if (takesKey(settings)) return storeApiKey(ctx, settings.provider);
  const why = settings.keyProblem ? `: ${settings.keyProblem}` : '';
  // The demo's route does take a key, the one scripts/demo gives it, which no user types.
  const none = settings.apiKeyEnv === null
    ? `${settings.provider} takes no API key`
    : `no API key you enter helps ${settings.provider}'s route`;
  return offerAnotherModel(ctx, `${none}${why}`, settings);
}

/** The key of `name`, typed hidden and stored by the daemon in credentials.yml (mode 0600). */
async function storeApiKey(ctx: FlowContext, name: string): Promise<ModelSettings> {
  const answer = await ctx.ui.input({
    title: `Remem: API key of ${name}`,
    prompt: 'Stored in remem\'s credentials.yml (readable only by you), where the CLI reads it too',
    password: true,
  });
  const apiKey = chosen(answer).trim();
  if (!apiKey) return stop(ctx.ui, 'No key given; nothing was stored.');
  const args: SetApiKeyArgs = { provider: name, apiKey };
  const updated = await ctx.server.command<ModelSettings>(ServerCommands.setApiKey, args);
  const route = updated.keyReady
    ? `consolidation can use ${updated.provider} / ${updated.model}`
    : `consolidation cannot run yet: ${updated.keyProblem ?? 'see settings.yml'}`;
  // Not awaited: a message resolves only once dismissed, and the consolidation goes on meanwhile.
  void ctx.ui.info(`The API key of ${name} is stored; ${route}.`);
  return updated;
}

/** Refusals the user can act on get their next step; anything else is the command's error. */
async function explainRefusal(ctx: FlowContext, error: unknown): Promise<void> {
  const code = refusalCode(error);
  const message = error instanceof Error ? error.message : String(error);
  if (code === 'MEMORY_INVALID') {
    if (await ctx.ui.warn(`Not consolidated: ${message}`, SHOW_PROBLEMS)) {
      // The language server judges the files the editor has open: open the first one to fix, so
      // that the Problems panel lists its problems.
      const [first] = refusalData(error).files;
      if (first) await ctx.ui.openFile(first);
      await ctx.ui.showProblems();
    }
    throw new Stop();
  }
  if (code === 'RUNNING') return stop(ctx.ui, ALREADY_RUNNING);
  if (code !== 'NO_ROUTE') throw error;
  await offerRouteFixes(ctx, await ctx.server.request<ModelSettings>(Requests.settings, {}));
}

/** The message of the daemon's refusal of a history request, or null for any other error. */
/** The daemon's own words when it refused an undo whole: the history cannot answer, or another
 * process keeps the scope's lock. */
function undoRefusal(error: unknown): string | null {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return (code === HISTORY_REFUSED || code === SCOPE_BUSY) && typeof message === 'string' ? message : null;
}

function refusalCode(error: unknown): string | undefined {
  const { code } = refusalData(error);
  return typeof code === 'string' ? code : undefined;
}

/** A refusal's `data`: `code`, `files` (the memory files to fix) when memory is invalid, and the
 * messages of its `problems` when the changes it would have written are invalid. */
function refusalData(error: unknown): { code?: unknown; files: string[]; problems: string[] } {
  const data = typeof error === 'object' && error !== null && 'data' in error ? error.data : undefined;
  if (typeof data !== 'object' || data === null) return { files: [], problems: [] };
  const files = 'files' in data && Array.isArray(data.files) ? data.files.filter((f) => typeof f === 'string') : [];
  const listed: unknown[] = 'problems' in data && Array.isArray(data.problems) ? data.problems : [];
  const problems = listed.flatMap((p) =>
    typeof p === 'object' && p !== null && 'message' in p && typeof p.message === 'string' ? [p.message] : [],
  );
  return { code: 'code' in data ? data.code : undefined, files, problems };
}

export async function branchFromTurn(ctx: FlowContext, arg?: unknown): Promise<string | null> {
  const target = sessionTarget(arg);
  if (target.turn !== undefined && target.turn < 1) {
    // A caller counting from 0 (a keybinding, another extension): the server would refuse it
    // only after the confirmation, so say it before anything is asked.
    return stop(ctx.ui, `There is no turn ${target.turn} to branch after: turns are numbered from 1.`);
  }
  const { session, label } = await chooseSession(ctx, target, sessionPicks, BRANCH_FROM_TURN, {
    preferred: ctx.activeSession(),
  });
  // The session's revision the turn is chosen from (the lens's transcript, or the turns picked
  // from): the server refuses a branch once the session changed since, never cuts another turn.
  const { turn, revision } =
    target.turn === undefined
      ? await chooseTurn(ctx, session)
      : { turn: target.turn, revision: target.expectedRevision };
  const confirmed = await ctx.ui.confirm(`Branch the session after turn ${turn}?`, BRANCH_WARNING, 'Branch');
  if (!confirmed) return null;
  const fork = { session, turn, confirmed: true, ...(revision ? { expectedRevision: revision } : {}) };
  let result: ForkResult;
  try {
    result = await ctx.server.command<ForkResult>(ServerCommands.fork, fork);
  } catch (error) {
    if (refusalCode(error) !== 'STALE_SOURCE') throw error;
    ctx.refreshSessions(); // its open transcript is read again, with lenses for the session as it is
    await ctx.ui.warn(STALE_BRANCH);
    throw new Stop();
  }
  ctx.refreshSessions();
  // The server answers without a branch only when the user declines its own confirmation, which a
  // fork sent `confirmed` skips: such an answer is an older server's.
  if (!result.id) throw new FixableError(NO_BRANCH, [RESTART_SERVER]);
  const name = label ?? (await labelOf(ctx, session)) ?? shortId(session);
  await ctx.ui.openTranscript(result.id, `After turn ${turn} of ${name}`);
  if (result.command) {
    const caveat = result.note ? ` Note: ${result.note}.` : '';
    const message = `Branched “${name}” after turn ${turn}: the new session is open. Resume it with \`${result.command}\`.${caveat}`;
    if (await ctx.ui.info(message, COPY_RESUME)) await ctx.ui.copy(result.command);
    return result.id;
  }
  if (result.note) {
    const message = `Branched “${name}” after turn ${turn}: the new session is open. ${result.note}.`;
    if (await ctx.ui.info(message, COPY_ID)) await ctx.ui.copy(result.id);
    return result.id;
  }
  const message = `Branched “${name}” after turn ${turn}: the new session is open. Resume it in DSH by its id.`;
  if (await ctx.ui.info(message, COPY_ID)) await ctx.ui.copy(result.id);
  return result.id;
}

export const NO_BRANCH =
  'remem: the server answered with no branch and no reason, as a remem older than this extension may: ' +
  'update remem, then restart the server.';
export const COPY_ID = 'Copy Session Id';
export const COPY_RESUME = 'Copy Resume Command';
export const STALE_BRANCH =
  'Nothing was branched: the session changed since its turns were shown (it went on, or was rewound or ' +
  'edited in its harness, which renumbers its turns). Its transcript now shows it as it is: choose the turn again.';

async function chooseTurn(ctx: FlowContext, session: string): Promise<{ turn: number; revision?: string }> {
  const { turns, revision } = await ctx.server.request<TurnsResult>(Requests.sessionTurns, { id: session });
  const items = turnPicks(turns);
  if (items.length === 0) return stop(ctx.ui, 'This session has no completed turn to branch after yet.');
  const pick = await ctx.ui.pick(items, {
    title: BRANCH_FROM_TURN,
    placeholder: 'Branch after which turn? (the new branch continues from there)',
  });
  return { turn: chosen(pick).turn, revision };
}

export async function openTranscript(ctx: FlowContext, arg?: unknown): Promise<void> {
  const target = sessionTarget(arg);
  const { session, label } = await chooseSession(ctx, target, transcriptPicks, OPEN_TRANSCRIPT);
  await ctx.ui.openTranscript(session, label ?? (await labelOf(ctx, session)), target.turn, target.keepFocus);
}

async function overview(ctx: FlowContext, cwd?: string): Promise<MemoryOverview> {
  const folder = await chooseFolder(ctx, cwd);
  return ctx.server.request<MemoryOverview>(Requests.memoryOverview, { cwd: folder.cwd });
}

export async function openGlobalMemory(ctx: FlowContext): Promise<void> {
  await ctx.ui.openFile(await globalFile(ctx));
}

/** `GLOBAL.md`: the user's, in no workspace, so no folder is asked for; the server names it
 * (a server without `globalFile` names it with a workspace's overview). */
async function globalFile(ctx: FlowContext): Promise<string> {
  const { globalFile: path } = await ctx.server.request<ModelSettings>(Requests.settings, {});
  return path ?? (await overview(ctx)).global.path;
}

export async function openWorkspaceMemory(ctx: FlowContext, arg?: unknown): Promise<void> {
  const { workspace } = await overview(ctx, sessionTarget(arg).cwd);
  if (!workspace.index) {
    return stop(
      ctx.ui,
      `This workspace has no memory yet. It gets some when a session is consolidated ("${CONSOLIDATE_SESSION}").`,
    );
  }
  await ctx.ui.openFile(workspace.index);
}

const NO_RECEIPTS =
  `No session of this workspace has been consolidated yet: "${CONSOLIDATE_SESSION}" consolidates one and writes its receipt.`;

export async function showReceipt(ctx: FlowContext, arg?: unknown): Promise<void> {
  const target = sessionTarget(arg);
  const file = target.session ? {} : fileTarget(arg); // a session item's `review` is its state, not an id
  if (file.review) {
    const receipt = await ctx.server.request<ReceiptResult>(Requests.receipt, { review: file.review });
    return ctx.ui.openReceipt(receipt.review, receipt.title ?? undefined);
  }
  if (file.path) return ctx.ui.openFile(file.path);
  const { receipts } = await overview(ctx, target.cwd);
  if (target.session) {
    const found = receipts.find((r) => r.session === target.session);
    if (!found) {
      const all = `remem receipts --session ${target.session}`;
      const message = `No receipt of session ${shortId(target.session)} among this workspace's 20 most recent; \`${all}\` lists all.`;
      return stop(ctx.ui, message);
    }
    return ctx.ui.openReceipt(found.review, found.title ?? undefined);
  }
  const items = receiptPicks(receipts, ctx.now());
  if (items.length === 0) return stop(ctx.ui, NO_RECEIPTS);
  const pick = await ctx.ui.pick(items, { title: SHOW_RECEIPT, placeholder: 'Pick a receipt (newest first)' });
  const { review, title } = chosen(pick);
  await ctx.ui.openReceipt(review, title ?? undefined);
}

export async function selectModel(ctx: FlowContext): Promise<ModelSettings> {
  const settings = await ctx.server.request<ModelSettings>(Requests.settings, {});
  const pick = await ctx.ui.pick(providerPicks(settings), {
    title: SELECT_CONSOLIDATION_MODEL,
    placeholder: `Provider (now ${settings.provider} / ${settings.model ?? NO_MODEL})`,
  });
  const { provider } = chosen(pick);
  // Another provider's model is never offered as this one's: undefined, where null is the
  // current provider's with none chosen.
  const current = provider === settings.provider ? settings.model : undefined;
  const model = await chooseModel(ctx, provider, current);
  if (!model) return stop(ctx.ui, 'No model given; the consolidation model is unchanged.');
  const updated = await ctx.server.command<ModelSettings>(ServerCommands.selectModel, { provider, model });
  const now = `Consolidation now uses ${updated.provider} / ${updated.model}`;
  if (updated.keyReady) {
    // Not awaited: a message resolves only once dismissed, and a consolidation waiting for this
    // route (a missing key's Select Consolidation Model) goes on meanwhile.
    void ctx.ui.info(`${now}; ${updated.apiKeyEnv ? 'its API key is set' : 'it needs no API key'}.`);
    return updated;
  }
  if (!takesKey(updated)) return offerAnotherModel(ctx, `${now}, but it cannot run: ${updated.keyProblem ?? ''}`, updated);
  const choice = await ctx.ui.warn(`${now}, but it has no API key yet: ${updated.keyProblem ?? ''}`, ENTER_KEY);
  return choice === ENTER_KEY ? storeApiKey(ctx, updated.provider) : updated;
}

/** A model of `provider`: picked from the list its API gives, else typed (the note says why).
 * `current`: its model when it is the current provider (null: none chosen), else undefined. */
async function chooseModel(ctx: FlowContext, provider: string, current: string | null | undefined): Promise<string> {
  const listed = await ctx.server.request<ModelList>(Requests.models, { provider });
  const key = listed.keyReady ? 'its route has a key' : `no API key yet (${listed.keyProblem ?? 'see settings.yml'})`;
  const title = `Remem: model of ${provider} — ${key}`;
  if (listed.models.length > 0) {
    const now = current === undefined ? 'another provider' : (current ?? NO_MODEL);
    const pick = await ctx.ui.pick(modelPicks(listed.models, current ?? undefined), {
      title,
      placeholder: `The models ${provider} lists (now ${now})`,
    });
    const { model } = chosen(pick);
    if (model !== null) return model;
  }
  const why = listed.models.length > 0 ? '' : `No list of models: ${listed.note ?? 'the provider gives none'}. `;
  const answer = await ctx.ui.input({
    title,
    // No example id: another provider's would be refused, and the one default remem knows is the
    // daemon's to say (settings.py), not written again here.
    prompt: `${why}The model id ${provider} knows`,
    value: current ?? '',
  });
  return chosen(answer).trim();
}

export async function renameSession(ctx: FlowContext, arg?: unknown): Promise<void> {
  await ownSessionOnly(ctx, arg, 'rename');
  const target = sessionTarget(arg);
  const { session, node } = await chooseSession(ctx, target, sessionPicks, RENAME_SESSION);
  // The title itself, not the row's label ("After turn 2 · …" is no part of a branch's title).
  const row = isNodeArg(arg) ? arg.node : node;
  const current = row ? sessionTitle(row) : '';
  const answer = await ctx.ui.input({
    title: RENAME_SESSION,
    prompt: 'New title of the session',
    value: current,
  });
  const title = chosen(answer).trim();
  if (!title) return stop(ctx.ui, `No title given; “${current || shortId(session)}” keeps its title.`);
  // Enter on the title as it was prefilled renames nothing: sent, it would be stored as the
  // user's, and an untitled session's made-up "Untitled …" would hide the title its harness gives.
  // Judged on the row as it is now: a key's row may predate a rename this one takes back.
  if (title === current && (await titleNow(ctx, arg, row)) === title) throw new Stop();
  await ctx.server.command(ServerCommands.rename, { session, title });
  ctx.refreshSessions();
}

export async function setArchived(ctx: FlowContext, arg: unknown, archived: boolean): Promise<void> {
  await ownSessionOnly(ctx, arg, archived ? 'archive' : 'restore');
  // The keyboard acts on the selected row, whichever it is (the menus offer only what applies),
  // and as it was drawn: whether it is archived is judged on the session as it is now.
  const fresh = isNodeArg(arg) && arg.node.archived === archived ? await freshRow(ctx, arg) : undefined;
  if (fresh?.archived === archived) {
    const state = archived ? 'is archived already' : 'is not archived: there is nothing to restore';
    await stop(ctx.ui, `“${sessionTitle(fresh)}” ${state}.`);
  }
  const { session } = await chooseSession(
    ctx,
    sessionTarget(arg),
    (nodes, now) => sessionPicks(nodes.filter((n) => n.archived !== archived), now), // what it would change
    paletteName(archived ? CommandTitles.archiveSession : CommandTitles.restoreSession),
    { none: archived ? ALL_ARCHIVED : NONE_ARCHIVED },
  );
  await ctx.server.command(archived ? ServerCommands.archive : ServerCommands.restore, { session });
  ctx.refreshSessions();
}

const ALL_ARCHIVED = 'Every session of this workspace is archived already.';
const NONE_ARCHIVED = 'No session of this workspace is archived: there is nothing to restore.';

/** A keybinding acts on the selected row, whatever it is; an in-file branch or an inline subagent
 * is part of its session's file, which the daemon knows by no id of its own. */
async function ownSessionOnly(ctx: FlowContext, arg: unknown, verb: string): Promise<void> {
  if (isNodeArg(arg) && inParentTranscript(arg.node)) {
    const what = arg.node.kind === 'branch' ? 'an in-file branch' : 'a subagent written inside its session’s file';
    await stop(ctx.ui, `“${sessionTitle(arg.node)}” is ${what}, not a session of its own: ${verb} the session it belongs to.`);
  }
}

/** `arg`'s row as the server lists it now. A key acts on the row last clicked while the tree
 * redraws after a change (decision 0181): drawn before that change, it may no longer be so.
 * Undefined when it is not listed: then the server, asked, says what it is. */
async function freshRow(ctx: FlowContext, arg: { node: FlatNode }): Promise<FlatNode | undefined> {
  const { cwd } = sessionTarget(arg);
  if (!cwd) return undefined;
  const nodes = await sessionsOf(ctx, { name: cwd, cwd });
  return nodes.find((n) => n.id === arg.node.id);
}

/** The title of the session renamed, as it is now: a key's row read again, a picked one as read. */
async function titleNow(ctx: FlowContext, arg: unknown, picked: FlatNode | undefined): Promise<string | undefined> {
  const row = isNodeArg(arg) ? await freshRow(ctx, arg) : picked;
  return row ? sessionTitle(row) : undefined;
}

function isNodeArg(arg: unknown): arg is { node: FlatNode } {
  return typeof arg === 'object' && arg !== null && 'node' in arg && typeof arg.node === 'object';
}

export const UNDO = 'Undo this change';
export const SHOW_HISTORY = CommandTitles.showMemoryHistory; // again, after an undo that conflicted

/** The history to show: Global memory, one record, or (from the palette) the whole workspace.
 * `whole` asks for the history an undo acts on: a record's is its workspace's, unfiltered. */
interface HistoryScope {
  params: object;
  whole?: object; // absent: `params` asks for it already
  file?: string;
  what: string;
  listsAll: string; // where every entry is listed, past the server's newest 100
}

const GLOBAL_HISTORY: HistoryScope = {
  params: {},
  file: GLOBAL_FILE,
  what: 'Global memory',
  listsAll: '`remem memory log --global --limit 0` lists all',
};

/** The command that lists all of `folder`'s history. It runs in the workspace folder, as the
 * editor's terminal does, unless the window has several: then it names the one. */
function workspaceLog(ctx: FlowContext, folder: Folder): string {
  const cwd = ctx.folders().length > 1 ? ` --cwd ${shellWord(folder.cwd)}` : '';
  return `\`remem memory log${cwd} --limit 0\``;
}

/** `word` as a POSIX shell reads it back: as it is when nothing in it is special, else quoted. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

async function historyScope(ctx: FlowContext, arg: unknown): Promise<HistoryScope> {
  const path = fileTarget(arg).path;
  const cwd = sessionTarget(arg).cwd;
  // With no folder open, the one memory there is: Global's, whose history needs no workspace.
  if (!cwd && ctx.folders().length === 0 && (!path || path === (await globalFile(ctx)))) return GLOBAL_HISTORY;
  const folder = await chooseFolder(ctx, cwd);
  const ov = await ctx.server.request<MemoryOverview>(Requests.memoryOverview, { cwd: folder.cwd });
  if (path && path === ov.global.path) return GLOBAL_HISTORY;
  const record = path ? ov.records.find((r) => r.path === path) : undefined;
  const workspace = { cwd: folder.cwd };
  const log = workspaceLog(ctx, folder);
  if (record) {
    // The CLI lists a workspace's history, not one record's: this record's changes are among them.
    const listsAll = `${log} lists the workspace's, this record's among them`;
    const params = { ...workspace, record: record.name };
    return { params, whole: workspace, file: memoryFile(record.name), what: record.name, listsAll };
  }
  return { params: workspace, what: `${folder.name}'s memory`, listsAll: `${log} lists all` };
}

/** The file of an entry to diff: the one asked about, else the one it changed, else a pick. */
async function changedFile(ctx: FlowContext, entry: HistoryEntry, file?: string): Promise<string> {
  if (file) return file;
  const stat = entry.stat;
  const names = stat ? [...stat.added, ...stat.changed, ...stat.removed] : [];
  if (names.length === 0) return stop(ctx.ui, 'This entry changed no file.');
  if (names.length === 1) return memoryFile(names[0]);
  const items = names.map((name) => ({ label: name, file: memoryFile(name) }));
  const pick = await ctx.ui.pick(items, { title: SHOW_MEMORY_HISTORY, placeholder: 'Which record?' });
  return chosen(pick).file;
}

export async function showMemoryHistory(ctx: FlowContext, arg?: unknown): Promise<RevertResult | null> {
  return showHistoryOf(ctx, await historyScope(ctx, arg));
}

/** The history of `scope`, resolved once: shown again after a conflict, it asks for no folder anew. */
async function showHistoryOf(ctx: FlowContext, scope: HistoryScope): Promise<RevertResult | null> {
  const history = await ctx.server.request<HistoryLogResult>(Requests.memoryHistory, scope.params);
  const { entries } = history;
  // Not awaited: a notification's promise waits until the user dismisses it.
  if (history.problem) void ctx.ui.warn(`The history of ${scope.what} is not whole: ${history.problem}.`);
  if (entries.length === 0) return stop(ctx.ui, `No history of ${scope.what} yet.`);
  const pick = await ctx.ui.pick(historyPicks(entries, ctx.now()), {
    title: `Remem: History of ${scope.what}${unlisted(scope, history)}`,
    placeholder: 'Pick a change to see it (newest first)',
  });
  const { entry } = chosen(pick);
  const file = await changedFile(ctx, entry, scope.file);
  await openEntryDiff(ctx, entry, file);
  if ((await ctx.ui.info(`${actorText(entry)} changed ${file}.`, UNDO)) !== UNDO) return null;
  return undoChange(ctx, entry, scope, history, () => showHistoryOf(ctx, scope));
}

/** What a history's pick says of the older entries the server left out (it lists the newest
 * 100): how many, and how to list them all (decision 0457). */
function unlisted(scope: HistoryScope, history: HistoryLogResult): string {
  const { more, entries } = history;
  if (more === 0 || more === undefined) return '';
  const of = more === null ? ', and older ones' : ` of ${entries.length + more}`;
  return ` (the newest ${entries.length}${of}; ${scope.listsAll})`;
}

const NAMED_LATER = 10; // later changes an undo's confirmation names one by one

/** The history an undo acts on. The revert restores the whole of Global memory or of the
 * workspace, so later changes are undone with it whatever record they touched: they are counted
 * in the unfiltered history, not in `shown` (one record's). */
async function wholeHistory(ctx: FlowContext, scope: HistoryScope, shown: HistoryLogResult): Promise<HistoryLogResult> {
  return scope.whole ? ctx.server.request<HistoryLogResult>(Requests.memoryHistory, scope.whole) : shown;
}

/** A count known to lie between `least` and `most` (null: no bound above). */
interface Bounds {
  least: number;
  most: number | null;
}

function boundsText({ least, most }: Bounds): string {
  if (most === least) return `${least}`;
  if (most === null) return `${least} or more`;
  return least === 0 ? `up to ${most}` : `${least} to ${most}`;
}

/** The changes of `whole` made after `entry`, named. Listed, it has as many later ones as are
 * listed before it; past the listed newest, all of those are later, and some of the `more` older
 * ones, each but itself at most. */
function laterChanges(entry: HistoryEntry, whole: HistoryLogResult): string {
  const all = whole.entries;
  const at = all.findIndex((e) => e.id === entry.id);
  const later = at < 0 ? all : all.slice(0, at);
  const older = typeof whole.more === 'number' && whole.more > 0 ? whole.more - 1 : null;
  const count: Bounds = { least: later.length, most: at >= 0 ? later.length : older === null ? null : later.length + older };
  if (count.most === 0 || (count.least === 0 && count.most === null)) return ''; // none, or none known
  const said =
    count.most === count.least ? (count.least === 1 ? 'The later change is' : `The ${count.least} later changes are`)
    : count.most === null ? `At least ${count.least} later changes are`
    : count.least === 0 ? `Up to ${count.most} later changes are`
    : `Between ${count.least} and ${count.most} later changes are`;
  // A modal dialog with a hundred lines hides its buttons: the newest are named, the rest counted.
  const shown = later.slice(0, NAMED_LATER);
  const named = shown.map((e) => `• ${whenText(e)} ${actorText(e)}: ${statText(e) || 'no file changed'}`);
  const rest = { least: count.least - shown.length, most: count.most === null ? null : count.most - shown.length };
  if (rest.most !== 0) named.push(`• and ${boundsText(rest)} older`);
  return `\n\n${said} undone with it:\n${named.join('\n')}`;
}

function whenText(entry: HistoryEntry): string {
  return entry.at.slice(0, 16).replace('T', ' ');
}

/** `file` before and after `entry`, in the diff editor. */
async function openEntryDiff(ctx: FlowContext, entry: HistoryEntry, file: string): Promise<void> {
  const title = `${file}: ${actorText(entry)} · ${whenText(entry)}`;
  await ctx.ui.openDiff(historyUri(entry.parent, file), historyUri(entry.id, file), title);
}

/** The revert that brings back the state before `entry`: its parent's, or (a scope's first
 * entry, which has none) the empty state before it, which a server older than protocol 31
 * cannot revert to. */
function before(entry: HistoryEntry): { entry: string; before?: true } {
  return entry.parent ? { entry: entry.parent } : { entry: entry.id, before: true };
}

/** Revert to the state before `entry` (the later changes named go with it), if confirmed; after
 * a conflict, `again` shows the history as it is now, to choose from anew. */
async function undoChange(
  ctx: FlowContext,
  entry: HistoryEntry,
  scope: HistoryScope,
  shown: HistoryLogResult,
  again: () => Promise<RevertResult | null>,
): Promise<RevertResult | null> {
  const whole = await wholeHistory(ctx, scope, shown);
  const lacking = whole.problem ? `\n\nThe history is not whole: ${whole.problem}.` : '';
  const detail =
    'Memory goes back to how it was before this change, as a new change of its own ' +
    `(the history keeps everything).${laterChanges(entry, whole)}${lacking}`;
  if (!(await ctx.ui.confirm('Undo this change?', detail, UNDO))) return null;
  // Against the state the user decided on: a change made meanwhile makes the undo a conflict. A
  // history that is not whole does not end with that state (the dialog says so): no check then,
  // or every undo would conflict until the history records again.
  const expectedRevision = whole.problem ? undefined : whole.entries[0]?.after;
  let result: RevertResult;
  try {
    result = await ctx.server.request<RevertResult>(Requests.revertMemory, { ...before(entry), expectedRevision });
  } catch (error) {
    // The daemon refuses a state it cannot write back (a record invalid at that entry), or one the
    // history never recorded (before a first entry that found memory there): say why.
    const { problems } = refusalData(error);
    const refused = problems.length > 0 ? `${problems.join('; ')}.` : undoRefusal(error);
    if (refused === null) throw error;
    await ctx.ui.warn(`Nothing was undone: ${refused}`);
    throw new Stop();
  }
  ctx.refreshMemory();
  if (result.status === 'conflict') {
    const message = 'Memory changed meanwhile, so nothing was undone: look at its history as it is now, and retry.';
    return (await ctx.ui.info(message, SHOW_HISTORY)) === SHOW_HISTORY ? again() : result;
  }
  await ctx.ui.info(result.status === 'committed' ? 'Undone.' : 'Nothing to undo: memory is already that way.');
  return result;
}
