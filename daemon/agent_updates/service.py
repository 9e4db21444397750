"""`AgentUpdates`: an agent's context from the snapshot cache, and its compare-and-swap commits.

The context of Global and one workspace is rendered once per pair of revisions and kept (a
session asks at every step); the revisions go to the MCP host, never to the agent. An update
changes one scope, by compare-and-swap against the revision the agent's session observed, and
is recorded in the audit trail (`audit.py` has the protocol): the whole protocol of one update
runs under the scope's agent lock, in the caller's thread, so nothing of it is left half done
by a client that hangs up; an intent a crash left behind is settled before anything else
writes to that scope. Every call may block on file locks (each for `LOCK_WAIT_SECONDS` at most)
and disk: callers keep it off their event loop. Errors name files by their name alone: an agent
never sees a path.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from ..consolidation.proposal import content_hash
from ..faults import faultpoint
from ..fsutil import Unwritable
from ..home import HomeUnusable
from ..locks import bounded_file_lock
from ..memory.batch import GlobalPlan, InvalidChanges, Problem, WorkspacePlan, erasing_global
from ..memory.context import AGENT_CONTEXT_MAX_BYTES, fit_agent_context, render_agent_context
from ..memory.diagnostics import TextPositions
from ..memory.identity import WorkspaceId
from ..memory.record import GLOBAL_FILE, INDEX_MAX_BYTES, INDEX_MAX_LINES, Record, render_record
from ..memory.snapshot_cache import SnapshotCache
from ..memory.store import (
    LOCK_WAIT_SECONDS,
    MemoryInvalid,
    MemoryStore,
    ScopeBusy,
    ScopeLockBusy,
    bounded_lock_waits,
)
from ..memory.validation import likely_secrets
from ..protocol.consolidation import ScopeRevisions
from ..protocol.memory import (
    RECORD_SUFFIX,
    Actor,
    CommitResult,
    DeleteChange,
    GlobalSnapshot,
    PutChange,
    WorkspaceSnapshot,
)
from ..protocol.rpc import (
    AgentContextResult,
    AgentIdentity,
    AgentIndexEntry,
    AgentIndexResult,
    AgentObservation,
    AgentRecordResult,
    AgentUpdateParams,
    AgentUpdateResult,
    ReplaceGlobalChange,
)
from .audit import (
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

log = logging.getLogger("remem.daemon")
RENDERED_CONTEXTS = 16
# remem/index-budget, as the editor says it of MEMORY.md, in the agent's terms.
INDEX_FULL = (
    "this project's memory index is now past what memory_context shows of it ({lines} lines, "
    "{kib} KiB, less when Global memory is large): it names {count} record(s), from `{first}` on, "
    "without their descriptions. Merge or delete records that overlap or no longer matter "
    "[remem/index-budget]"
)
# The index within its own budget, but cut to keep memory_context whole: not that rule's.
GLOBAL_CROWDS = (
    "memory_context now leaves {count} record(s) of this project's index out, from `{first}` on, "
    "naming them without their descriptions: Global memory is {kib} KiB, never cut, and the whole "
    "answer stays within {limit} bytes. Shorten Global memory, or merge or delete records that "
    "overlap or no longer matter"
)
ERASES_GLOBAL = (
    f"{erasing_global('an agent')}. If the user wants Global memory empty, tell them to empty it "
    "themselves (`remem memory replace-global` with an empty file, or an edit of GLOBAL.md)"
)


@dataclass(frozen=True)
class ScopedUpdate:
    """One agent update, reduced to its scope: Global (`workspace` None) or one workspace."""

    workspace: WorkspaceId | None
    observed: str  # the revision of this scope the agent's session saw
    content: str | None  # replace-global
    changes: list[PutChange | DeleteChange]  # a workspace batch
    # A Global update's: the workspace whose memory_context the agent holds (told what it crowds out).
    seen_in: WorkspaceId | None = None

    @property
    def key(self) -> str | None:
        """The workspace's key; None for Global."""
        return None if self.workspace is None else self.workspace.key

    @property
    def scope(self) -> str:
        return scope_name(self.key)

    @property
    def context_workspace(self) -> WorkspaceId | None:
        """The workspace whose memory_context this update changes; None when unknown."""
        return self.workspace or self.seen_in

    def plan(self, store: MemoryStore) -> GlobalPlan | WorkspacePlan:
        if self.workspace is None:
            assert self.content is not None
            plan = store.preview_global(self.content)
            if plan.erases:  # decision 0455: the CAS commits only what this plan read
                raise InvalidChanges(
                    [Problem(code="remem/agent-erases-global", message=ERASES_GLOBAL, change=0)]
                )
            return plan
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

    def result(
        self,
        status: Literal["committed", "no-change", "stale"],
        revision: str,
        changed: int = 0,
        crowding: list[str] | None = None,
    ) -> AgentUpdateResult:
        """The answer; `changed` counts the changes of a commit that changed memory, `crowding`
        says what more it leaves out of the agent's context (`_crowding`)."""
        scope: Literal["global", "workspace"] = "global" if self.workspace is None else "workspace"
        count = changed if status == "committed" else 0
        warnings = self.secret_warnings() + (crowding or []) if status == "committed" else []
        return AgentUpdateResult(
            status=status, scope=scope, changes=count, revision=revision, warnings=warnings
        )

    def secret_warnings(self) -> list[str]:
        """Likely credentials in the files this update wrote, by file and line (the editor's warning)."""
        puts = [c.record for c in self.changes if isinstance(c, PutChange)]
        written = (
            {GLOBAL_FILE: self.content}
            if self.content is not None
            else {f"{record.name}{RECORD_SUFFIX}": render_record(record) for record in puts}
        )
        return [
            f"{name} line {d.range.start.line + 1}: {d.message}"
            for name, text in written.items()
            for d in likely_secrets(text, TextPositions(text))
        ]


