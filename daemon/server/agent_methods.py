"""The daemon's agent methods: `agents/*` over the agent-update service, off the event loop.

`agents/context` is answered on the event loop when the change feed alone proves both scopes
current and their text is rendered, sparing the hop to a worker thread that would otherwise be
most of its cost. Updates of one scope wait for each other here, on the event loop, rather
than in worker threads on the scope's lock; a committed update announces its scope as any
commit does. The store's refusals become errors an agent may read, naming files by name only.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections import defaultdict
from collections.abc import Callable
from typing import TypeVar

from ..agent_updates.service import AgentUpdates, scoped
from ..fsutil import Unwritable
from ..memory.batch import InvalidChanges
from ..memory.identity import WorkspaceId, is_workspace_key
from ..memory.snapshot_cache import MAX_WORKSPACES, SnapshotCache
from ..memory.store import MemoryInvalid, ScopeBusy
from ..protocol import rpc
from ..protocol.rpc import (
    INVALID_CHANGES,
    MEMORY_INVALID,
    SCOPE_BUSY,
    AgentContextParams,
    AgentContextResult,
    AgentIndexResult,
    AgentRecordParams,
    AgentRecordResult,
    AgentUpdateParams,
    AgentUpdateResult,
    RpcError,
    WorkspaceParams,
)
from .jsonrpc import Handler, log_failed, unwritable
from .memory_methods import MemoryMethods, Scope, home_in_the_way

T = TypeVar("T")
log = logging.getLogger("remem.daemon")


class AgentMethods:
    def __init__(self, memory: MemoryMethods) -> None:
        """Reads through `memory`'s snapshot cache, or a stat-proven one when it has none."""
        cache = memory.cache if memory.cache is not None else SnapshotCache(memory.store, watch=False)
        self.service = AgentUpdates(memory.store, cache)
        self._memory = memory
        self._serial: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

    def close(self) -> None:
        self.service.close()

    def handlers(self) -> dict[str, Handler]:
        return {
            rpc.AGENTS_CONTEXT.name: self.context,
            rpc.AGENTS_INDEX.name: self.index,
            rpc.AGENTS_RECORD.name: self.record,
            rpc.AGENTS_UPDATE.name: self.update,
        }

    async def context(self, params: AgentContextParams) -> AgentContextResult:
        workspace = _workspace_of(params.cwd)
        held = self.service.held_context(workspace, params.known)
        if held is not None:
            return held
        context = functools.partial(self.service.context, workspace, params.known)
        return await self._agent_safe(workspace.key, context, reads_global=True)

    async def index(self, params: WorkspaceParams) -> AgentIndexResult:
        workspace = _workspace_of(params.cwd)
        return await self._agent_safe(workspace.key, lambda: self.service.index(workspace))

    async def record(self, params: AgentRecordParams) -> AgentRecordResult:
        workspace = _workspace_of(params.cwd)
        return await self._agent_safe(workspace.key, lambda: self.service.record(workspace, params.name))

    async def update(self, params: AgentUpdateParams) -> AgentUpdateResult:
        workspace = _workspace_of(params.cwd)
        try:
            update = scoped(params, workspace)
        except InvalidChanges as exc:
            raise _refusal(exc) from None
        if params.observed.workspace != workspace.key:
            # Read for another workspace: this session's observation says nothing about this one.
            return update.result("stale", params.observed.workspaceRevision)
        async with self._serial[update.scope]:
            result = await self._agent_safe(update.key, lambda: self.service.update(update, params.agent))
        if result.status == "committed":
            await self._memory.scope_changed(None if update.workspace is None else update.workspace.key)
        return result

    async def _agent_safe(self, scope: Scope, action: Callable[[], T], *, reads_global: bool = False) -> T:
        """Run `action` in one of the worker threads `scope` may occupy, as memory requests do; the
        store's refusals become errors an agent may read, an unreadable memory file the home in
        the way, as memory requests say it."""
        try:
            with home_in_the_way(self._memory.store.where):
                return await self._memory.in_scope_thread(scope, action, reads_global=reads_global)
        except (InvalidChanges, MemoryInvalid) as exc:
            raise _refusal(exc) from None
        except Unwritable as exc:  # as the dispatcher says it: an MCP server without the daemon too
            raise unwritable(exc) from None
        except ScopeBusy as exc:
            raise RpcError(SCOPE_BUSY, str(exc)) from None

    async def settle(self) -> None:
        """Settle every scope whose intent a crashed writer left (before memory is served)."""
        for scope in await asyncio.to_thread(self.service.pending_scopes):
            try:
                async with self._serial[scope]:
                    await asyncio.to_thread(self.service.settle, scope)
            except ScopeBusy as exc:  # no bug: memory is served while its holder keeps the lock
                log.warning(
                    "settling the interrupted agent update of %s is left to its next update: another "
                    "remem process holds %s",
                    scope,
                    exc.lock,
                )
            except Exception as exc:  # the scope's next update tries again; the daemon serves meanwhile
                log_failed(f"settling the interrupted agent update of {scope}", exc)


# An agent session asks about its one folder at every step: its key (a hash) is worked out once.
_workspace_of = functools.lru_cache(maxsize=MAX_WORKSPACES)(WorkspaceId.from_cwd)


def _refusal(exc: InvalidChanges | MemoryInvalid) -> RpcError:
    if isinstance(exc, InvalidChanges):
        problems = [p.model_dump(mode="json") for p in exc.problems]
        return RpcError(
            INVALID_CHANGES, "the changes are invalid; nothing was written", {"problems": problems}
        )
    files = [
        {"file": _agent_file(f.path), "problems": [f"{d.message} [{d.code}]" for d in f.diagnostics]}
        for f in exc.files
    ]
    lines = [f"- {f['file']}: {problem}" for f in files for problem in f["problems"]]
    message = (
        f"Memory cannot be loaded: {exc}. A person must fix these files (for example with "
        "`remem memory validate` and an editor) before agents can use memory:\n" + "\n".join(lines)
    )
    return RpcError(MEMORY_INVALID, message, {"files": files})


def _agent_file(path: str) -> str:
    """A file as an agent is told of it: by its name, unless the name is a workspace key (the
    workspace's folder, its lock file), which stays out of an agent's sight."""
    name = os.path.basename(path)
    if name.endswith(".lock"):
        return "remem's lock file for this memory"
    return "this workspace's memory folder" if is_workspace_key(name) else name
