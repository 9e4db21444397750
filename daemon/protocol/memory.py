"""The memory wire types: a record, a batch's changes, a scope's snapshot, a commit's result and
a history entry, as the daemon sends them and its clients send back."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

RECORD_SUFFIX = ".md"
# The longest record name a client may send: a file name's 255 bytes (`fsutil.NAME_MAX`, which
# the protocol may not import) less `.md`, so any record file a workspace can hold, one named by
# hand past the validator's 64 characters too, can be named to delete it. Anything longer names
# no file, and a refusal quoting it could be as long as the request (decision 0508).
NAME_SENT_MAX = 255 - len(RECORD_SUFFIX)
RecordName = Annotated[str, Field(max_length=NAME_SENT_MAX)]
# How what a client sends is read: no field the model lacks, and each value of the JSON type the
# schema names, never coerced to it (decision 0475). Every request's params (`rpc._Params`, a
# fork's request), and the records and changes of a batch.
STRICT = ConfigDict(strict=True, extra="forbid")
ActorKind = Literal["cli", "agent", "consolidation", "hand-edit", "recovered", "revert"]


class Record(BaseModel):
    """One memory record as agents and the wire see it; `content` is the Markdown body."""

    model_config = STRICT
    name: RecordName
    description: str
    type: str
    content: str

    @property
    def file_name(self) -> str:
        return f"{self.name}{RECORD_SUFFIX}"


class PutChange(BaseModel):
    model_config = STRICT
    action: Literal["put"]
    record: Record


class DeleteChange(BaseModel):
    model_config = STRICT
    action: Literal["delete"]
    name: RecordName


Change = Annotated[PutChange | DeleteChange, Field(discriminator="action")]


class GlobalSnapshot(BaseModel):
    revision: str
    content: str


class WorkspaceSnapshot(BaseModel):
    key: str
    cwd: str
    revision: str
    records: list[Record]


class CommitResult(BaseModel):
    status: Literal["committed", "no-change", "conflict"]
    revision: str
    history: str | None = None  # the history entry of a committed generation, when one was written


class Actor(BaseModel):
    """Who made a generation; ids only, never content."""

    model_config = ConfigDict(extra="forbid")
    kind: ActorKind
    session: str | None = None  # the MCP session, or the session a consolidation reviewed
    client: str | None = None  # the MCP client's name and version
    review: str | None = None  # the consolidation review id
    # The entry whose content a revert brought back; none for a revert to the empty state before
    # its scope's first entry.
    reverts: str | None = None


class FileStat(BaseModel):
    added: list[str] = []
    changed: list[str] = []
    removed: list[str] = []
    insertions: int = 0
    deletions: int = 0


class HistoryEntry(BaseModel):
    id: str  # the git commit id
    parent: str | None
    scope: Literal["global", "workspace"]
    workspace: str | None = None  # the workspace key
    actor: Actor
    before: str
    after: str
    at: str
    stat: FileStat | None = None  # filled in where asked for (it costs a tree diff)
