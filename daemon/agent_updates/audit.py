"""The audit trail of agent updates: one receipt-like entry per `memory_update` that reached a commit.

`memory/audit/<id>.json` names the agent's MCP session and client, the scope, the revisions
before, planned and after, the status, and each change's action, name, type and content hash —
never content.

Protocol, all under the scope's agent lock (`state/locks/agent-<scope>.lock`, taken before the
store's own locks): the entry is written in status `committing` as the scope's intent
(`memory/audit/.intent-<scope>.json`); the store commits by compare-and-swap; the entry is
written in its final status; the intent is removed. A crash leaves the intent behind, and the
next holder of that lock settles it against the scope's revision (`settled`): the planned
revision means the commit landed, the before revision means it never did, anything else means
memory moved on before anyone looked; an intent whose final entry was already written only
needs removing. Every file is replaced atomically, so an entry is always whole, and an intent
is the only thing a crash can leave besides a temp: each file is written through one temp name
of its own, under the scope's lock (`fsutil.atomic_rewrite`, decision 0411), so the temp a crash
left before a rename is removed by that file's next write (the scope's next intent; the entry
its intent's settling writes).

A write the file system refuses (a full disk) is `fsutil.Unwritable`, no temp left. The intent
refused: the update is refused, nothing changed. The final entry refused: a commit that landed
is still answered as committed, its intent left to be settled as after a crash; the intent of a
commit that wrote nothing (refused by the store, or a conflict) is dropped, its entry unwritten.

The trail also tells the memory history who made a state it finds unrecorded (`author`, decision
0408): an update whose history entry was never written (a crash, a stuck history lock) is still
named by its intent or its entry, with the revisions it went from and to, if it began at or
after the history's newest entry of the scope was made.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import secrets
from collections.abc import Iterator
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ..faults import faultpoint
from ..fsutil import atomic_rewrite, fsync_dir, refused_as_unwritable
from ..home import Home
from ..protocol.consolidation import ScopeRevisions
from ..protocol.memory import Actor
from ..safe_open import read_regular, refused

_INTENT_PREFIX = ".intent-"
_SUFFIX = ".json"
# An entry names at most `MAX_AGENT_CHANGES` (50) changes, each well under 1 KiB.
_ENTRY_MAX_BYTES = 1024 * 1024
GLOBAL_SCOPE = "global"
# The newest entries (of every scope) read for the author of a state the history missed. The
# history looks for one only when it finds such a state (after a failed entry, or a hand edit),
# and it finds it soon: the daemon looks at once, the next start or commit at the latest.
AUTHOR_LOOK_BACK = 64


class AuditStatus(str, Enum):
    COMMITTING = "committing"  # the intent: the commit may be under way
    COMMITTED = "committed"
    CONFLICT = "conflict"  # memory moved between the check and the commit: nothing was written
    INTERRUPTED = "interrupted"  # a crash before the commit took effect: nothing was written
    UNKNOWN = "unknown"  # a crash, and memory moved on again before the entry was settled


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AuditChange(_Model):
    action: Literal["replace-global", "put", "delete"]
    name: str | None = None
    type: str | None = None
    contentHash: str | None = None


class AuditAgent(_Model):
    session: str  # remem's id of the MCP session
    client: str | None = None  # the MCP client's name and version, when it declared them

    def actor(self) -> Actor:
        """The agent as the memory history names it."""
        return Actor(kind="agent", session=self.session, client=self.client)


class AuditEntry(_Model):
    kind: Literal["agent-update"] = "agent-update"
    id: str
    status: AuditStatus
    agent: AuditAgent
    scope: Literal["global", "workspace"]
    workspace: str | None = None  # the workspace key
    revisions: ScopeRevisions
    changes: list[AuditChange]
    createdAt: str
    completedAt: str | None = None

    @property
    def lock_scope(self) -> str:
        return scope_name(self.workspace)

    def made(self) -> tuple[str, str | None] | None:
        """The revisions its update took the scope from and to, if it changed memory: a final
        entry's `after`, an intent's `planned` (it landed if the scope is there, as `settled` says)."""
        if self.status is AuditStatus.COMMITTED:
            return self.revisions.before, self.revisions.after
        if self.status is AuditStatus.COMMITTING:
            return self.revisions.before, self.revisions.planned
        return None

    def ended(self, status: AuditStatus, after: str | None) -> AuditEntry:
        revisions = self.revisions.model_copy(update={"after": after})
        return self.model_copy(update={"status": status, "revisions": revisions, "completedAt": now()})


def scope_name(workspace_key: str | None) -> str:
    """The name of a scope in lock and intent file names: `global` or `ws-<key>`."""
    return GLOBAL_SCOPE if workspace_key is None else f"ws-{workspace_key}"


def new_entry_id() -> str:
    """Sortable by time, unique without coordination: `20261130T101530123Z-<hex>`."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")[:-3]
    return f"{stamp}Z-{secrets.token_hex(4)}"


