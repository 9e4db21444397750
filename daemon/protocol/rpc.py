"""The daemon's wire protocol: every method's params and result, shared by server and clients.

Messages are JSON-RPC 2.0, one per line (newline-delimited JSON), at most `MAX_MESSAGE_BYTES`.
`PROTOCOL_VERSION` changes whenever a method's shape changes incompatibly; a client and a
daemon that disagree on it (or on the app version) never talk past the `daemon/hello`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .. import __version__
from .consolidation import ConsolidationResult, Receipt
from .forks import ForkRequest, ForkResult
from .memory import (
    STRICT,
    Change,
    CommitResult,
    DeleteChange,
    FileStat,
    GlobalSnapshot,
    HistoryEntry,
    PutChange,
    Record,
    WorkspaceSnapshot,
)
from .overview import MemoryOverview
from .sessions import FlatNode, ListError, Listing, SessionFormat, SessionMeta, TurnSummary, no_problems

# 2: the agents/* methods; 3: sessions of every harness, consolidation/models;
# 4: reader problems on rows, inline subagents; 5: memory/overview, consolidation/receipt and
# receipts of one workspace; 6: a tree node's defaultTitle; 7: a transcript's heading;
# 8: the receipt files consolidation/receipts could not read; 9: a turns answer's format;
# 10: a listed session's digest may be null (a harness file's, until a review needs it);
# 11: consolidation/finished; 12: remem.lsp.regenerateIndex takes no `announce`; 13: a
# Claude Code or Codex fork's result says where its harness resumes the child (`cwd`, `env`,
# the whole `command`, or a `note` why none), and remem.lsp.fork answers that command; 14: a
# session answer carries `settingsProblems` while settings.yml is invalid (decision 0363); 15:
# consolidation/run may refuse `CUT_OFF`, a Claude Code session damage cut off from its turns (0368);
# 16: a tree carries the `errors` of the logs and folders it could not read, and a home or lock
# file in the way is its own error, HOME_UNUSABLE, never an internal error (decision 0370).
# 17: a turns and a transcript answer say the session's `revision` they were read at (the turns
# also its `kind` and `parent`), which remem.lsp.fork takes back as `expectedRevision`: a branch
# from what the editor shows is refused `STALE_SOURCE` once the session changed (decision 0369).
# 18: hello carries the client's and the daemon's `harnessRoots`, and ignores fields it does not
# know: a shell whose environment names other harness folders than the daemon's is told (0372).
# 19: a receipt carries its evidence's digest (`source.evidence`) and the review it `repeats`,
# and a consolidation result that `repeats`: a renamed session is not reviewed again (0378).
# 20: a receipt's source names its session's format: what its seqs count (events or lines).
# 21: a fork's `expectedRevision` must be a session revision (dev:ino:size:mtime:ctime).
# 22: hello says which home the daemon serves (its folder's device and inode): a client of a
# copied home, status file and all, starts a daemon of its own (decision 0383).
# 23: the language server's `remem.lsp.fork` takes only a well-formed `expectedRevision`.
# 24: a consolidation result says why a failed review failed (`reason`).
# 25: a fork may name its cut by turn (`afterTurn`), found after the journal (decision 0393).
# 26: `memory/log` may keep only the entries that changed one file (`file`).
# 27: `memory/log` says why the scope's history could not record what it lacks (`problem`).
# 28: HOME_UNUSABLE for a lock file in the way carries its `path` and `reason` in `data`.
# 29: a write the file system refuses (a full disk, a read-only mount) is UNWRITABLE (0398).
# 30: the language server's `remem/revertMemory` takes the `expectedRevision` the user decided on.
# 31: `memory/revert` and `remem/revertMemory` may bring back the state before an entry (`before`).
# 32: consolidation/run and consolidation/cancel may name the caller's `run`: its cancel stops it
# alone, never another client's run of the session that this one waits for.
# 33: memory/log says how many older entries its limit left out (`more`); memory/diff may answer
#     the stat only (`patch: false`).
# 34: consolidation/settings/read (and select, credentials/set) answer `model: null` while the
#     provider has no default model and none is chosen (decision 0493).
# 35: a record's name, in a put and a delete, is at most 252 characters (decision 0508).
# 36: memory/showAt names the files whose bytes are no UTF-8 (`undecoded`, decision 0510).
# 37: sessions/rename and sessions/archive answer the title the session is shown with
#     (`displayTitle`), which its file may give it where remem's `title` is null.
# 38: hello says whether the daemon logs to the home's log (`logsToFile`): a client names that
#     file, or the standard error of `remem daemon run`, as where a bug's traceback went (0527).
# 39: agents/update is refused SCOPE_BUSY when another process holds its scope's lock too long.
# 40: a review state `unknown`, and a listing error's `kind` (`reviews`: the receipts' folder).
# 41: a listing error's `kind` `metadata`: remem's file of titles and archive states.
# 42: a review state `interrupted`, and consolidation/receipts names such reviews (`interrupted`).
# 43: a turns and a transcript answer's `revision` ends `:live` when a Claude Code session was live
# as they were read, and a fork's `expectedRevision` may: that decides where its last turn ends (0544).
PROTOCOL_VERSION = 43
APP_VERSION = __version__
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
# The largest answer a client buffers: the ceiling of the setting `daemon.max_answer_bytes`.
MAX_ANSWER_BYTES = 1 << 30

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Params(_Strict):
    """A request's params: each value of the JSON type its schema names, never coerced to it.
    Coerced, `"before": "yes"` reverted a workspace to empty, `"limit": "3"` was 3 and `2.0` an
    int (decision 0475). The daemon validates the decoded JSON in python mode, where strict
    refuses a string for an Enum or a Path: a params field holds only JSON's own types and
    Literals."""

    model_config = STRICT


def _must_be_absolute(cwd: str | None) -> str | None:
    # A relative cwd would be resolved against the daemon's own folder, not the client's.
    if cwd is not None and not os.path.isabs(cwd):
        raise ValueError("cwd must be an absolute path")
    if cwd is not None and "\0" in cwd:  # no folder has one: it would only be stored as garbage
        raise ValueError("cwd holds a NUL character, which no path can")
    return cwd


class Empty(_Params):
    pass


class HelloParams(BaseModel):
    """What a client says first. Fields a daemon does not know are ignored, not refused: every
    version must answer hello, which is how a client finds a daemon of another version. Those
    it knows are strict, as every request's params are (`_Params`)."""

    model_config = ConfigDict(strict=True)  # and extra fields ignored

    protocol: int
    version: str
    # Each harness's default session folders in the client's environment, keyed by format
    # (`sources.default_roots()` there); an older client leaves it out.
    harnessRoots: dict[str, list[str]] | None = None


