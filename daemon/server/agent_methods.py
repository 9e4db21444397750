"""The daemon's agent methods: what MCP agents load, and the observation-bound writes they make.

`agents/context` serves the agent rendering of Global and one workspace from the snapshot
cache, with the revisions it reflects; those go to the MCP host, never to the agent. When the
change feed alone proves both current it answers on the event loop, sparing the hop to a
worker thread that would otherwise be most of its cost.
`agents/update` commits an agent's changes by compare-and-swap against the revisions its
session observed and records each commit in the audit trail (`memory.audit` has the protocol).
The whole protocol of one update runs in one worker thread under the scope's agent lock, so a
client that hangs up midway cannot leave it half done; a scope whose intent a crash left
behind is settled before anything else writes to it, and every such scope when the daemon
starts. Errors name files by their name alone: an agent never sees a path.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from ..consolidation.proposal import content_hash
from ..faults import faultpoint
from ..locks import file_lock
from ..memory.audit import (
    AuditAgent,
    AuditChange,
    AuditEntry,
    AuditError,
    AuditStatus,
    AuditTrail,
    new_entry_id,
    now,
    scope_name,
    settled,
)
from ..memory.batch import GlobalPlan, InvalidChanges, Problem, WorkspacePlan
from ..memory.context import render_agent_context
from ..memory.diagnostics import TextPositions
from ..memory.identity import WorkspaceId
from ..memory.record import render_record
from ..memory.snapshot_cache import MAX_WORKSPACES, SnapshotCache
from ..memory.store import MemoryInvalid, MemoryStore
from ..memory.validation import likely_secrets
from ..protocol.consolidation import ScopeRevisions
from ..protocol.memory import Actor, CommitResult, DeleteChange, GlobalSnapshot, PutChange, WorkspaceSnapshot
from ..protocol.rpc import (
    INVALID_CHANGES,
    MEMORY_INVALID,
    AgentContextParams,
    AgentContextResult,
    AgentIdentity,
    AgentIndexEntry,
    AgentIndexResult,
    AgentObservation,
    AgentRecordParams,
    AgentRecordResult,
    AgentUpdateParams,
    AgentUpdateResult,
    ReplaceGlobalChange,
    RpcError,
    WorkspaceParams,
)
from .jsonrpc import Handler
from .memory_methods import MemoryMethods

T = TypeVar("T")
log = logging.getLogger("remem.daemon")
RENDERED_CONTEXTS = 16


@dataclass(frozen=True)
class _Update:
    """One agent update, reduced to its scope: Global (`workspace` None) or one workspace."""

    workspace: WorkspaceId | None
    observed: str  # the revision of this scope the agent's session saw
    content: str | None  # replace-global
    changes: list[PutChange | DeleteChange]  # a workspace batch

    @property
    def scope(self) -> str:
        return scope_name(None if self.workspace is None else self.workspace.key)

    def plan(self, store: MemoryStore) -> GlobalPlan | WorkspacePlan:
        if self.workspace is None:
            assert self.content is not None
            return store.preview_global(self.content)
        return store.preview_workspace(self.workspace, self.changes)

    def commit(self, store: MemoryStore, actor: Actor) -> CommitResult:
        if self.workspace is None:
            assert self.content is not None
            return store.replace_global(self.observed, self.content, actor)
        return store.commit_workspace(self.workspace, self.observed, self.changes, actor)

    def summaries(self) -> list[AuditChange]:
        if self.content is not None:
            return [AuditChange(action="replace-global", contentHash=content_hash(self.content))]
        return [_summary(change) for change in self.changes]

    def result(self, status: Literal["committed", "no-change", "stale"], revision: str) -> AgentUpdateResult:
        scope: Literal["global", "workspace"] = "global" if self.workspace is None else "workspace"
        count = (len(self.changes) or 1) if status == "committed" else 0
        warnings = self.secret_warnings() if status == "committed" else []
        return AgentUpdateResult(
            status=status, scope=scope, changes=count, revision=revision, warnings=warnings
        )

    def secret_warnings(self) -> list[str]:
        """Likely credentials in the files this update wrote, by file and line (the editor's warning)."""
        written = {"GLOBAL.md": self.content} if self.content is not None else {
            f"{c.record.name}.md": render_record(c.record) for c in self.changes if isinstance(c, PutChange)
        }  # fmt: skip
        return [
            f"{name} line {d.range.start.line + 1}: {d.message}"
            for name, text in written.items()
            for d in likely_secrets(text, TextPositions(text))
        ]


class AgentMethods:
    def __init__(self, memory: MemoryMethods) -> None:
        """Serves from `memory`'s snapshot cache (give it one: `MemoryMethods(..., watch=)`)."""
        assert memory.cache is not None, "agents read through the snapshot cache"
        self._memory = memory
        self.store = memory.store
        self.cache: SnapshotCache = memory.cache
        self.trail = AuditTrail(memory.store.home)
        # Rendered contexts by (Global revision, workspace revision): equal revisions, equal text.
        self._texts: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._texts_lock = threading.Lock()
        # Updates of one scope wait here, on the event loop, rather than in threads on its lock.
        self._serial: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

    def close(self) -> None:
        self.cache.close()

    def handlers(self) -> dict[str, Handler]:
        return {
            "agents/context": self.context,
            "agents/index": self.index,
            "agents/record": self.record,
            "agents/update": self.update,
        }

    async def context(self, params: AgentContextParams) -> AgentContextResult:
        workspace = _workspace_of(params.cwd)
        held = self.cache.held(workspace)
        if held is not None:
            answer = self._reply(workspace, *held, params.known, render=False)
            if answer is not None:
                return answer
        return await _agent_safe(lambda: self._context(workspace, params.known))

    async def index(self, params: WorkspaceParams) -> AgentIndexResult:
        workspace = _workspace_of(params.cwd)
        snapshot = await _agent_safe(lambda: self.cache.workspace_snapshot(workspace))
        entries = [
            AgentIndexEntry(name=r.name, description=r.description, type=r.type) for r in snapshot.records
        ]
        return AgentIndexResult(records=entries)

    async def record(self, params: AgentRecordParams) -> AgentRecordResult:
        workspace = _workspace_of(params.cwd)
        snapshot = await _agent_safe(lambda: self.cache.workspace_snapshot(workspace))
        found = next((r for r in snapshot.records if r.name == params.name), None)
        return AgentRecordResult(record=found)

    async def update(self, params: AgentUpdateParams) -> AgentUpdateResult:
        workspace = _workspace_of(params.cwd)
        update = _reduced(params, workspace)
        if params.observed.workspace != workspace.key:
            # Read for another workspace: this session's observation says nothing about this one.
            return update.result("stale", params.observed.workspaceRevision)
        async with self._serial[update.scope]:
            result = await _agent_safe(lambda: self._update(update, params.agent))
        if result.status == "committed":
            await self._memory.scope_changed(None if update.workspace is None else update.workspace.key)
        return result

    async def settle(self) -> None:
        """Settle every scope whose intent a crashed writer left (run when the daemon starts)."""
        for scope in await asyncio.to_thread(self.trail.pending_scopes):
            try:
                async with self._serial[scope]:
                    await asyncio.to_thread(self._settle_locked, scope)
            except Exception:  # the scope's next update tries again; the daemon serves meanwhile
                log.exception("could not settle the interrupted agent update of %s", scope)

    def _context(self, workspace: WorkspaceId, known: AgentObservation | None) -> AgentContextResult:
        global_memory = self.cache.global_snapshot()
        snapshot = self.cache.workspace_snapshot(workspace)
        answer = self._reply(workspace, global_memory, snapshot, known, render=True)
        assert answer is not None, "a missing text is rendered"
        return answer

    def _reply(
        self,
        workspace: WorkspaceId,
        global_memory: GlobalSnapshot,
        snapshot: WorkspaceSnapshot,
        known: AgentObservation | None,
        *,
        render: bool,
    ) -> AgentContextResult | None:
        """The answer for these snapshots; None when its text is not rendered yet and `render`
        is False (rendering 200 records is work for a thread, not the event loop)."""
        observed = AgentObservation(
            workspace=workspace.key,
            globalRevision=global_memory.revision,
            workspaceRevision=snapshot.revision,
        )
        if observed == known:  # the host holds this very text: do not send it again
            return AgentContextResult(text=None, observed=observed)
        key = (global_memory.revision, snapshot.revision)
        with self._texts_lock:
            text = self._texts.get(key)
        if text is None:
            if not render:
                return None
            text = render_agent_context(global_memory.content, snapshot.records)
            with self._texts_lock:
                self._texts[key] = text
                while len(self._texts) > RENDERED_CONTEXTS:
                    self._texts.popitem(last=False)
        return AgentContextResult(text=text, observed=observed)

    def _update(self, update: _Update, agent: AgentIdentity) -> AgentUpdateResult:
        with file_lock(self.trail.lock_path(update.scope)):
            self._settle(update.scope)
            plan = update.plan(self.store)
            if plan.before != update.observed:
                return update.result("stale", plan.before)
            if not plan.changed:
                return update.result("no-change", plan.before)
            entry = AuditEntry(
                id=new_entry_id(),
                status=AuditStatus.COMMITTING,
                agent=AuditAgent(session=agent.session, client=agent.client),
                scope="global" if update.workspace is None else "workspace",
                workspace=None if update.workspace is None else update.workspace.key,
                revisions=ScopeRevisions(before=plan.before, planned=plan.after),
                changes=update.summaries(),
                createdAt=now(),
            )
            self.trail.begin(entry)
            try:
                committed = update.commit(
                    self.store, Actor(kind="agent", session=agent.session, client=agent.client)
                )
            except BaseException:
                self._settle(update.scope)  # the scope tells whether the failed commit landed
                raise
            faultpoint("agents.update.after-commit")
            landed = committed.status == "committed"
            status = AuditStatus.COMMITTED if landed else AuditStatus.CONFLICT
            self.trail.finish(entry.ended(status, committed.revision))
            return update.result("committed" if landed else "stale", committed.revision)

    def _settle_locked(self, scope: str) -> None:
        with file_lock(self.trail.lock_path(scope)):
            self._settle(scope)

    def _settle(self, scope: str) -> None:
        """Finish the intent a dead writer left for `scope`; the caller holds its agent lock."""
        try:
            entry = self.trail.intent(scope)
        except AuditError as exc:
            aside = self.trail.set_aside(scope)
            log.warning("%s; kept as %s", exc, aside.name)
            return
        if entry is None:
            return
        if self.trail.path(entry.id).exists():  # the writer died after its final entry: keep that
            self.trail.drop_intent(scope)
        else:
            self.trail.finish(settled(entry, self._revision_now(entry.workspace)))

    def _revision_now(self, workspace_key: str | None) -> str | None:
        try:
            if workspace_key is None:
                return self.store.read_global().revision
            return self.store.read_workspace(self.store.workspace_of(workspace_key)).revision
        except MemoryInvalid as exc:
            return exc.revision


# An agent session asks about its one folder at every step: its key (a hash) is worked out once.
_workspace_of = functools.lru_cache(maxsize=MAX_WORKSPACES)(WorkspaceId.from_cwd)


def _reduced(params: AgentUpdateParams, workspace: WorkspaceId) -> _Update:
    """The update's one scope; a batch mixing Global and workspace changes is refused."""
    replacing = [c for c in params.changes if isinstance(c, ReplaceGlobalChange)]
    if not replacing:
        batch = [c for c in params.changes if not isinstance(c, ReplaceGlobalChange)]
        return _Update(workspace, params.observed.workspaceRevision, None, batch)
    if len(params.changes) == 1:
        return _Update(None, params.observed.globalRevision, replacing[0].content, [])
    problem = Problem(
        code="remem/agent-one-scope",
        message="one memory_update changes either Global memory (a single replace-global) or this "
        "workspace (put and delete changes), never both; send them as separate calls",
    )
    raise _refusal(InvalidChanges([problem]))


def _summary(change: PutChange | DeleteChange) -> AuditChange:
    if isinstance(change, PutChange):
        record = change.record
        return AuditChange(
            action="put", name=record.name, type=record.type, contentHash=content_hash(record.content)
        )
    return AuditChange(action="delete", name=change.name)


async def _agent_safe(action: Callable[[], T]) -> T:
    """Run `action` in a worker thread; the store's refusals become errors an agent may read."""
    try:
        return await asyncio.to_thread(action)
    except (InvalidChanges, MemoryInvalid) as exc:
        raise _refusal(exc) from None


def _refusal(exc: InvalidChanges | MemoryInvalid) -> RpcError:
    if isinstance(exc, InvalidChanges):
        problems = [p.model_dump(mode="json") for p in exc.problems]
        return RpcError(
            INVALID_CHANGES, "the changes are invalid; nothing was written", {"problems": problems}
        )
    files = [
        {"file": os.path.basename(f.path), "problems": [f"{d.message} [{d.code}]" for d in f.diagnostics]}
        for f in exc.files
    ]
    lines = [f"- {f['file']}: {problem}" for f in files for problem in f["problems"]]
    message = (
        f"Memory cannot be loaded: {exc}. A person must fix these files (for example with "
        "`remem memory validate` and an editor) before agents can use memory:\n" + "\n".join(lines)
    )
    return RpcError(MEMORY_INVALID, message, {"files": files})
