"""Forks of Claude Code and Codex sessions that the harness itself resumes, exactly once.

The same protocol as a DSH fork (`service.py`): under the operation's lock the journal entry is
written `prepared` (binding the operation id to its request, the cut and the child's path)
before any child byte exists; the child is published whole with a no-overwrite link and fsyncs;
then the entry is `committed`. The parent file is only read, through a descriptor opened from
its root one folder at a time without following a link; the child lands where the harness
looks for it (Claude Code: the parent's project folder; Codex: today's ``sessions/YYYY/MM/DD``,
see `codex_child.child_path`), written through a descriptor of that folder opened the same way
(`journal.child_folder`, decision 0364). The caller names the parent file (`sources.py`
resolves it from a session id).
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
from ..safe_open import open_regular, reason
from ..sessions.errors import ErrorCode, OperationError
from ..sessions.formats.claude_code import Selection, fork_selection, read_transcript
from ..sessions.formats.codex import fork_point, read_rollout
from ..sessions.formats.jsonl import LineTooLong, end_of_line, read_bounded, records
from ..sessions.formats.model import Harness, NotAForkPoint, RefusalCode, Turn
from ..sessions.harness_sources import codex_history, read_file
from ..sessions.reader import stat_revision
from . import claude_code_child, codex_child
from .child import given_title, next_title
from .journal import ForkJournal, JournalEntry, child_folder

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
    # No harness writes the parent any more: its last turn ends past its answer (decision 0535).
    # Not part of the request: a retry after the parent went quiet is the same fork.
    stopped: bool = False

    def digest(self) -> str:
        if self.asked is not None:
            return self.asked
        fields = self.model_dump(exclude={"operationId", "asked", "stopped"})
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
            resume=resume_command(request.harness, entry.child),
            title=entry.title,
        )

    def _create(
        self, request: HarnessForkRequest, entry: JournalEntry | None, listed: Listed
    ) -> tuple[JournalEntry, bool]:
        parent = Path(request.path)
        root = _parent_root(request, parent, listed)
        data, revision = _read_parent(parent, root)
        if request.harness == "codex":
            data = _codex_history(parent, data)
        expected = request.expectedRevision
        if entry is None and expected is not None and expected != revision:
            raise stale_source(parent, expected, revision)
        now = datetime.now(timezone.utc)
        child = entry.child if entry else child_id(request.operationId)
        if request.harness == "claude-code":
            parts, prepared = self._claude_code(request, parent, data, child, now, entry, listed, root)
            landing = root  # beside its parent, in the folder the parent was just read from
        else:
            parts, prepared = self._codex(request, parent, data, child, now, entry, listed)
            landing = codex_child.landing_root(parent, listed.root)
        path = Path(prepared.path)
        # Codex's date folders are made on the way, user-only; a Claude Code project folder
        # that is gone is not made again.
        with child_folder(landing, path, make=request.harness == "codex") as folder:
            return self.journal.publish(
                prepared,
                parts,
                lambda existing: _check_existing(request, existing, prepared, landing, parts),
                folder=folder,
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
        root: Path,
    ) -> tuple[list[bytes | memoryview], JournalEntry]:
        if entry is not None:
            # The bytes the prepared attempt copies, found by their digest (its last copied line is
            # not recorded, and lies at or past line `seedLength`): the turn was judged on them, and
            # a rewind or an edit appended since may have moved the active conversation off it.
            cut = _recorded_cut(data, entry.sourceRevision, entry.seedLength)
            if cut is None:
                raise _changed(parent)
            # The recorded cut bounds the turn: read to its end, as when it was prepared.
            selection = _selection(data[:cut], parent, entry.forkTurn, stopped=True)
            # Every content-replacement of the session, as a fresh fork carries them.
            selection = replace(selection, replacements=_replacements(data, selection.session_id))
            prepared = entry
        else:
            turn = request.afterTurn or _last_forkable(data, parent, "claude-code")
            selection = _selection(data, parent, turn, stopped=request.stopped)
            prepared = _entry(
                request,
                source=selection.session_id,
                # Through the last line copied: a repeated uuid's last copy may lie past the turn.
                inherited=memoryview(data)[: end_of_line(data, max(selection.turn.end, *selection.lines))],
                child=child,
                path=parent.with_name(f"{child}.jsonl"),
                root=root,
                seed_length=len(selection.lines),
                turn=turn,
                title=_title(request, listed.title or selection.title),
            )
        stamp = now.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        lines = claude_code_child.child_lines(data, selection, child, prepared.title or "", stamp)
        parts: list[bytes | memoryview] = [b"".join(lines)]  # one write, not one system call per record
        if entry is None:
            # The child's path is its id's, the operation id's: a transcript already there was
            # made with this operation id in another remem home, or before this home's fork
            # journal was lost. Unless it is this very fork, it is refused before an entry binds
            # the operation to that path (recovery would take the file for this fork's child).
            _check_existing(request, Path(prepared.path), prepared, root, parts, missing_ok=True)
            prepared = self._prepare(prepared)
        return parts, prepared

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
                unforkable = None
                if refused.code == "open-turn":
                    unforkable = _unforkable(read_rollout(data).turns, turn_index, "codex")
                why = unforkable or refused.reason
                raise OperationError(_REFUSALS[refused.code], f"{parent}: {why}") from None
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
                    root=target,
                    seed_length=point.turn.end,
                    turn=turn_index,
                    title=_title(request, listed.title or rollout.title),
                ),
            )
        # A rollout's identity is its line 1 (`formats/codex.py`), inside the bytes copied.
        meta = codex_child.child_meta(codex_child.meta_line(data, 1), child, prepared.source, now)
        return [meta, memoryview(data)[:end]], prepared


def _unforkable(turns: tuple[Turn, ...], index: int, harness: Harness) -> str | None:
    """Why turn `index` of `turns` (a conversation's, in order) cannot be branched from, with
    the nearest turns before and after it that can be; None when there is no such turn
    (decision 0361)."""
    if not 1 <= index <= len(turns):
        return None
    turn = turns[index - 1]
    # A call whose outcome is unknown has no result (an aborted turn's may have one, untold).
    missing = sorted({t.name for t in turn.tools if t.ok is None}) if turn.status != "aborted" else []
    output = "result" if harness == "claude-code" else "output"
    calls = f"its call to {', '.join(missing)} has no {output}" if missing else ""
    if turn.status == ROLLED_BACK:
        why = f"turn {index} was rolled back (Codex dropped it from the conversation)"
    elif turn.status == "open" and harness == "codex":
        ended = (
            "has not ended: the rollout has no task_complete for it (Codex is still running it, or stopped)"
        )
        why = f"turn {index} {ended}" + (f", and {calls}" if calls else "")
    elif turn.status == "open":
        waiting = "its last tool result" if turn.tools else "its prompt"
        running = f"the model has not answered {waiting} yet (Claude Code is still running it, or stopped)"
        why = f"turn {index} is open: " + (calls or running)
    else:
        why = f"turn {index} ended ({turn.status}) with a tool call left without its {output}"
        why += f" ({calls})" if calls else ""
    before = [t.index for t in turns[: index - 1] if t.forkable][-1:]
    after = [t.index for t in turns[index:] if t.forkable][:1]
    instead = " or ".join(f"turn {n}" for n in before + after)
    return f"{why}; " + (f"branch after {instead}" if instead else "no turn can be branched from yet")


def _codex_history(parent: Path, data: bytes) -> bytes:
    """What a fork of the rollout `parent` copies: a rollout that continues its thread after a
    revert with the history it inherits (decision 0366), so the child stands alone."""
    history, unjoined = codex_history(parent, data)
    if unjoined is not None:
        raise OperationError(
            "INVALID", f"{parent}: cannot be forked, its history before it cannot be read: {unjoined}"
        )
    return history


def _selection(data: bytes, parent: Path, turn: int, *, stopped: bool) -> Selection:
    try:
        return fork_selection(data, parent.name, turn, stopped=stopped)
    except NotAForkPoint as refused:
        why = refused.reason
        if refused.code == "open-turn":
            turns = read_transcript(data, parent.name).turns
            why = _unforkable(turns, turn, "claude-code") or why
        raise OperationError(_REFUSALS[refused.code], f"{parent}: {why}") from None


def stale_source(parent: Path, expected: str, now: str) -> OperationError:
    """The refusal of a fork asked for at revision `expected` of the file `parent`, now at `now`."""
    return OperationError(
        "STALE_SOURCE",
        f"{parent} changed since revision {expected} (now {now}); re-read it and choose the turn again",
    )


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
        for line in records(data, _Replacing, [], replace_bad_utf8=True).lines
        if line.record.type == "content-replacement"
        and line.record.session_id == session
        and isinstance(line.record.replacements, list)
        for item in line.record.replacements
    )


def _parent_root(request: HarnessForkRequest, parent: Path, listed: Listed) -> Path:
    """The root the parent is read from: where the catalog listed it, else (a file named without
    the catalog) the Codex folder its path shows, or its own folder."""
    if listed.root is not None:
        return listed.root
    return codex_child.layout_root(parent) if request.harness == "codex" else parent.parent


def _read_parent(path: Path, root: Path) -> tuple[bytes, str]:
    """The parent's bytes and stat revision, read through a descriptor opened from its `root`
    without following a link, on the way or at the file (`safe_open.open_regular`)."""
    try:
        fd = open_regular(path, root=root)
    except FileNotFoundError as exc:
        what = path if exc.filename == str(path) else f"{path} (its folder {exc.filename})"
        raise OperationError("NOT_FOUND", f"{what} does not exist") from None
    except OSError as exc:
        raise OperationError("INVALID", f"{path} cannot be read as a session: {reason(exc, path)}") from None
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
    root: Path,
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
        root=str(root),
    )


def _last_forkable(data: bytes, parent: Path, harness: Harness) -> int:
    turns = read_transcript(data, parent.name).turns if harness == "claude-code" else read_rollout(data).turns
    forkable = [turn.index for turn in turns if turn.forkable]
    if not forkable:
        raise OperationError("OPEN_TURN", f"{parent}: no turn has ended cleanly yet, nothing to branch from")
    return forkable[-1]


def _title(request: HarnessForkRequest, parent_title: str | None) -> str | None:
    if request.title is not None:
        return given_title(request.title)
    return next_title(parent_title) if parent_title else None


def _check_existing(
    request: HarnessForkRequest,
    path: Path,
    entry: JournalEntry,
    root: Path,
    parts: list[bytes | memoryview],
    *,
    missing_ok: bool = False,
) -> None:
    """Refuse (`OP_CONFLICT`) the file at `path` unless it is the child `entry` prepares: for
    Claude Code, the same records of the parent (the cut) and the same title as `parts`, the
    bytes this fork writes; for Codex, a fork of the same parent. `missing_ok`: no file passes,
    and so does a folder on its way that cannot be opened."""
    conflict = f"{path} already holds a different session; use another operation id"
    try:
        data = read_file(path, root=root)
    except OSError as exc:
        # No file there, or a folder on its way that is gone, a link or no folder: the child's
        # folder is refused for what it is when the child is written.
        if missing_ok and (isinstance(exc, FileNotFoundError) or exc.filename != str(path)):
            return
        raise OperationError("OP_CONFLICT", conflict) from None  # a FIFO, a link: not this fork's
    except LineTooLong:
        raise OperationError("OP_CONFLICT", conflict) from None
    if request.harness == "claude-code":
        found = claude_code_child.identity(data)
        wanted = claude_code_child.identity(b"".join(parts))
        if found != wanted:
            held = str(found) if found is not None else "no fork remem writes"
            raise OperationError(
                "OP_CONFLICT",
                f"operation id {request.operationId!r} names session {entry.child}, whose transcript "
                f"already exists ({path}) and holds another fork ({held}; this one copies {wanted}): "
                "it was used for a fork in another remem home, or before this home's fork journal "
                "was lost; fork again with another operation id",
            )
        return
    if not any(edge.kind == "fork" and edge.parent == entry.source for edge in read_rollout(data).lineage):
        raise OperationError("OP_CONFLICT", conflict)


def resume_command(harness: Harness, child: str) -> list[str]:
    """The command that continues `child` in `harness`, run from the session's cwd: the
    harness's interactive resume, which opens the child and waits for the user's next prompt.

    `codex exec resume <child>` without a prompt continues nothing ("No prompt provided", exit
    0), so Codex's is `codex resume <child>`, as Claude Code's is `claude --resume <child>`
    (decision 0438)."""
    if harness == "claude-code":
        return ["claude", "--resume", child]
    return ["codex", "resume", child]