class HelloResult(_Strict):
    protocol: int
    version: str
    pid: int
    # The daemon's own: the default folders it reads, from the environment it was started in.
    harnessRoots: dict[SessionFormat, list[str]]
    # The home it serves, as `Home.identity` says it ("device:inode"), or None once it is gone.
    home: str | None
    # Whether it was started to log to the home's `state/daemon.log` (a client spawned it), or
    # logs to its standard error only (`remem daemon run` in the foreground).
    logsToFile: bool


class WatchStatus(_Strict):
    """How the daemon notices changes it did not make itself."""

    backend: Literal["inotify", "polling", "off"]  # off: not (yet, or any more) watching
    # Why polling (the setting, or the inotify limit that was hit), or why off ("starting: …").
    reason: str | None = None
    paths: list[str]
    missing: list[str]  # configured roots that do not exist (yet); not watched


class StatusResult(_Strict):
    pid: int
    protocol: int
    version: str
    startedAt: str
    home: str
    clients: int
    watch: WatchStatus
    # settings.yml's problems (key and line) while the daemon runs on the last valid settings
    settingsProblems: list[str] = Field(default_factory=list)


class WorkspaceParams(_Params):
    """A workspace is named by its project folder; the daemon derives the key and never reads it."""

    cwd: str = Field(min_length=1)

    _absolute = field_validator("cwd")(lambda cls, value: _must_be_absolute(value))


class ReplaceGlobalParams(_Params):
    expectedRevision: str
    content: str


class CommitWorkspaceParams(WorkspaceParams):
    expectedRevision: str
    changes: list[Change]


class RegenerateResult(_Strict):
    written: bool


