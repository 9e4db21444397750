"""`remem/memoryOverview`: Global, one workspace's records and its recent receipts, with health.

The memory files are judged as the editor has them (an open document's unsaved text stands in
for its file, as in live validation), by the store's own validator in the server's process, in
a worker thread; a file is valid without errors, and its problems
count its warnings too. Receipts and the titles of their sessions come from the daemon: the
newest `MAX_RECEIPTS` reviews of this workspace, newest first.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from remem.daemon.home import Home
from remem.daemon.memory.canonical import decode
from remem.daemon.memory.diagnostics import Diagnostic, has_errors
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.lint import lint_workspace_folder
from remem.daemon.memory.record import INDEX_FILE, record_name_of
from remem.daemon.memory.validation import parse_record, validate_global
from remem.daemon.protocol.consolidation import Receipt
from remem.daemon.protocol.rpc import ListParams, ReceiptsParams

from .documents import path_of
from .server import RememServer

if TYPE_CHECKING:
    from remem.daemon.consolidation.receipts import ReceiptStore


MAX_RECEIPTS = 20


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
    status: str
    session: str
    title: str | None
    changes: int
    updatedAt: str
    path: str


class Overview(BaseModel):
    global_: Health = Field(serialization_alias="global")
    workspace: WorkspaceFolder
    records: list[RecordRow]
    receipts: list[ReceiptRow]


async def memory_overview(ls: RememServer, cwd: str) -> Overview:
    workspace = WorkspaceId.from_cwd(cwd)
    listing, receipts = await asyncio.gather(
        ls.link.api.list_sessions(ListParams(cwd=cwd)), ls.link.api.receipts(ReceiptsParams())
    )
    titles = {s.id: s.title for s in listing.sessions}
    mine = [r for r in receipts.receipts if r.target.workspace == workspace.key]
    rows = sorted(
        (_receipt_row(ls.stores.receipts, r, titles) for r in mine), key=lambda r: r.updatedAt, reverse=True
    )
    edited = _open_texts(ls, ls.home.workspaces / workspace.key)
    global_text = _open_texts(ls, ls.home.global_file.parent).get(ls.home.global_file.name)
    global_health, folder, records = await asyncio.to_thread(_memory, ls.home, workspace, edited, global_text)
    return Overview(global_=global_health, workspace=folder, records=records, receipts=rows[:MAX_RECEIPTS])


def _open_texts(ls: RememServer, folder: Path) -> dict[str, str]:
    """The texts the editor has open in `folder`, by file name: what the user sees, unsaved edits
    included, as live validation judges them."""
    return {
        path.name: document.source
        for uri, document in ls.workspace.text_documents.items()
        if (path := path_of(uri)) is not None and path.parent == folder
    }


def _memory(
    home: Home, workspace: WorkspaceId, edited: dict[str, str], global_text: str | None
) -> tuple[Health, WorkspaceFolder, list[RecordRow]]:
    folder = home.workspaces / workspace.key
    # A linked folder is never followed out of REMEM_HOME (the store refuses it as well).
    present = folder.is_dir() and not folder.is_symlink()
    index = folder / INDEX_FILE
    where = WorkspaceFolder(
        key=workspace.key,
        folder=str(folder) if present else None,
        index=str(index) if present and index.is_file() else None,
    )
    return _global(home.global_file, global_text), where, _records(folder, edited) if present else []


def _global(path: Path, edited: str | None) -> Health:
    if edited is not None:
        return _health(path, validate_global(edited))
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raw = b""  # no Global memory yet: an empty one, as the store reads it
    text, problems = decode(raw)
    return _health(path, problems + validate_global(text))


def _records(folder: Path, edited: dict[str, str]) -> list[RecordRow]:
    reports = lint_workspace_folder(folder, edited)
    rows = []
    for name in sorted(n for n in reports if record_name_of(n) is not None):
        try:
            text = edited[name] if name in edited else decode((folder / name).read_bytes())[0]
        except FileNotFoundError:
            continue  # deleted since it was validated: the next overview will not list it
        fields = parse_record(text, name).fields
        rows.append(
            RecordRow(
                name=fields.get("name") or str(record_name_of(name)),
                description=fields.get("description", ""),
                type=fields.get("type", ""),
                **_health(folder / name, reports[name]).model_dump(),
            )
        )
    return rows


def _health(path: Path, problems: list[Diagnostic]) -> Health:
    return Health(path=str(path), valid=not has_errors(problems), problems=len(problems))


def _receipt_row(store: ReceiptStore, receipt: Receipt, titles: dict[str, str | None]) -> ReceiptRow:
    attempt = receipt.attempt
    last_move = attempt.endedAt or attempt.startedAt if attempt is not None else None
    return ReceiptRow(
        review=receipt.review,
        status=receipt.status.value,
        session=receipt.source.session,
        title=titles.get(receipt.source.session),
        changes=len(receipt.changes),
        updatedAt=receipt.completedAt or last_move or receipt.createdAt,
        path=str(store.path(receipt.review)),
    )
