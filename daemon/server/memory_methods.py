"""The daemon's memory methods: the store's reads and compare-and-swap commits, off the event loop.

Every call runs in a worker thread, because it takes file locks, reads and fsyncs; the store's
own exceptions become JSON-RPC errors carrying every problem, so a client can show them as the
CLI does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from ..home import Home
from ..memory.batch import InvalidChanges
from ..memory.context import render_context
from ..memory.identity import WorkspaceId
from ..memory.store import CommitResult, GlobalSnapshot, MemoryInvalid, MemoryStore, WorkspaceSnapshot
from .jsonrpc import Handler
from .protocol import (
    INVALID_CHANGES,
    MEMORY_INVALID,
    CommitWorkspaceParams,
    ContextResult,
    Empty,
    RegenerateResult,
    ReplaceGlobalParams,
    RpcError,
    WorkspaceParams,
)

T = TypeVar("T")


class MemoryMethods:
    def __init__(self, home: Home) -> None:
        self.store = MemoryStore(home)

    def handlers(self) -> dict[str, Handler]:
        return {
            "memory/readGlobal": self.read_global,
            "memory/readWorkspace": self.read_workspace,
            "memory/replaceGlobal": self.replace_global,
            "memory/commitWorkspace": self.commit_workspace,
            "memory/regenerateIndex": self.regenerate_index,
            "memory/context": self.context,
        }

    async def read_global(self, params: Empty) -> GlobalSnapshot:
        return await _off_loop(self.store.read_global)

    async def read_workspace(self, params: WorkspaceParams) -> WorkspaceSnapshot:
        return await _off_loop(lambda: self.store.read_workspace(WorkspaceId.from_cwd(params.cwd)))

    async def replace_global(self, params: ReplaceGlobalParams) -> CommitResult:
        return await _off_loop(lambda: self.store.replace_global(params.expectedRevision, params.content))

    async def commit_workspace(self, params: CommitWorkspaceParams) -> CommitResult:
        workspace = WorkspaceId.from_cwd(params.cwd)
        return await _off_loop(
            lambda: self.store.commit_workspace(workspace, params.expectedRevision, params.changes)
        )

    async def regenerate_index(self, params: WorkspaceParams) -> RegenerateResult:
        written = await _off_loop(lambda: self.store.regenerate_index(WorkspaceId.from_cwd(params.cwd)))
        return RegenerateResult(written=written)

    async def context(self, params: WorkspaceParams) -> ContextResult:
        text = await _off_loop(lambda: render_context(self.store, WorkspaceId.from_cwd(params.cwd)))
        return ContextResult(text=text)


async def _off_loop(action: Callable[[], T]) -> T:
    try:
        return await asyncio.to_thread(action)
    except InvalidChanges as exc:
        problems = [p.model_dump(mode="json") for p in exc.problems]
        raise RpcError(
            INVALID_CHANGES, "the changes are invalid; nothing was written", {"problems": problems}
        ) from None
    except MemoryInvalid as exc:
        files = [f.model_dump(mode="json") for f in exc.files]
        data = {"revision": exc.revision, "files": files}
        raise RpcError(MEMORY_INVALID, f"{exc}; fix the files first", data) from None