class HistoryLogParams(_Params):
    """`memory/log`: one scope's history, newest first; `cwd` names a workspace, else Global."""

    cwd: str | None = None
    limit: int | None = Field(default=None, ge=1)  # None: every entry
    stat: bool = True  # what each entry added, changed and removed (a tree diff each)
    # Only the entries that added, changed or removed this file of the scope (`prefer-uv.md`,
    # `GLOBAL.md`), found by its blob in each tree, before the limit and the stats are taken.
    file: str | None = Field(default=None, min_length=1, max_length=255)

    _absolute = field_validator("cwd")(lambda cls, value: _must_be_absolute(value))


class HistoryLogResult(_Strict):
    scope: Literal["global", "workspace"]
    workspace: str | None = None
    entries: list[HistoryEntry]
    # Why the history lacks what the answering process last changed or found in this scope (a
    # write of an entry failed), until an entry of it is written.
    problem: str | None = None
    # How many of the scope's entries (of `file`'s) are older than those listed: 0 with no
    # `limit`; None when they cannot be counted (an older entry is damaged).
    more: int | None = 0


class HistoryEntryParams(_Params):
    entry: str = Field(min_length=1, max_length=64)  # a history entry id, or 7+ of its hex digits


class HistoryDiffParams(HistoryEntryParams):
    to: str | None = Field(default=None, max_length=64)  # None: the entry against the one before
    patch: bool = True  # false: the stat only, and `patch` is empty (no diff of any file's text)


class HistoryDiffResult(_Strict):
    fromEntry: str | None  # None: the scope's empty beginning
    toEntry: str
    stat: FileStat
    patch: str


class HistoryShowResult(_Strict):
    entry: HistoryEntry
    files: dict[str, str]  # file name -> text, as the entry left them, U+FFFD where bytes were no UTF-8
    undecoded: list[str] = []  # the files whose bytes were no UTF-8: a text's own U+FFFD is not said


class RevertParams(HistoryEntryParams):
    expectedRevision: str | None = None  # None: the scope's revision when the revert is planned
    before: bool = False  # the state before the entry (it undone, and all after it), not after it


class ContextResult(_Strict):
    text: str


class ListParams(_Params):
    cwd: str | None = None

    _absolute = field_validator("cwd")(lambda cls, value: _must_be_absolute(value))


class SessionParams(_Params):
    id: str = Field(min_length=1)


class TranscriptParams(SessionParams):
    # The name the client shows the session by (the editor's tree label), so that the heading
    # reads as its tab; None: the display title.
    title: str | None = Field(default=None, min_length=1, max_length=1_000)


class TreeResult(_Strict):
    nodes: list[FlatNode]
    # The logs and folders the tree looked at and could not read, as `sessions/list` has them: a
    # workspace whose sessions cannot be read is not one without sessions.
    errors: list[ListError] = Field(default_factory=list)
    settingsProblems: list[str] = Field(default_factory=list, exclude_if=no_problems)


class TurnsResult(_Strict):
    # What the turns' seqs are: a DSH log's event seqs, or a Claude Code or Codex file's lines.
    format: SessionFormat
    turns: list[TurnRow]
    # The session's revision when they were read: a fork's `expectedRevision`, so a turn chosen
    # from them is never cut from a session that changed since (decision 0369).
    revision: str
    kind: Literal["root", "fork", "subagent"]  # as the listing has it: a subagent is not reviewed
    parent: str | None
    settingsProblems: list[str] = Field(default_factory=list, exclude_if=no_problems)


class TurnRow(_Strict):
    """One row of `remem sessions turns --json`."""

    turn: int
    startSeq: int
    endSeq: int | None
    status: str
    user: str
    forkable: bool

    @property
    def fork_at(self) -> int:
        """What a fork after this turn names: its end; the start of a turn that cannot be
        branched from, which the daemon refuses saying why (still open, rolled back, ...)."""
        return self.endSeq if self.forkable and self.endSeq is not None else self.startSeq

    @classmethod
    def of(cls, turn: TurnSummary, branchable: bool) -> TurnRow:
        """`turn` of a session that can (`branchable`) or cannot be branched at all: a
        subagent's turn ends as it did, and still none of its turns is offered."""
        return cls(
            turn=turn.turn,
            startSeq=turn.startSeq,
            endSeq=turn.endSeq,
            status=turn.status,
            user=turn.user,
            forkable=branchable and turn.forkable,
        )


