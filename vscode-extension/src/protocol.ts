/**
 * The contract with the language server (`remem lsp`): method names, command ids and the JSON
 * shapes they carry. Nothing here touches `vscode`, so tests can use it directly.
 */

export const Requests = {
  sessionTree: 'remem/sessionTree',
  sessionTurns: 'remem/sessionTurns',
  transcript: 'remem/transcript',
  memoryOverview: 'remem/memoryOverview',
  receipt: 'remem/receipt',
  settings: 'remem/settings',
  models: 'remem/models',
  memoryHistory: 'remem/memoryHistory',
  memoryAt: 'remem/memoryAt',
  revertMemory: 'remem/revertMemory',
} as const;

export const Notifications = {
  treeChanged: 'remem/treeChanged',
  memoryChanged: 'remem/memoryChanged',
  status: 'remem/status',
  sessionsProgress: 'remem/sessionsProgress',
} as const;

/** Server command ids (`workspace/executeCommand`); each takes exactly one JSON object. */
export const ServerCommands = {
  consolidate: 'remem.lsp.consolidate',
  fork: 'remem.lsp.fork',
  rename: 'remem.lsp.rename',
  archive: 'remem.lsp.archive',
  restore: 'remem.lsp.restore',
  selectModel: 'remem.lsp.selectModel',
  setApiKey: 'remem.lsp.setApiKey',
} as const;

/** `remem.lsp.setApiKey`'s argument. Its fields in `SECRET_FIELDS` never reach the Remem log, where
 * the language client traces a command's arguments whole (`hiddenKeys.ts`). */
export interface SetApiKeyArgs {
  provider: string;
  apiKey: string;
}
export const SECRET_FIELDS: ReadonlyArray<keyof SetApiKeyArgs> = ['apiKey'];

/** The `remem/*` protocol this extension speaks: `PROTOCOL_VERSION` in the daemon's
 * `protocol/rpc.py`, which the server's `initialize` answer names (none before 31). */
export const PROTOCOL = 43;

/** The protocol a server's `initialize` capabilities name; null when they name none (older). */
export function serverProtocol(capabilities: { experimental?: unknown } | undefined): number | null {
  const remem = (capabilities?.experimental as { remem?: { protocol?: unknown } } | undefined)?.remem;
  return typeof remem?.protocol === 'number' ? remem.protocol : null;
}

/** The daemon's refusal of a history request (its message says why), passed on by the server. */
export const HISTORY_REFUSED = -32015;
/** The daemon's refusal of a commit behind a lock another process keeps past its bound (the
 * message names the lock and says nothing was written), passed on by the server. */
export const SCOPE_BUSY = -32018;

export const TRANSCRIPT_SCHEME = 'remem-session';
/** `remem-history:/<entry id>/<file name>`: a memory file as a history entry left it (read-only). */
export const HISTORY_SCHEME = 'remem-history';

/** `unknown`: the review receipts could not be read (the tree's `reviews` error says why);
 * `interrupted`: its receipt says under way, but no run holds the review (its process was killed
 * or could not record its end). */
export type ReviewStateName = 'never' | 'consolidated' | 'no-change' | 'failed' | 'pending' | 'interrupted' | 'changed' | 'unknown';

/** The daemon gives an object; a bare string is accepted as the state for robustness. */
export type ReviewState = { state: ReviewStateName; status?: string | null } | ReviewStateName;

/** The harness that wrote a session (`format` of the daemon's rows); absent from older daemons. */
export type SessionFormat = 'dsh' | 'claude-code' | 'codex';

export interface FlatNode {
  id: string;
  title: string | null;
  // branch: a path a Claude Code session left inside its own file (rewind, edit); not a session
  kind: 'root' | 'fork' | 'subagent' | 'branch';
  forkTurn: number | null;
  createdAt: number; // epoch milliseconds
  live: boolean;
  archived: boolean;
  flags: string[];
  review: ReviewState;
  format?: SessionFormat;
  problems?: number; // lines of its file the reader skipped or flagged; absent from older daemons
  defaultTitle?: boolean; // forks: still titled as forking titled it (the parent's, maybe with " (N)")
  parent: string | null;
  depth: number;
  ownPrompt?: string | null; // forks: the first line of their first prompt after the fork point
}

export interface SearchedRoot {
  path: string;
  exists: boolean;
  harness?: SessionFormat; // a harness's default folder, listed found or not; absent from older servers
}

/** A log or folder the daemon could not read, and why. `kind` `reviews`: the review receipts' folder
 * or a receipt file, which leaves every session read, its review state unknown; `metadata`: remem's
 * file of titles and archive states, which leaves every session read, with the title and archive
 * state its log gives it (absent from older daemons: `sessions`). */
export interface ListError {
  path: string;
  message: string;
  kind?: 'sessions' | 'reviews' | 'metadata';
}

/** The errors that left sessions unread: a log's or a folder's, not the review receipts' nor remem's titles'. */
export function unreadSessions(errors: readonly ListError[] | undefined): ListError[] {
  return (errors ?? []).filter((error) => (error.kind ?? 'sessions') === 'sessions');
}

/** `searched` comes only with an empty tree: where the server looked. `settingsProblems` come while
 * settings.yml is invalid (the daemon drew the tree on its last valid settings); `settingsFile` comes
 * with either. `errors`: what the tree looked at and could not read (absent from older daemons). */
