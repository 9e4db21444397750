/**
 * The extension's own ids, each written once here: its commands (`remem.*`), views, settings,
 * context key, the rows' context values, webview and status item; and the sentences a view and a
 * message both say. The server's ids (`remem.lsp.*`, `remem/…`) are in
 * `protocol.ts`. `package.json` contributes the same ids; `test/manifest.test.ts` checks that the
 * two agree.
 */

export const ClientCommands = {
  consolidateSession: 'remem.consolidateSession',
  branchFromTurn: 'remem.branchFromTurn',
  openGlobalMemory: 'remem.openGlobalMemory',
  openWorkspaceMemory: 'remem.openWorkspaceMemory',
  openTranscript: 'remem.openTranscript',
  showReceipt: 'remem.showReceipt',
  showMemoryHistory: 'remem.showMemoryHistory',
  selectModel: 'remem.selectModel',
  enterApiKey: 'remem.enterApiKey',
  renameSession: 'remem.renameSession',
  archiveSession: 'remem.archiveSession',
  restoreSession: 'remem.restoreSession',
  showArchived: 'remem.showArchived',
  hideArchived: 'remem.hideArchived',
  openFile: 'remem.openFile',
  learnMore: 'remem.learnMore',
  restartServer: 'remem.restartServer',
  showLog: 'remem.showLog',
  refreshSessions: 'remem.refreshSessions',
  refreshMemory: 'remem.refreshMemory',
} as const;

/** The titles, as `package.json` gives them, of the extension's commands that its messages name or
 * offer as buttons, or whose pickers they title. */
export const CommandTitles = {
  consolidateSession: 'Consolidate Session',
  branchFromTurn: 'Branch from Turn…',
  openTranscript: 'Open Session Transcript',
  showReceipt: 'Show Receipt',
  showMemoryHistory: 'Show Memory History',
  selectModel: 'Select Consolidation Model',
  enterApiKey: 'Enter API Key…',
  renameSession: 'Rename Session…',
  archiveSession: 'Archive Session',
  restoreSession: 'Restore Session',
  restartServer: 'Restart Server',
  showLog: 'Show Log',
} as const;

/** A command as the Command Palette names it: "Remem: Restart Server". */
export function paletteName(title: string): string {
  return `Remem: ${title}`;
}

/** The button that opens a settings file or the Settings editor. */
export const OPEN_SETTINGS = 'Open Settings';
/** VS Code's own command that opens the Settings editor, at the setting its argument names. */
export const VSCODE_OPEN_SETTINGS = 'workbench.action.openSettings';

export const Views = {
  sessions: 'remem.sessions',
  memory: 'remem.memory',
} as const;

/** The views' names, as `package.json` contributes them, for the messages that send the user there. */
export const ViewNames = {
  sessions: 'Session Branches',
  memory: 'Memory',
} as const;

/** What Session Branches' empty state and a command's session picker both say of a folder none of
 * whose sessions could be read. */
export const SESSIONS_UNREADABLE = 'No agent sessions of this workspace could be read';

const SECTION = 'remem';
const COMMAND_KEY = 'command';

/** The settings: `remem.command`, read as `section`/`command`, named whole elsewhere; and
 * `remem.trace.server`, which the language client reads itself (its id is the section). */
export const Settings = {
  section: SECTION,
  command: COMMAND_KEY,
  commandName: `${SECTION}.${COMMAND_KEY}`,
  traceName: `${SECTION}.trace.server`,
} as const;

/** When-clause context keys the extension sets. */
export const ContextKeys = {
  showArchived: 'remem.showArchived', // archived sessions are shown: the view's eye button hides them
} as const;

/** The rows' `viewItem` context values, each written once: `package.json`'s `view/item/context`
 * menus match them (`test/menus.test.ts` checks the two agree). A session's row joins its tokens
 * with `ROW_TOKEN_SEPARATOR` (`session:active:finished:eligible:reviewed`), and a menu matches one
 * token (`viewItem =~ /:eligible/`). */
export const RowContexts = {
  session: 'session', // a session of its own, first: the session menus
  active: 'active', // Archive
  archived: 'archived', // Restore
  live: 'live', // an agent still writes it
  finished: 'finished',
  eligible: 'eligible', // Consolidate
  reviewed: 'reviewed', // Show Receipt
  branch: 'branch', // an in-file branch, part of its session's file: no session menu
  inlineSubagent: 'inline-subagent', // a subagent inside its session's file: likewise
  memoryFile: 'memoryFile', // Global memory, the index, a record: Show Memory History
  receipt: 'receipt', // a receipt, which a click opens
} as const;
export const ROW_TOKEN_SEPARATOR = ':';

export const RECEIPT_VIEW_TYPE = 'remem.receipt';
export const STATUS_ITEM = 'remem.status';
