"""Forks of Claude Code and Codex sessions that the harness itself resumes, exactly once.

The same protocol as a DSH fork (`service.py`): under the operation's lock the journal entry is
written `prepared` (binding the operation id to its request, the cut and the child's path)
before any child byte exists; the child is published whole with a no-overwrite link and fsyncs;
then the entry is `committed`. The parent file is only read, through a descriptor that refuses
a symbolic link; the child lands where the harness looks for it (Claude Code: the parent's
project folder; Codex: today's ``sessions/YYYY/MM/DD``, see `codex_child.child_path`). The
caller names the parent file (`sources.py` resolves it from a session id).
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec
from pydantic import BaseModel, ConfigDict

from ..faults import faultpoint
from ..home import Home
from ..protocol.sessions import ROLLED_BACK
from ..safe_open import open_regular
from ..sessions.errors import ErrorCode, OperationError
from ..sessions.formats.claude_code import Selection, fork_selection, read_transcript
from ..sessions.formats.codex import fork_point, read_rollout
from ..sessions.formats.jsonl import LineTooLong, end_of_line, read_bounded, records
from ..sessions.formats.model import Harness, NotAForkPoint, RefusalCode
from ..sessions.harness_sources import read_file
from ..sessions.reader import stat_revision
from . import claude_code_child, codex_child
from .child import next_title, normalize_title
from .journal import ForkJournal, JournalEntry

_REFUSALS: dict[RefusalCode, ErrorCode] = {
    "no-conversation": "INVALID",
    "no-such-turn": "INVALID_ANCHOR",
    "open-turn": "OPEN_TURN",
}
# Fixed: the same operation id names the same child in every process, forever.
_NAMESPACE = uuid.UUID("8e0c5a44-3f1d-5b7a-9d2e-6861726e6573")


class HarnessForkRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    harness: Harness
    path: str  # the parent's file
    operationId: str
    afterTurn: int | None = None  # 1-based; omitted: the last forkable turn
    title: str | None = None
    expectedRevision: str | None = None  # the parent's stat revision when the user chose the turn
    # What the operation id is bound to, when not this request: a fork asked for by session id
    # (`sources.py`) binds the client's request, since the parent's path and turn are found
    # anew on each try, and Codex moves a rollout it archives.
    asked: str | None = None

    def digest(self) -> str:
        if self.asked is not None:
            return self.asked
        fields = self.model_dump(exclude={"operationId", "asked"})
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


class HarnessForkResult(BaseModel):
    child: str
    path: str
    forkTurn: int
    seedLength: int  # parent records the child inherits
    created: bool
    resume: list[str]  # the command that continues the child, run from the session's cwd
    title: str | None  # the child's title (a Codex rollout has no place for it: see `sources`)


@dataclass(frozen=True)
class Listed:
    """The parent as the catalog lists it; a file named without the catalog has neither."""

    root: Path | None = None  # where it was listed from: a Codex child lands there
    title: str | None = None  # its display title: a remem rename wins over its file's


def child_id(operation_id: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, operation_id))


class HarnessForks:
    def __init__(self, home: Home) -> None:
        self.journal = ForkJournal(home.ensure_layout())

    def fork(self, request: HarnessForkRequest, listed: Listed = Listed()) -> HarnessForkResult:
        """`request` done exactly once, for the parent as the catalog lists it (`listed`)."""
        entry, created = self.journal.once(
            request.operationId, request.digest(), lambda e: self._create(request, e, listed)
        )
        return HarnessForkResult(
            child=entry.child,
            path=entry.path,
            forkTurn=entry.forkTurn,
            seedLength=entry.seedLength,
            created=created,
            resume=_resume(request.harness, entry.child),
            title=entry.title,
        )

    def _create(
        self, request: HarnessForkRequest, entry: JournalEntry | None, listed: Listed
    ) -> tuple[JournalEntry, bool]:
        parent = Path(request.path)
        data, revision = _read_parent(parent)
        if entry is None and request.expectedRevision not in (None, revision):
            raise OperationError(
                "STALE_SOURCE",
                f"{parent} changed since revision {request.expectedRevision} (now {revision}); "
                "re-read it and choose the turn again",
            )
        now = datetime.now(timezone.utc)
        child = entry.child if entry else child_id(request.operationId)
        if request.harness == "claude-code":
            parts, prepared = self._claude_code(request, parent, data, child, now, entry, listed)
        else:
            parts, prepared = self._codex(request, parent, data, child, now, entry, listed)
        return self.journal.publish(
            prepared, parts, lambda existing: _check_existing(request, existing, prepared)
        )

    def _prepare(self, fresh: JournalEntry) -> JournalEntry:
        """`fresh`, written before any child byte."""
        self.journal.put(fresh)
        faultpoint("fork.after-prepare")
        return fresh

    def _claude_code(
        self,
        request: HarnessForkRequest,
        parent: Path,
        data: bytes,
        child: str,
        now: datetime,
        entry: JournalEntry | None,
        listed: Listed,
    ) -> tuple[list[bytes | memoryview], JournalEntry]:
        if entry is not None:
            # The bytes the prepared attempt copies, found by their digest (its last copied line is
            # not recorded, and lies at or past line `seedLength`): the turn was judged on them, and
            # a rewind or an edit appended since may have moved the active conversation off it.
            cut = _recorded_cut(data, entry.sourceRevision, entry.seedLength)
            if cut is None:
                raise _changed(parent)
            selection = _selection(data[:cut], parent, entry.forkTurn)
            # Every content-replacement of the session, as a fresh fork carries them.
            selection = replace(selection, replacements=_replacements(data, selection.session_id))
            prepared = entry
        else:
            turn = request.afterTurn or _last_forkable(data, parent, "claude-code")
            selection = _selection(data, parent, turn)
            prepared = self._prepare(
                _entry(
                    request,
                    source=selection.session_id,
                    # Through the last line copied: a repeated uuid's last copy may lie past the turn.
                    inherited=memoryview(data)[
                        : end_of_line(data, max(selection.turn.end, *selection.lines))
                    ],
                    child=child,
                    path=parent.with_name(f"{child}.jsonl"),
                    seed_length=len(selection.lines),
                    turn=turn,
                    title=_title(request, listed.title or selection.title),
                ),
            )
        stamp = now.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        lines = claude_code_child.child_lines(data, selection, child, prepared.title or "", stamp)
        return [b"".join(lines)], prepared  # one write, not one system call per record

    def _codex(
        self,
        request: HarnessForkRequest,
        parent: Path,
        data: bytes,
        child: str,
        now: datetime,
        entry: JournalEntry | None,
        listed: Listed,
    ) -> tuple[list[bytes | memoryview], JournalEntry]:
        target = codex_child.landing_root(parent, listed.root)
        if entry is not None:
            # The cut the prepared attempt recorded, through the line that ends its turn: the turn
            # was judged forkable on those bytes, which a rollback appended since does not change.
            end = end_of_line(data, entry.seedLength)
            if _digest(memoryview(data)[:end]) != entry.sourceRevision:
                raise _changed(parent)
            # An entry an older remem prepared may have taken a later session_meta for its identity.
            if (refused := read_rollout(data[: end_of_line(data, 1)]).error) is not None:
                raise OperationError("INVALID", f"{parent}: {refused}")
            prepared = entry
        else:
            turn_index = request.afterTurn or _last_forkable(data, parent, "codex")
            try:
                point = fork_point(data, turn_index)
            except NotAForkPoint as refused:
                rolled_back = _rolled_back(data, turn_index) if refused.code == "open-turn" else None
                reason = rolled_back or refused.reason
                raise OperationError(_REFUSALS[refused.code], f"{parent}: {reason}") from None
            rollout, end = point.rollout, point.cut
            assert rollout.session_id is not None  # a rollout without one is refused as no-conversation
            if (found := codex_child.existing_rollout(target, child)) is not None:
                # Its path holds a time, so no-overwrite alone would let Codex see two sessions of one id.
                raise OperationError(
                    "OP_CONFLICT",
                    f"operation id {request.operationId!r} names session {child}, whose rollout already "
                    f"exists ({found}): it was used for a fork in another remem home, or before this "
                    "home's fork journal was lost; fork again with another operation id",
                )
            prepared = self._prepare(
                _entry(
                    request,
                    source=rollout.session_id,
                    inherited=memoryview(data)[:end],
                    child=child,
                    path=codex_child.child_path(parent, target, child, now),
                    seed_length=point.turn.end,
                    turn=turn_index,
                    title=_title(request, listed.title or rollout.title),
                ),
            )
        codex_child.make_folders(target, Path(prepared.path).parent)
        # A rollout's identity is its line 1 (`formats/codex.py`), inside the bytes copied.
        meta = codex_child.child_meta(codex_child.meta_line(data, 1), child, prepared.source, now)
        return [meta, memoryview(data)[:end]], prepared


def _rolled_back(data: bytes, index: int) -> str | None:
    """Why turn `index` of the rollout `data` cannot be branched from when Codex rolled it back
    (`thread_rolled_back`), with the nearest turns that can be; None for any other turn."""
    turns = read_rollout(data).turns
    if not 1 <= index <= len(turns) or turns[index - 1].status != ROLLED_BACK:
        return None
    before = [turn.index for turn in turns[: index - 1] if turn.forkable][-1:]
    after = [turn.index for turn in turns[index:] if turn.forkable][:1]
    instead = " or ".join(f"turn {n}" for n in before + after)
    then = f"branch after {instead}" if instead else "no turn can be branched from yet"
    return f"turn {index} was rolled back (Codex dropped it from the conversation); {then}"


def _selection(data: bytes, parent: Path, turn: int) -> Selection:
    try:
        return fork_selection(data, parent.name, turn)
    except NotAForkPoint as refused:
        raise OperationError(_REFUSALS[refused.code], f"{parent}: {refused.reason}") from None


def _digest(inherited: memoryview) -> str:
    return "sha256:" + hashlib.sha256(inherited).hexdigest()


def _changed(parent: Path) -> OperationError:
    return OperationError(
        "STALE_SOURCE", f"{parent}: the turns this fork copies changed since it was prepared"
    )


def _recorded_cut(data: bytes, revision: str, line: int) -> int | None:
    """The end of the first line of `data`, from line `line` on, through which its bytes have
    the digest `revision`; None when no such line ends (those bytes changed)."""
    view = memoryview(data)
    at = end_of_line(data, line)
    digest = hashlib.sha256(view[:at])
    while "sha256:" + digest.hexdigest() != revision:
        if at >= len(data):
            return None
        following = data.find(b"\n", at) + 1 or len(data)
        digest.update(view[at:following])
        at = following
    return at


class _Replacing(msgspec.Struct, rename="camel"):
    """A Claude Code line as far as its `content-replacement` entries go."""

    type: Any = None
    session_id: Any = None
    replacements: Any = None


def _replacements(data: bytes, session: str) -> tuple[Any, ...]:
    """The `content-replacement` entries of `session` in the transcript `data`, in file order,
    as `fork_selection` gathers them."""
    return tuple(
        item
        for line in records(data, _Replacing, []).lines
        if line.record.type == "content-replacement"
        and line.record.session_id == session
        and isinstance(line.record.replacements, list)
        for item in line.record.replacements
    )


def _read_parent(path: Path) -> tuple[bytes, str]:
    """The parent's bytes and stat revision, read through a descriptor that is not a link."""
    try:
        fd = open_regular(path)
    except FileNotFoundError:
        raise OperationError("NOT_FOUND", f"{path} does not exist") from None
    except OSError as exc:
        raise OperationError("INVALID", f"{path} cannot be read as a session: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        try:
            data = read_bounded(handle)
        except LineTooLong as exc:
            raise OperationError("INVALID", f"{path}: {exc.reason}") from None
        return data, stat_revision(os.fstat(handle.fileno()))


def _entry(
    request: HarnessForkRequest,
    *,
    source: str,
    inherited: memoryview,
    child: str,
    path: Path,
    seed_length: int,
    turn: int,
    title: str | None,
) -> JournalEntry:
    """A `prepared` entry; its source revision is the digest of the parent's bytes the child
    depends on, which stay the same however much the parent grows."""
    return JournalEntry(
        operationId=request.operationId,
        requestHash=request.digest(),
        status="prepared",
        source=source,
        sourceRevision=_digest(inherited),
        child=child,
        path=str(path),
        seedLength=seed_length,
        forkTurn=turn,
        title=title,
    )


def _last_forkable(data: bytes, parent: Path, harness: Harness) -> int:
    turns = read_transcript(data, parent.name).turns if harness == "claude-code" else read_rollout(data).turns
    forkable = [turn.index for turn in turns if turn.forkable]
    if not forkable:
        raise OperationError("OPEN_TURN", f"{parent}: no turn has ended cleanly yet, nothing to branch from")
    return forkable[-1]


def _title(request: HarnessForkRequest, parent_title: str | None) -> str | None:
    if request.title is not None:
        title = normalize_title(request.title)
        if not title:
            raise OperationError("INVALID", "the title is empty once control characters are removed")
        return title
    return next_title(parent_title) if parent_title else None


def _check_existing(request: HarnessForkRequest, path: Path, entry: JournalEntry) -> None:
    conflict = f"{path} already holds a different session; use another operation id"
    try:
        data = read_file(path)
    except (OSError, LineTooLong):  # not a file this fork wrote (a FIFO, a link, a huge line)
        raise OperationError("OP_CONFLICT", conflict) from None
    if request.harness == "claude-code":
        lineage = read_transcript(data, path.name).lineage
    else:
        lineage = read_rollout(data).lineage
    if not any(edge.kind == "fork" and edge.parent == entry.source for edge in lineage):
        raise OperationError("OP_CONFLICT", conflict)


def _resume(harness: Harness, child: str) -> list[str]:
    return ["claude", "--resume", child] if harness == "claude-code" else ["codex", "exec", "resume", child]