class TranscriptResult(_Strict):
    markdown: str
    revision: str  # the session's, when it was read: what a branch from this text is checked against
    settingsProblems: list[str] = Field(default_factory=list, exclude_if=no_problems)


class LogResult(_Strict):
    """`remem sessions show --json`: the header and events exactly as logged."""

    header: dict[str, Any]
    title: str | None
    turns: list[TurnRow]
    events: list[dict[str, Any]]
    settingsProblems: list[str] = Field(default_factory=list, exclude_if=no_problems)


class RenameParams(SessionParams):
    title: str
    expectedGeneration: int | None = None


class ArchiveParams(SessionParams):
    archived: bool
    expectedGeneration: int | None = None


class MetaResult(SessionMeta):
    id: str
    # The title `sessions list` and `tree` show: remem's own (`title`), else the one its file
    # gives it; null for an untitled session. What a text answer names the session by.
    displayTitle: str | None


class ConsolidateParams(_Params):
    session: str = Field(min_length=1)
    # The caller's name for this run, which its cancel repeats: only this run stops then, never
    # another client's run of the same session, which this one may be waiting for (none: all).
    run: str | None = Field(default=None, min_length=1, max_length=128)


class CancelResult(_Strict):
    cancelled: bool


class OverviewParams(_Params):
    """The workspace by its folder, and the texts an editor holds unsaved: they are judged in place
    of their files (by file name within Global's folder or the workspace's memory folder)."""

    cwd: str
    globalText: str | None = None
    workspaceTexts: dict[str, str] = {}

    _absolute = field_validator("cwd")(_must_be_absolute)

    @field_validator("workspaceTexts")
    @classmethod
    def _plain_names(cls, texts: dict[str, str]) -> dict[str, str]:
        bad = sorted(n for n in texts if not n or n in (".", "..") or "/" in n or "\\" in n or "\0" in n)
        if bad:
            raise ValueError(f"workspaceTexts are keyed by a file name in the memory folder, not {bad}")
        return texts


class ReceiptsParams(_Params):
    """Filters, each optional: the reviews of one session, of one workspace (by its folder), or
    one review."""

    session: str | None = None
    cwd: str | None = None
    review: str | None = None

    _absolute = field_validator("cwd")(_must_be_absolute)


class ReceiptsResult(_Strict):
    receipts: list[Receipt]
    errors: list[ListError] = []  # receipt files that are not valid receipts, each with why
    # The reviews among `receipts` whose receipt says under way (prepared, running, proposed)
    # but which no run holds: stopped without finishing; consolidating the session runs it again.
    interrupted: list[str] = []


class ReviewParams(_Params):
    review: str = Field(pattern=r"^[0-9a-f]{64}$")  # a review id, never a path


class ReceiptView(_Strict):
    """One receipt as a person reads it: its file exactly as written, and its session's title and
    turns as the daemon knows them (None and [] when the session is gone)."""

    receipt: Receipt
    path: str
    text: str
    title: str | None
    turns: list[TurnRow]


# How a route's key problem begins when no key is set at all (not one that cannot be sent): a
# CLI whose own shell holds the key variable then says how the daemon gets it.
NO_API_KEY = "no API key for provider"


class ModelSettings(_Strict):
    """The consolidation route as `remem settings model` shows it (never the API key)."""

    provider: str
    # None: no model is chosen for the provider, whose default remem does not know (every one but
    # deepseek), or the one set is deepseek's default, which it does not serve (decisions 0493,
    # 0500); a client that writes a choice must not send back a model id the provider never had.
    model: str | None
    providers: list[str]
    apiKeyEnv: str | None
    revision: str  # of settings.yml, for the compare-and-swap of `consolidation/settings/select`
    keyReady: bool = False  # whether the route resolves: a key found (or none needed)
    keyProblem: str | None = None  # what to set when it does not, naming the variable and file


class ModelsParams(_Params):
    provider: str = Field(min_length=1)


class ModelList(_Strict):
    """`consolidation/models`: a provider's route and the models its API lists (`GET /models`);
    `note` says why there is no list (no key, no such endpoint, offline): type the id then."""

    provider: str
    keyReady: bool
    keyProblem: str | None = None
    models: list[str] = []
    note: str | None = None


