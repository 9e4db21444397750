"""Every name the language server shares with the editor, written once: the custom requests
(`remem/*`) it answers, the notifications it sends, its commands (`remem.lsp.*`), the
extension's commands its lenses and links run, and the transcript documents' URI scheme.

The golden file (`tests/contract/protocol.json`) holds the requests, commands, notifications
and the scheme, and the extension's `src/protocol.ts` is checked against it; the extension's
commands named here are checked against the ones it registers.
"""

from __future__ import annotations

# Requests the extension sends; params and results are in docs/lsp.md.
SESSION_TREE = "remem/sessionTree"
SESSION_TURNS = "remem/sessionTurns"
TRANSCRIPT = "remem/transcript"
MEMORY_OVERVIEW = "remem/memoryOverview"
RECEIPT = "remem/receipt"
MEMORY_HISTORY = "remem/memoryHistory"
MEMORY_AT = "remem/memoryAt"
REVERT_MEMORY = "remem/revertMemory"
MODELS = "remem/models"
SETTINGS = "remem/settings"
REQUEST_PREFIX = "remem/"  # what the server's own requests and notifications start with

# Notifications the server sends.
STATUS = "remem/status"
MEMORY_CHANGED = "remem/memoryChanged"
TREE_CHANGED = "remem/treeChanged"
SESSIONS_PROGRESS = "remem/sessionsProgress"

# Server commands (`workspace/executeCommand`). Never `remem.*` without `lsp.`: those are the
# extension's, and VS Code refuses a command id registered twice.
CONSOLIDATE = "remem.lsp.consolidate"
FORK = "remem.lsp.fork"
RENAME = "remem.lsp.rename"
ARCHIVE = "remem.lsp.archive"
RESTORE = "remem.lsp.restore"
REGENERATE_INDEX = "remem.lsp.regenerateIndex"
SELECT_MODEL = "remem.lsp.selectModel"
SET_API_KEY = "remem.lsp.setApiKey"

# The extension's commands that the server's lenses and receipt links run.
BRANCH_FROM_TURN = "remem.branchFromTurn"  # its one branching flow: modal confirmation, then the child
# Its consolidation flow: the model route checked first (offering a key or a model), refusals
# explained (invalid memory shows its problems), failures logged.
CONSOLIDATE_SESSION = "remem.consolidateSession"
SHOW_RECEIPT = "remem.showReceipt"  # the receipt's summary
OPEN_TRANSCRIPT = "remem.openTranscript"  # the transcript at a turn

# Transcripts: `remem-session:/<encodeURIComponent(id)>/<title>.md` (lsp/transcripts.py).
TRANSCRIPT_SCHEME = "remem-session"

REQUESTS = (
    SESSION_TREE,
    SESSION_TURNS,
    TRANSCRIPT,
    MEMORY_OVERVIEW,
    RECEIPT,
    MEMORY_HISTORY,
    MEMORY_AT,
    REVERT_MEMORY,
    MODELS,
    SETTINGS,
)
NOTIFICATIONS = (STATUS, MEMORY_CHANGED, TREE_CHANGED, SESSIONS_PROGRESS)
COMMANDS = (CONSOLIDATE, FORK, RENAME, ARCHIVE, RESTORE, REGENERATE_INDEX, SELECT_MODEL, SET_API_KEY)
EXTENSION_COMMANDS = (BRANCH_FROM_TURN, CONSOLIDATE_SESSION, SHOW_RECEIPT, OPEN_TRANSCRIPT)