@dataclass(frozen=True)
class _Shown:
    """What an agent's memory_context is made of: Global's text and the workspace's records."""

    global_content: str
    records: list[Record]

    def left_out(self) -> list[str]:
        return fit_agent_context(self.global_content, self.records)[1]

    def after(self, plan: GlobalPlan | WorkspacePlan) -> _Shown:
        if isinstance(plan, WorkspacePlan):
            return _Shown(self.global_content, plan.records)
        return _Shown(plan.content.decode("utf-8"), self.records)


def _crowding(before: _Shown | None, plan: GlobalPlan | WorkspacePlan) -> list[str]:
    """The warning of a commit that leaves more records out of memory_context's index than it
    did: none when it leaves out as many or fewer. Tagged with the editor's rule only when the
    index itself is past its budget (what `remem memory validate` says); a Global write, or an
    index cut only for Global's size, is said to be Global's doing."""
    if before is None:
        return []
    after = before.after(plan)
    left_out = after.left_out()
    if len(left_out) <= len(before.left_out()):
        return []
    count, first = len(left_out), left_out[0]
    if isinstance(plan, WorkspacePlan) and _Shown("", plan.records).left_out():
        return [
            INDEX_FULL.format(count=count, first=first, lines=INDEX_MAX_LINES, kib=INDEX_MAX_BYTES // 1024)
        ]
    kib = len(after.global_content.encode("utf-8")) // 1024
    return [GLOBAL_CROWDS.format(count=count, first=first, kib=kib, limit=AGENT_CONTEXT_MAX_BYTES)]


def _changed(plan: GlobalPlan | WorkspacePlan) -> int:
    """How many changes of a plan that changes memory change it: a put of what its record
    already holds (canonically) is none, so the count is what the history shows changed."""
    return 1 if isinstance(plan, GlobalPlan) else len(plan.writes) + len(plan.deletes)


def scoped(params: AgentUpdateParams, workspace: WorkspaceId) -> ScopedUpdate:
    """The update's one scope; a batch mixing Global and workspace changes is refused."""
    replacing = [c for c in params.changes if isinstance(c, ReplaceGlobalChange)]
    if not replacing:
        batch = [c for c in params.changes if not isinstance(c, ReplaceGlobalChange)]
        return ScopedUpdate(workspace, params.observed.workspaceRevision, None, batch)
    if len(params.changes) == 1:
        return ScopedUpdate(None, params.observed.globalRevision, replacing[0].content, [], workspace)
    if len(replacing) == len(params.changes):
        message = (
            f"one memory_update replaces Global memory at most once, and this one has "
            f"{len(replacing)} replace-global changes; send the one whole new text"
        )
    else:
        message = (
            "one memory_update changes either Global memory (a single replace-global) or this "
            "workspace (put and delete changes), never both; send them as separate calls"
        )
    raise InvalidChanges([Problem(code="remem/agent-one-scope", message=message)])


class AgentUpdates:
    def __init__(self, store: MemoryStore, cache: SnapshotCache) -> None:
        """Reads through `cache`, a snapshot cache over `store`."""
        self.store = store
        self.cache = cache
        self.trail = AuditTrail(store.where)
        # Rendered contexts by (Global revision, workspace revision): equal revisions, equal text.
        self._texts: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._texts_lock = threading.Lock()

    def close(self) -> None:
        self.cache.close()

    def held_context(
        self, workspace: WorkspaceId, known: AgentObservation | None
    ) -> AgentContextResult | None:
        """The context when the cache holds both scopes current and its text is rendered: an
        answer without file work, for the event loop; else None."""
        held = self.cache.held(workspace)
        return None if held is None else self._reply(workspace, *held, known, render=False)

    def context(self, workspace: WorkspaceId, known: AgentObservation | None) -> AgentContextResult:
        """Global and the workspace as an agent loads them; no text when `known` is current.
        ScopeBusy, like `index` and `record`, when another process holds a scope's lock past
        `LOCK_WAIT_SECONDS`."""
        with bounded_lock_waits(reading=True):
            global_memory = self.cache.global_snapshot()
            snapshot = self.cache.workspace_snapshot(workspace)
        answer = self._reply(workspace, global_memory, snapshot, known, render=True)
        assert answer is not None, "a missing text is rendered"
        return answer

    def index(self, workspace: WorkspaceId) -> AgentIndexResult:
        with bounded_lock_waits(reading=True):
            snapshot = self.cache.workspace_snapshot(workspace)
        entries = [
            AgentIndexEntry(name=r.name, description=r.description, type=r.type) for r in snapshot.records
        ]
        return AgentIndexResult(records=entries)

    def record(self, workspace: WorkspaceId, name: str) -> AgentRecordResult:
        with bounded_lock_waits(reading=True):
            snapshot = self.cache.workspace_snapshot(workspace)
        return AgentRecordResult(record=next((r for r in snapshot.records if r.name == name), None))

    def update(self, update: ScopedUpdate, agent: AgentIdentity) -> AgentUpdateResult:
        """Commit `update` if its scope is still at the observed revision, with its audit entry;
        ScopeBusy when another process holds the scope's agent lock, or a store's lock the
        update reads or writes under, past `LOCK_WAIT_SECONDS`."""
        with self._agent_lock(update.scope):
            return self._update_locked(update, agent)

    @contextmanager
    def _agent_lock(self, scope: str, within: float = LOCK_WAIT_SECONDS) -> Iterator[None]:
        """The scope's agent lock, and every scope's lock taken under it, each waited for
        `within` seconds at most (`bounded_lock_waits`)."""
        lock = self.trail.lock_path(scope)
        held = bounded_file_lock(lock, within=within)
        if held is None:
            raise ScopeBusy(lock)
        try:
            with bounded_lock_waits(within):
                yield
        finally:
            held.release()

    def _update_locked(self, update: ScopedUpdate, agent: AgentIdentity) -> AgentUpdateResult:
        self._settle(update.scope)
        try:
            plan = update.plan(self.store)
        except InvalidChanges as exc:
            if any(problem.change is None and problem.file for problem in exc.problems):
                # A file on disk is invalid: the context the agent is to reload says so.
                self.cache.disk_shows(update.key, None)
            raise
        if plan.before != update.observed:
            return self._stale(update, plan.before)
        if not plan.changed:
            return update.result("no-change", plan.before)
        shown = self._shown(update)
        entry = AuditEntry(
            id=new_entry_id(),
            status=AuditStatus.COMMITTING,
            agent=AuditAgent(session=agent.session, client=agent.client),
            scope="global" if update.workspace is None else "workspace",
            workspace=update.key,
            revisions=ScopeRevisions(before=plan.before, planned=plan.after),
            changes=update.summaries(),
            createdAt=now(),
        )
        self.trail.begin(entry)  # Unwritable: refused before anything changed, no intent left
        try:
            committed = update.commit(self.store, entry.agent.actor())
        except ScopeLockBusy:
            # Waited for before anything was written: nothing landed, nothing to settle.
            self._drop_intent(update.scope)
            raise
        except BaseException as failure:
            # The scope tells whether the failed commit landed; the commit's own error is
            # what the caller is told, never one of settling its entry.
            self._settle_after(update.scope, refused=isinstance(failure, Unwritable))
            raise
        faultpoint("agents.update.after-commit")
        landed = committed.status == "committed"
        status = AuditStatus.COMMITTED if landed else AuditStatus.CONFLICT
        try:
            self.trail.finish(entry.ended(status, committed.revision))
        except Unwritable as exc:
            # The commit is done (or, a conflict, wrote nothing): that is the answer. A landed
            # commit's intent stays, settled as after a crash (by the revision then); a conflict's goes.
            self._unfinished(update.scope, exc, landed=landed)
        if not landed:
            return self._stale(update, committed.revision)
        return update.result("committed", committed.revision, _changed(plan), _crowding(shown, plan))

    def _shown(self, update: ScopedUpdate) -> _Shown | None:
        """What the agent's memory_context is made of before `update` commits; None when its
        workspace is unknown or unreadable (a Global update then warns of nothing)."""
        workspace = update.context_workspace
        if workspace is None:
            return None
        try:
            global_content = self.cache.global_snapshot().content
        except (MemoryInvalid, HomeUnusable, OSError):
            # Global unreadable (the context is refused until it reads again): the index is
            # held to its own budget.
            global_content = ""
        try:
            return _Shown(global_content, self.cache.workspace_snapshot(workspace).records)
        except (MemoryInvalid, HomeUnusable, OSError):
            return None

    def _stale(self, update: ScopedUpdate, revision: str) -> AgentUpdateResult:
        """The refusal of an update whose scope is at `revision` on disk. The agent is told to
        reload its context: the cache drops a snapshot of another revision, which its change
        feed may never have been told of (`SnapshotCache.disk_shows`), so that reload shows
        the disk."""
        self.cache.disk_shows(update.key, revision)
        return update.result("stale", revision)

    def pending_scopes(self) -> list[str]:
        """The scopes whose intent a crashed writer left."""
        return self.trail.pending_scopes()

    def settle(self, scope: str) -> None:
        """Finish the intent a dead writer left for `scope`, under its agent lock; ScopeBusy at
        once when another process holds a lock of the scope (the next update of the scope
        settles it): the daemon's start waits on no other process, however many scopes are
        held."""
        with self._agent_lock(scope, within=0):
            self._settle(scope)

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

    def _settle(self, scope: str) -> None:
        """`settle` for a caller that holds the scope's agent lock."""
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

    def _settle_after(self, scope: str, *, refused: bool) -> None:
        """`_settle` after a commit that raised. `refused`: the store refused the write
        (`Unwritable`), so nothing landed, and an intent whose entry cannot be written either
        is dropped: it would only say that nothing was written. Any failure to settle is
        logged, the intent left for the next holder of the lock."""
        try:
            self._settle(scope)
        except Unwritable as exc:
            if not refused:
                log.warning("the audit entry of a failed agent update of %s waits for room: %s", scope, exc)
                return
            log.warning("the refused agent update of %s leaves no audit entry: %s", scope, exc)
            self._drop_intent(scope)
        except Exception:
            log.exception(
                "the audit intent of the failed agent update of %s stays, to be settled later", scope
            )

    def _unfinished(self, scope: str, exc: Unwritable, *, landed: bool) -> None:
        """The final entry of a commit that returned could not be written (`exc`)."""
        if landed:
            log.warning(
                "an agent update of %s is committed; its audit entry waits for room (settled as "
                "after a crash, by the next update of that scope or when the daemon starts): %s",
                scope,
                exc,
            )
            return
        log.warning(
            "a conflicting agent update of %s wrote nothing and leaves no audit entry: %s", scope, exc
        )
        self._drop_intent(scope)

    def _drop_intent(self, scope: str) -> None:
        """Drop the intent of an update that wrote nothing, whose entry the disk refuses."""
        try:
            self.trail.drop_intent(scope)
        except OSError as dropped:
            log.warning("the audit intent of %s stays, to be settled later: %s", scope, dropped)

    def _revision_now(self, workspace_key: str | None) -> str | None:
        try:
            if workspace_key is None:
                return self.store.read_global().revision
            return self.store.read_workspace(self.store.workspace_of(workspace_key)).revision
        except MemoryInvalid as exc:
            return exc.revision


def _summary(change: PutChange | DeleteChange) -> AuditChange:
    if isinstance(change, PutChange):
        record = change.record
        return AuditChange(
            action="put", name=record.name, type=record.type, contentHash=content_hash(record.content)
        )
    return AuditChange(action="delete", name=change.name)