class SetApiKeyParams(_Params):
    """`consolidation/credentials/set`: a provider's key, stored in credentials.yml (never logged)."""

    provider: str = Field(min_length=1)
    apiKey: str = Field(min_length=1, repr=False)


class SelectModelParams(_Params):
    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)
    expectedRevision: str


# -- Agents (the MCP server): revisions stay between daemon and host, never reach the agent --

MAX_AGENT_CHANGES = 50  # changes in one memory_update call


class AgentObservation(_Params):
    """What an agent's session last saw of each scope; the host binds its writes to it."""

    workspace: str  # the workspace key the context was read for
    globalRevision: str
    workspaceRevision: str


class AgentContextParams(WorkspaceParams):
    known: AgentObservation | None = None  # the observation whose text the host already holds


class AgentContextResult(_Strict):
    """`agents/context`: the text the agent loads, and the observation it stands for."""

    text: str | None  # None: unchanged since `known`, whose text the host has
    observed: AgentObservation


class AgentRecordParams(WorkspaceParams):
    name: str = Field(min_length=1, max_length=200)


class AgentRecordResult(_Strict):
    record: Record | None  # None: no record of that name in this workspace


class AgentIndexEntry(_Strict):
    name: str
    description: str
    type: str


class AgentIndexResult(_Strict):
    records: list[AgentIndexEntry]


class ReplaceGlobalChange(_Params):
    action: Literal["replace-global"]
    content: str


AgentChange = Annotated[PutChange | DeleteChange | ReplaceGlobalChange, Field(discriminator="action")]


class AgentIdentity(_Params):
    """Who wrote, for the audit entry: remem's id of the MCP session, and the client's name."""

    session: str = Field(min_length=1, max_length=64)
    client: str | None = Field(default=None, max_length=200)


class AgentUpdateParams(WorkspaceParams):
    observed: AgentObservation
    changes: list[AgentChange] = Field(min_length=1, max_length=MAX_AGENT_CHANGES)
    agent: AgentIdentity


class AgentUpdateResult(_Strict):
    status: Literal["committed", "no-change", "stale"]
    scope: Literal["global", "workspace"]
    changes: int
    revision: str  # the scope's revision now: the host's next observation of it
    warnings: list[str] = []  # e.g. a likely credential in what was written; committed anyway


# A method's params and result models, for the signatures generic over a method.
Params = TypeVar("Params", bound=BaseModel)
Result = TypeVar("Result", bound=BaseModel)


@dataclass(frozen=True)
class Method(Generic[Params, Result]):
    """One daemon method: its name on the wire, its params and result models, and whether a
    request whose connection broke may be sent once more (`resend`): a read, or a write whose
    repetition changes nothing and is answered alike (a fork's operation id, an index made
    again). A write compare-and-swapped on a revision or a generation, one whose second answer
    would differ from the first (a revert's `no-change`, a rename's next generation), or one that
    starts work, is never resent: it may have been applied, and only the caller can look. A write
    that is resent has `again`: what to say when the daemon died while it worked on it (it is
    not resent then: the same request might kill the next daemon), that it may or may not have
    been done and why asking again is safe."""

    name: str
    params: type[Params]
    result: type[Result]
    resend: bool = True
    again: str | None = None
    # The method that asks a request of this one to stop, sent with the same params on the same
    # connection: the request's own answer then says what became of it.
    cancel: str | None = None