export interface SessionTreeResult {
  nodes: FlatNode[];
  errors?: ListError[];
  searched?: SearchedRoot[];
  settingsFile?: string;
  settingsProblems?: string[];
}

export interface TurnRow {
  turn: number;
  startSeq: number;
  endSeq: number | null;
  status: string;
  user: string;
  forkable: boolean;
}

export interface TurnsResult {
  format: SessionFormat;
  turns: TurnRow[];
  // The session's revision the turns were read at: a branch from one of them sends it back
  // (`expectedRevision`), so a session changed since is refused, not cut elsewhere.
  revision?: string; // absent from older servers
  kind?: 'root' | 'fork' | 'subagent';
  parent?: string | null;
}

export interface TranscriptResult {
  uri: string;
  markdown: string;
  revision?: string; // what the transcript's branch lenses send back; the server keeps it by the text
}

export interface RecordSummary {
  name: string;
  type: string;
  description: string;
  path: string;
  valid: boolean;
  problems: number;
}

export interface ReceiptSummary {
  review: string;
  status: string;
  session: string;
  title: string | null;
  changes: number;
  updatedAt: string;
  path: string;
}

export interface MemoryOverview {
  global: { path: string; valid: boolean; problems: number };
  workspace: { key: string | null; folder: string | null; index: string | null };
  records: RecordSummary[];
  receipts: ReceiptSummary[];
}

export interface ReceiptResult {
  review: string;
  status: string;
  session: string;
  title: string | null;
  path: string;
  text: string; // the file as written
  summary: string; // Markdown: the summary first, the machine fields below
}

export interface ModelSettings {
  provider: string;
  model: string | null; // null: the provider has no default model and none is chosen yet
  providers: string[];
  apiKeyEnv: string | null;
  revision: string;
  keyReady: boolean; // the route resolves: a key was found, or none is needed
  keyProblem: string | null; // what to set when it does not
  settingsFile: string;
  globalFile?: string; // GLOBAL.md; absent from older servers and from setApiKey's answer
}

/** The history entries a committed review made (receipts carry it), and what they changed. */
export interface HistoryLink {
  globalEntry: string | null;
  workspaceEntry: string | null;
  added: string[];
  changed: string[];
  removed: string[];
  globalChanged: boolean;
}

/** One change of a consolidation, as its result names it: "Added run-ci-before-push (feedback)". */
export interface ChangedRecord {
  verb: 'Added' | 'Changed' | 'Removed' | 'Rewrote';
  name: string; // a record's name, or GLOBAL.md
  type: string | null;
  path: string | null; // the file to open, when the change left one
}

/** What `remem.lsp.consolidate` answers (asked with `announce: false`, the extension tells it). */
export interface ConsolidationOutcome {
  review: string;
  status: string;
  changes: number;
  receipt: string; // the receipt file
  title: string;
  message: string;
  alreadyReviewed: boolean;
  changed: ChangedRecord[];
  history: HistoryLink | null;
}

/** `remem/models`: whether a provider's route has its key, and the models its API lists (`note`: why none). */
export interface ModelList {
  provider: string;
  keyReady: boolean;
  keyProblem: string | null;
  models: string[];
  note: string | null;
}

export interface ForkResult {
  id: string | null;
  // Claude Code and Codex: the shell command that continues the branch in its harness (from the
  // session's folder, with the variable that finds the harness's home when needed); `note` says
  // why there is none when no home of the harness holds the branch.
  command?: string | null;
  note?: string | null;
}

/** A listing of the workspace `cwd` (of everything when null) has read `done` of `total` logs. */
export interface SessionsProgressParams {
  cwd: string | null;
  done: number;
  total: number;
}

export interface StatusParams {
  // `no-server`: the client's own, for a language server that is not running (never sent by it).
  state: 'connected' | 'starting' | 'unavailable' | 'no-server';
  message?: string | null;
  consolidating?: string | null;
}

export interface HistoryActor {
  kind: 'cli' | 'agent' | 'consolidation' | 'hand-edit' | 'recovered' | 'revert';
  session?: string | null;
  client?: string | null;
  review?: string | null;
  reverts?: string | null;
}

export interface HistoryStat {
  added: string[];
  changed: string[];
  removed: string[];
  insertions: number;
  deletions: number;
}

/** One entry of `remem/memoryHistory`: a generation of Global or of a workspace. */
export interface HistoryEntry {
  id: string;
  parent: string | null;
  scope: 'global' | 'workspace';
  workspace: string | null;
  actor: HistoryActor;
  before: string;
  after: string;
  at: string; // ISO 8601, UTC
  stat: HistoryStat | null;
}

export interface HistoryLogResult {
  scope: 'global' | 'workspace';
  workspace: string | null;
  entries: HistoryEntry[];
  problem?: string | null; // why the history lacks a change it could not record
  // How many older entries the server's limit left out; null: not counted (an older entry cannot
  // be read); absent from a server older than protocol 33.
  more?: number | null;
}

export interface MemoryAtResult {
  entry: HistoryEntry;
  files: Record<string, string>;
  // The files whose bytes were no UTF-8 (their text holds U+FFFD there); absent from a server
  // older than protocol 36.
  undecoded?: string[];
}

export interface RevertResult {
  status: 'committed' | 'no-change' | 'conflict';
  revision: string;
  history: string | null;
}
