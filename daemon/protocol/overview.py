"""The memory overview's wire types: Global and one workspace's records with their health, and the
workspace's recent reviews, as the editor's Memory view shows them (`memory/overview`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

MAX_RECEIPTS = 20  # the newest reviews an overview lists


class Health(BaseModel):
    path: str
    valid: bool  # no errors
    problems: int  # errors and warnings


class WorkspaceFolder(BaseModel):
    key: str | None
    folder: str | None  # None until the workspace has memory
    index: str | None  # `MEMORY.md`, when it exists


class RecordRow(Health):
    name: str  # as its front matter says, else its file name's stem
    description: str
    type: str


class ReceiptRow(BaseModel):
    review: str
    status: str  # the receipt's, or `interrupted`: under way, no run holding it (`sessions.INTERRUPTED_WHY`)
    session: str
    title: str | None
    changes: int
    updatedAt: str
    path: str


class MemoryOverview(BaseModel):
    # `global` on the wire; a keyword in Python.
    model_config = ConfigDict(validate_by_name=True, serialize_by_alias=True)
    global_: Health = Field(validation_alias="global", serialization_alias="global")
    workspace: WorkspaceFolder
    records: list[RecordRow]
    receipts: list[ReceiptRow]  # the newest `MAX_RECEIPTS` reviews of the workspace, newest first