DAEMON_HELLO = Method("daemon/hello", HelloParams, HelloResult)
DAEMON_STATUS = Method("daemon/status", Empty, StatusResult)
DAEMON_SHUTDOWN = Method("daemon/shutdown", Empty, Empty)
MEMORY_READ_GLOBAL = Method("memory/readGlobal", Empty, GlobalSnapshot)
MEMORY_READ_WORKSPACE = Method("memory/readWorkspace", WorkspaceParams, WorkspaceSnapshot)
MEMORY_REPLACE_GLOBAL = Method("memory/replaceGlobal", ReplaceGlobalParams, CommitResult, resend=False)
MEMORY_COMMIT_WORKSPACE = Method("memory/commitWorkspace", CommitWorkspaceParams, CommitResult, resend=False)
MEMORY_REGENERATE_INDEX = Method(
    "memory/regenerateIndex", WorkspaceParams, RegenerateResult,
    again="MEMORY.md may or may not have been written again: running the command again is safe",
)  # fmt: skip
MEMORY_CONTEXT = Method("memory/context", WorkspaceParams, ContextResult)
MEMORY_LOG = Method("memory/log", HistoryLogParams, HistoryLogResult)
MEMORY_DIFF = Method("memory/diff", HistoryDiffParams, HistoryDiffResult)
MEMORY_SHOW_AT = Method("memory/showAt", HistoryEntryParams, HistoryShowResult)
MEMORY_REVERT = Method("memory/revert", RevertParams, CommitResult, resend=False)
MEMORY_OVERVIEW = Method("memory/overview", OverviewParams, MemoryOverview)
SESSIONS_LIST = Method("sessions/list", ListParams, Listing)
SESSIONS_TREE = Method("sessions/tree", WorkspaceParams, TreeResult)
SESSIONS_TURNS = Method("sessions/turns", SessionParams, TurnsResult)
SESSIONS_TRANSCRIPT = Method("sessions/transcript", TranscriptParams, TranscriptResult)
SESSIONS_LOG = Method("sessions/log", SessionParams, LogResult)
SESSIONS_FORK = Method(
    "sessions/fork", ForkRequest, ForkResult,
    again="the fork may or may not have been made: retrying with the same operation id is safe, "
    "it makes at most one child",
)  # fmt: skip
SESSIONS_RENAME = Method("sessions/rename", RenameParams, MetaResult, resend=False)
SESSIONS_ARCHIVE = Method("sessions/archive", ArchiveParams, MetaResult, resend=False)
CONSOLIDATION_RUN = Method(
    "consolidation/run", ConsolidateParams, ConsolidationResult, resend=False, cancel="consolidation/cancel"
)
CONSOLIDATION_CANCEL = Method("consolidation/cancel", ConsolidateParams, CancelResult)
CONSOLIDATION_RECEIPTS = Method("consolidation/receipts", ReceiptsParams, ReceiptsResult)
CONSOLIDATION_RECEIPT = Method("consolidation/receipt", ReviewParams, ReceiptView)
CONSOLIDATION_SETTINGS_READ = Method("consolidation/settings/read", Empty, ModelSettings)
CONSOLIDATION_SETTINGS_SELECT = Method(
    "consolidation/settings/select", SelectModelParams, ModelSettings, resend=False
)
CONSOLIDATION_CREDENTIALS_SET = Method(
    "consolidation/credentials/set", SetApiKeyParams, ModelSettings, resend=False
)
CONSOLIDATION_MODELS = Method("consolidation/models", ModelsParams, ModelList)
AGENTS_CONTEXT = Method("agents/context", AgentContextParams, AgentContextResult)
AGENTS_INDEX = Method("agents/index", WorkspaceParams, AgentIndexResult)
AGENTS_RECORD = Method("agents/record", AgentRecordParams, AgentRecordResult)
AGENTS_UPDATE = Method("agents/update", AgentUpdateParams, AgentUpdateResult, resend=False)

METHODS: dict[str, Method[Any, Any]] = {
    method.name: method
    for method in (
        DAEMON_HELLO,
        DAEMON_STATUS,
        DAEMON_SHUTDOWN,
        MEMORY_READ_GLOBAL,
        MEMORY_READ_WORKSPACE,
        MEMORY_REPLACE_GLOBAL,
        MEMORY_COMMIT_WORKSPACE,
        MEMORY_REGENERATE_INDEX,
        MEMORY_CONTEXT,
        MEMORY_LOG,
        MEMORY_DIFF,
        MEMORY_SHOW_AT,
        MEMORY_REVERT,
        MEMORY_OVERVIEW,
        SESSIONS_LIST,
        SESSIONS_TREE,
        SESSIONS_TURNS,
        SESSIONS_TRANSCRIPT,
        SESSIONS_LOG,
        SESSIONS_FORK,
        SESSIONS_RENAME,
        SESSIONS_ARCHIVE,
        CONSOLIDATION_RUN,
        CONSOLIDATION_CANCEL,
        CONSOLIDATION_RECEIPTS,
        CONSOLIDATION_RECEIPT,
        CONSOLIDATION_SETTINGS_READ,
        CONSOLIDATION_SETTINGS_SELECT,
        CONSOLIDATION_CREDENTIALS_SET,
        CONSOLIDATION_MODELS,
        AGENTS_CONTEXT,
        AGENTS_INDEX,
        AGENTS_RECORD,
        AGENTS_UPDATE,
    )
}