def settled(entry: AuditEntry, current: str | None) -> AuditEntry:
    """The final form of an intent whose writer died, given the scope's revision now."""
    if current == entry.revisions.planned:
        return entry.ended(AuditStatus.COMMITTED, current)
    if current == entry.revisions.before:
        return entry.ended(AuditStatus.INTERRUPTED, current)
    return entry.ended(AuditStatus.UNKNOWN, current)


class AuditError(Exception):
    """An audit file exists but cannot be read; the message names it."""


class AuditTrail:
    def __init__(self, home: Home) -> None:
        self._home = home
        self.folder = home.memory / "audit"
        self.locks = home.locks

    def lock_path(self, scope: str) -> Path:
        return self.locks / f"agent-{scope}.lock"

    def begin(self, entry: AuditEntry) -> None:
        """Write `entry` as its scope's intent; the caller holds the scope's agent lock.
        `fsutil.Unwritable` when the file system refuses it: no intent, no temp is left."""
        assert entry.status is AuditStatus.COMMITTING
        with refused_as_unwritable(self.folder):
            self._home.private_dir(self.folder)  # a link there is refused, never written through
            atomic_rewrite(
                self._intent(entry.lock_scope),
                entry.model_dump_json().encode("utf-8"),
                written="agents.audit.intent-after-temp-write",
            )
        faultpoint("agents.update.after-intent")

    def finish(self, entry: AuditEntry) -> None:
        """Write the final `entry`, then drop its scope's intent (the caller holds the lock).
        `fsutil.Unwritable` when the file system refuses the entry: the intent stays, as after a
        crash, and no temp is left."""
        assert entry.status is not AuditStatus.COMMITTING
        with refused_as_unwritable(self.folder):
            self._home.private_dir(self.folder)  # a link there is refused, never written through
            atomic_rewrite(
                self.path(entry.id),
                entry.model_dump_json(indent=2).encode("utf-8") + b"\n",
                written="agents.audit.entry-after-temp-write",
            )
        faultpoint("agents.update.after-entry")
        self.drop_intent(entry.lock_scope)

    def drop_intent(self, scope: str) -> None:
        """Forget the scope's intent once its entry is final (the caller holds the lock)."""
        self._intent(scope).unlink(missing_ok=True)
        fsync_dir(self.folder)

    def intent(self, scope: str) -> AuditEntry | None:
        """The scope's unfinished entry, if a writer died (or is writing: hold the lock)."""
        path = self._intent(scope)
        try:
            return AuditEntry.model_validate_json(_read(path, "intent"))
        except FileNotFoundError:
            return None
        except ValidationError as exc:
            raise AuditError(f"{path}: not a valid audit intent ({exc.error_count()} problem(s))") from None

    def set_aside(self, scope: str) -> Path:
        """Move an unreadable intent out of the way, keeping it for a person to look at."""
        target = self.folder / f"{_INTENT_PREFIX}{scope}.unreadable-{secrets.token_hex(4)}"
        self._intent(scope).rename(target)
        fsync_dir(self.folder)
        return target

    def pending_scopes(self) -> list[str]:
        """The scopes with an intent left behind."""
        with contextlib.suppress(FileNotFoundError):
            return sorted(
                path.name[len(_INTENT_PREFIX) : -len(_SUFFIX)]
                for path in self.folder.iterdir()
                if path.name.startswith(_INTENT_PREFIX) and path.name.endswith(_SUFFIX)
            )
        return []

    def path(self, entry_id: str) -> Path:
        return self.folder / f"{entry_id}{_SUFFIX}"

    def all(self) -> list[AuditEntry]:
        """Every entry, oldest first (ids sort by time)."""
        entries = []
        with contextlib.suppress(FileNotFoundError):
            for path in sorted(self.folder.glob(f"*{_SUFFIX}")):
                if path.name.startswith("."):
                    continue  # an intent, or one set aside
                try:
                    entries.append(AuditEntry.model_validate_json(_read(path, "entry")))
                except ValidationError as exc:
                    raise AuditError(
                        f"{path}: not a valid audit entry ({exc.error_count()} problem(s))"
                    ) from None
        return entries

    def author(
        self, workspace_key: str | None, before: str, after: str, since: str | None = None
    ) -> Actor | None:
        """The agent whose update took the scope (`workspace_key`, None for Global) from `before`
        to `after`: its intent, or among the newest `AUTHOR_LOOK_BACK` entries, the scope's
        newest that changed memory (an older one's state was changed since, whatever came back
        to it), begun at or after `since` (the time of the history's newest entry of the scope:
        one begun before it is recorded already or was undone since, decision 0408). None when
        there is none, and for a file that does not read (passed over)."""
        for entry in self._latest(workspace_key):
            made = entry.made()
            if made == (before, after):
                return entry.agent.actor() if since is None or _not_before(entry.createdAt, since) else None
            if entry.status is AuditStatus.COMMITTED:
                return None
        return None

    def _latest(self, workspace_key: str | None) -> Iterator[AuditEntry]:
        """The scope's intent, then its entries among the newest `AUTHOR_LOOK_BACK`, newest
        first; each file that does not read is passed over."""
        try:
            with os.scandir(self.folder) as found:
                names = [e.name for e in found if e.name.endswith(_SUFFIX) and not e.name.startswith(".")]
        except FileNotFoundError:
            names = []
        newest = heapq.nlargest(AUTHOR_LOOK_BACK, names)  # ids sort by time
        for path in [self._intent(scope_name(workspace_key)), *(self.folder / name for name in newest)]:
            try:
                entry = AuditEntry.model_validate_json(_read(path, "entry"))
            except (OSError, AuditError, ValidationError):
                continue
            if entry.workspace == workspace_key:
                yield entry

    def _intent(self, scope: str) -> Path:
        return self.folder / f"{_INTENT_PREFIX}{scope}{_SUFFIX}"


def _read(path: Path, what: str) -> bytes:
    """An audit file's bytes, never read through a link nor waited on as a FIFO (the daemon
    settles intents at start, before it serves): anything but a regular file of a sane size is
    an `AuditError` naming it; `FileNotFoundError` when it is gone."""
    try:
        raw = read_regular(path, _ENTRY_MAX_BYTES)
    except OSError as exc:
        if not refused(exc):
            raise
        raise AuditError(f"{path}: not a valid audit {what} (not a regular file)") from None
    if raw is None:
        raise AuditError(f"{path}: not a valid audit {what} (over {_ENTRY_MAX_BYTES // 1024} KiB)")
    return raw


def _not_before(created: str, since: str) -> bool:
    """Whether the time `created` (an audit entry's) is at or after `since` (a history entry's):
    both read from the same clock and cut to the millisecond, so an equal one may be either
    side, and counts as after (decision 0408). One that does not parse is not."""
    try:
        return datetime.fromisoformat(created) >= datetime.fromisoformat(since)
    except (ValueError, TypeError):  # TypeError: one with an offset, one without
        return False


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