class MemoryChanged(_Strict):
    """`memory/changed`: a scope has a new revision (a commit, or an edit by hand)."""

    scope: Literal["global", "workspace"]
    workspace: str | None = None  # the workspace key
    cwd: str | None = None  # the workspace's project folder, when workspace.json names it
    revision: str | None  # None only when a record is not even a regular file
    valid: bool


class SessionsChanged(_Strict):
    """`sessions/changed`: a root's logs or a session's metadata changed; re-list it."""

    root: str


class SessionsProgress(_Strict):
    """`sessions/progress`: a listing (of the workspace `cwd`, or of everything) is indexing
    logs that changed; `done` of `total` are read. The last one has `done == total`."""

    cwd: str | None
    done: int
    total: int


class ConsolidationProgress(_Strict):
    """`consolidation/progress`: a phase of a running consolidation (or one model step)."""

    session: str
    phase: str  # freezing | waiting | model | model-step | model-answer | committing
    review: str | None = None
    attempt: int | None = None
    step: int | None = None


class ConsolidationFinished(_Strict):
    """`consolidation/finished`: a run of `session` ended, whoever asked for it; `outcome` is
    its receipt's status, the refusal's code when no review began (`CANCELLED`, `LIVE`, ...),
    `UNWRITABLE` or `HOME_UNUSABLE` as the run was answered, or `INTERNAL` when an unexpected
    error ended it. The session's review badge may have changed, committed or not."""

    session: str
    outcome: str


NOTIFICATIONS: dict[str, type[BaseModel]] = {
    "memory/changed": MemoryChanged,
    "sessions/changed": SessionsChanged,
    "sessions/progress": SessionsProgress,
    "consolidation/progress": ConsolidationProgress,
    "consolidation/finished": ConsolidationFinished,
}

# Application errors (JSON-RPC reserves -32000 to -32099 for the server's own).
INVALID_CHANGES = -32010  # data: {"problems": [...]} — nothing was written
MEMORY_INVALID = -32011  # data: {"revision", "files": [...]} — fix the files first
SESSION_REFUSED = -32012  # data: {"code": NOT_FOUND | OPEN_TURN | STALE_SOURCE | OP_CONFLICT | ...}
HISTORY_REFUSED = -32015  # the history cannot answer: the message says why (unknown entry, off, ...)
# data: {"code": NOT_FOUND | LIVE | SUBAGENT | NO_CWD | NO_ROUTE | CUT_OFF | ..., "files"?}: no review began
CONSOLIDATION_REFUSED = -32013
ANSWER_TOO_LARGE = -32014  # data: {"bytes", "limit"} — over daemon.max_answer_bytes; nothing was sent
# Something in remem's home stands in the way (a link, a folder where a lock file goes): the
# message names it and the fix, as the CLI says it without the daemon. data, for a lock file
# only: {"path", "reason"}.
HOME_UNUSABLE = -32016
# The file system refused a write (a full disk, a quota, a file-size limit, a read-only mount, no
# permission) before anything was published: nothing changed, and the message names the folder,
# the error and what to do. data: {"path": the folder, "errno": "ENOSPC" | "EROFS" | ...}.
UNWRITABLE = -32017
# A call (agents/update, an agent's read, memory/context, memory/log, memory/readGlobal,
# memory/readWorkspace) waited for its scope's lock, which another process (stopped or stuck)
# kept: nothing was written; the message names the lock.
SCOPE_BUSY = -32018


class RpcError(Exception):
    """A JSON-RPC error the daemon returns (or a client raises on receiving one)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class DaemonInfo(_Strict):
    """`state/daemon.json`: how to reach the running daemon; written once it listens."""

    pid: int
    socket: str
    protocol: int
    version: str
    startedAt: str
