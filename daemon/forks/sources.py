"""A fork of any listed session, by the service of its format.

`remem sessions fork` and the editor name a session by id and the cut by an address in its
turns (`atSeq`: a DSH event seq, or a Claude Code or Codex line number, as `sessions turns`
shows them). A DSH session is forked by `ForkService`; a Claude Code transcript or a Codex
rollout by `HarnessForks`, after the turn whose line range holds the address, and the result
names the command that resumes the child in its harness. remem's own children are recorded as
published, so they are not live until the harness appends to them.
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from pathlib import Path
from typing import Literal

from ..protocol.forks import LIVE_MARK, ForkRequest, ForkResult
from ..protocol.rpc import TurnRow
from ..protocol.sessions import SessionFormat, SessionMeta, TurnSummary
from ..sessions.catalog import Entry, SessionCatalog, SessionNotFound
from ..sessions.errors import OperationError
from ..sessions.formats.jsonl import LineTooLong
from ..sessions.harness_homes import resume_place
from ..sessions.harness_sources import view_of
from ..sessions.projection import Projection
from ..sessions.published import PublishedLogs
from . import codex_child
from .cut import check_anchor, no_turn
from .harness_service import HarnessForkRequest, HarnessForks, Listed, resume_command, stale_source
from .journal import ForkJournal, JournalEntry, used_otherwise
from .service import ForkService

log = logging.getLogger("remem.daemon")


def fork_session(catalog: SessionCatalog, request: ForkRequest) -> tuple[ForkResult, Path]:
    """The fork `request` asks for, and the child's file.

    The operation's journal entry is consulted first: a retry of the same request resumes (or
    answers) what the entry records without judging the session again, since the session may
    have changed since (a Claude Code rewind moves `atSeq` into an abandoned branch) or be
    gone; another request with that operation id is refused (decision 0371)."""
    recorded, request = _recorded(catalog, request)
    try:
        entry = catalog.find(request.source)
    except SessionNotFound as exc:
        answer = _answered(catalog, recorded) if recorded is not None else None
        if answer is None:
            raise OperationError(exc.code, str(exc)) from None
        return answer
    if entry.format == "dsh":
        result = ForkService(catalog).fork(request)
        return result, _listed_child(catalog, request, result.child).path
    return _harness_fork(catalog, entry, request, recorded)


def _listed_child(catalog: SessionCatalog, request: ForkRequest, child: str) -> Entry:
    """The listed session of the `child` the fork of `request` made or answers. A committed
    entry names a child made earlier, which may have been deleted since: that is refused
    (`NOT_FOUND`), for DSH, Claude Code and Codex alike, never answered as if it were there,
    nor made again under an id its first answer gave another session (decision 0414)."""
    try:
        return catalog.find(child)
    except SessionNotFound as exc:
        if exc.code != "NOT_FOUND":
            raise OperationError(exc.code, str(exc)) from None
        raise OperationError(
            "NOT_FOUND",
            f"operation {request.operationId!r} made the fork {child} of {request.source}, which is "
            f"no longer listed ({exc}): it was deleted or moved since; to branch again, fork with a "
            "new operation id",
        ) from None


def _recorded(catalog: SessionCatalog, request: ForkRequest) -> tuple[JournalEntry | None, ForkRequest]:
    """The journal entry of the request's operation (an interrupted attempt settled first, as
    `ForkJournal.once` settles it), None when the operation id is new, and the request as the
    entry has it; `OP_CONFLICT` when it was used for another request (another session, cut,
    title or expected revision)."""
    if not request.operationId.strip():
        return None, request  # refused by the fork itself
    with ForkJournal(catalog.home.ensure_layout()).operation(request.operationId) as entry:
        pass
    if entry is None or entry.requestHash == request.digest():
        return entry, request
    journalled = _by_turn_end(catalog, request, entry)
    if journalled is None:
        raise used_otherwise(entry)
    return entry, journalled


def _by_turn_end(catalog: SessionCatalog, request: ForkRequest, entry: JournalEntry) -> ForkRequest | None:
    """A fork by turn as a remem before protocol 25 journalled it: by the seq `sessions turns`
    gave the turn's end (decision 0393). Found while the session can be read; None otherwise."""
    if request.afterTurn is None or (entry.source, entry.forkTurn) != (request.source, request.afterTurn):
        return None
    try:
        branchable = catalog.find(request.source).branchable
        turns = catalog.projection(request.source).turns
    except SessionNotFound:
        return None
    row = next((TurnRow.of(t, branchable) for t in turns if t.turn == request.afterTurn), None)
    legacy = None if row is None else request.model_copy(update={"afterTurn": None, "atSeq": row.fork_at})
    return legacy if legacy is not None and legacy.digest() == entry.requestHash else None


def _answered(catalog: SessionCatalog, recorded: JournalEntry) -> tuple[ForkResult, Path] | None:
    """The answer of a committed fork whose parent can no longer be found (deleted, or not
    readable now): its child, as long as it is listed; None otherwise."""
    if recorded.status != "committed":
        return None  # its child is still to be copied from the parent
    try:
        child = catalog.find(recorded.child)
    except SessionNotFound:
        return None
    resume = None if child.format == "dsh" else resume_command(child.format, recorded.child)
    named = ForkResult(
        child=recorded.child,
        seedLength=recorded.seedLength,
        forkTurn=recorded.forkTurn,
        created=False,
        resume=resume,
    )
    return _answer(catalog, child.format, named, recorded.title, child.summary.cwd, child.path), child.path


def _harness_fork(
    catalog: SessionCatalog, entry: Entry, request: ForkRequest, recorded: JournalEntry | None
) -> tuple[ForkResult, Path]:
    harness: Literal["claude-code", "codex"] = "claude-code" if entry.format == "claude-code" else "codex"
    root = catalog.root_of(entry.path)
    if harness == "codex":
        _check_child_root(catalog, entry, root)
    done = HarnessForks(catalog.home).fork(
        HarnessForkRequest(
            harness=harness,
            path=str(entry.path),
            operationId=request.operationId,
            # A retry takes the recorded cut: `atSeq` is judged once, when the entry is prepared.
            afterTurn=_after_turn(catalog, entry, request, recorded),
            title=request.title,
            expectedRevision=request.expectedRevision and _file_revision(request.expectedRevision),
            asked=request.digest(),
            stopped=not entry.summary.live,
        ),
        Listed(root, entry.summary.title),
    )
    if done.created:
        PublishedLogs(catalog.home).record(Path(done.path))
    else:  # made by an earlier try, and maybe deleted since
        _listed_child(catalog, request, done.child)
    result = ForkResult(
        child=done.child,
        seedLength=done.seedLength,
        forkTurn=done.forkTurn,
        created=done.created,
        resume=done.resume,
    )
    child = Path(done.path)
    return _answer(catalog, harness, result, done.title, entry.summary.cwd, child), child


def _answer(
    catalog: SessionCatalog,
    harness: SessionFormat,
    result: ForkResult,
    title: str | None,
    cwd: str | None,
    child: Path,
) -> ForkResult:
    """`result` with where and how its harness resumes the `child` file, a session of `cwd`
    (none for DSH), once a Codex child has its title where Codex's own listing reads it."""
    if harness == "codex" and title is not None:
        _name_codex_child(catalog, result.child, title)
    if harness == "dsh" or result.resume is None:
        return result
    return result.model_copy(update=asdict(resume_place(harness, child, cwd, result.resume)))


def _name_codex_child(catalog: SessionCatalog, child: str, title: str) -> None:
    """A rollout has no title record, so a Codex child's title is remem's own, as a rename sets
    it (decision 0291); set once, so a retry never undoes a rename of the child. The child is
    made by now: metadata that cannot be read or changed (which the listing reports), or a
    rename that came first, leaves it untitled, never the fork failed."""
    known, unreadable = catalog.metadata.read()
    current = known.get(child, SessionMeta())
    if unreadable is not None or current.title is not None:
        return
    try:
        catalog.metadata.update(child, current.generation, title=title)
    except OperationError as exc:
        log.warning("the fork's child %s keeps no title: %s", child, exc.code)


def _check_child_root(catalog: SessionCatalog, entry: Entry, root: Path) -> None:
    """Refuse a Codex fork whose child would land outside every listed root: it would be
    neither listed nor announced."""
    target = codex_child.child_root(root)
    if not any(target.is_relative_to(listed) for listed in catalog.roots):
        raise OperationError(
            "INVALID",
            f"{entry.summary.id} is archived in {root}; its fork goes to {target}, where Codex "
            "resumes it, but that folder is not a session root: name it with --root or in "
            "settings.yml",
        )


def _after_turn(
    catalog: SessionCatalog, entry: Entry, request: ForkRequest, recorded: JournalEntry | None
) -> int | None:
    if recorded is not None:
        return recorded.forkTurn
    shown = _turns_shown(catalog, entry, request.expectedRevision)
    if shown is not None:
        now = catalog.projection_of(entry)
        if _cut(catalog, entry, request, shown) != _cut(catalog, entry, request, now):
            raise _read_at_other_liveness(entry, request)
    return _named_turn(catalog, entry, request)


def _turns_shown(catalog: SessionCatalog, entry: Entry, expected: str | None) -> Projection | None:
    """The session's turns as the client read them at the revision `expected`, when it read
    them at another liveness; None when it read them as they are now. Refuses (`STALE_SOURCE`)
    a fork whose file changed since: said before the turn is looked for, as in the session as it
    is now the turn the client chose may be missing, or another one (decision 0369)."""
    now = entry.turns_revision
    if expected is None or expected == now:
        return None
    if _file_revision(expected) != entry.summary.revision:
        raise stale_source(entry.path, expected, now)
    projection = catalog.projection_of(entry)
    return projection.model_copy(update={"turns": catalog.turns_read(entry, live=not entry.live_cut)})


def _named_turn(
    catalog: SessionCatalog, entry: Entry, request: ForkRequest, projection: Projection | None = None
) -> int | None:
    """The turn the fork names in the session's turns `projection` (its turns now, read only when
    it names one: the default fork leaves the file to the harness fork), None for the last
    forkable one."""
    if request.afterTurn is not None:
        count = len((projection or catalog.projection_of(entry)).turns)
        if not 1 <= request.afterTurn <= count:  # said as a DSH session's is, not by the file
            raise no_turn(entry.summary.id, request.afterTurn, count)
        return request.afterTurn
    if request.atSeq is None:
        return None
    return _turn_at(catalog, entry, request.atSeq, projection or catalog.projection_of(entry))


def _cut(
    catalog: SessionCatalog, entry: Entry, request: ForkRequest, projection: Projection
) -> list[TurnSummary] | None:
    """The turns the fork copies from the session's turns `projection`, None if it names no
    turn of them. Only a Claude Code session's last turn ends elsewhere live than quiet (decision
    0535), so a fork after an earlier turn cuts the same lines at either liveness (decision 0544)."""
    try:
        turn = _named_turn(catalog, entry, request, projection)
    except OperationError:
        return None  # refused for what it names in the turns as they are now, if it is there too
    return [t for t in projection.turns if turn is None or t.turn <= turn]


def _read_at_other_liveness(entry: Entry, request: ForkRequest) -> OperationError:
    """The refusal of a fork whose turns were read at the revision `expectedRevision`, while the
    session was live or quiet, which it no longer is, and where the turn it names ends elsewhere."""
    if request.afterTurn is not None:
        named = f"turn {request.afterTurn}"
    elif request.atSeq is not None:
        named = f"the turn of line {request.atSeq}"
    else:
        named = "its last turn"
    if entry.live_cut:
        read = "as a listing gives them, or as read while no harness wrote it"
        now = (
            f"a harness may write it now, so {named} ends at its answer, before the tool calls made after it"
        )
    else:
        read = "read while a harness could still write it"
        now = f"no harness writes it any more, so {named} ends past the tool calls made after its answer"
    return OperationError(
        "STALE_SOURCE",
        f"{entry.path}: revision {request.expectedRevision} names its turns {read}; {now}. Take the "
        f"revision from `remem sessions turns {entry.summary.id} --json` and choose the turn again",
    )


def _file_revision(revision: str) -> str:
    """The revision of the session's file a revision of its turns (`Entry.turns_revision`) names."""
    return revision.removesuffix(LIVE_MARK)


def _turn_at(catalog: SessionCatalog, entry: Entry, line: int, projection: Projection) -> int:
    """The turn whose line range holds `line` in the session's turns `projection`. A turn that
    cannot be branched from has no end (`endSeq` None): its lines run to the next turn's, so the
    fork names it and is refused for what it is (`OPEN_TURN`, or `INVALID` in a Claude Code
    subagent's file), not as an address in no turn."""
    turns = projection.turns
    # `lastSeq` counts newlines; a complete last line without one is numbered too, and may end
    # a turn (the editor anchors a fork at its `forkAt`).
    numbered = max([projection.lastSeq, *(turn.endSeq for turn in turns if turn.endSeq is not None)])
    check_anchor(entry.summary.id, line, numbered, lines=True)
    for turn, after in zip(turns, [*turns[1:], None], strict=True):
        last = turn.endSeq if turn.endSeq is not None else (after.startSeq - 1 if after else line)
        if turn.startSeq <= line <= last:
            return turn.turn
    raise OperationError("INVALID_ANCHOR", _in_no_turn(catalog, entry, line))


def _in_no_turn(catalog: SessionCatalog, entry: Entry, line: int) -> str:
    """Why `line` of a Claude Code or Codex file is in none of the turns a fork can follow: in
    an abandoned branch of a Claude Code file, or a subagent written inside it, or nowhere
    (decision 0361)."""
    session = entry.summary.id
    where = f"line {line} of {session}"
    turns = f"branch after a turn of its conversation (`remem sessions turns {session}`)"
    if entry.format == "claude-code":
        try:
            view = view_of(entry.format, entry.path, catalog.harness_bytes(entry))
        except (OSError, LineTooLong):
            view = None
        for branch in view.branches if view is not None else ():
            if any(turn.start <= line <= turn.end for turn in branch.turns):
                after = f"after turn {branch.after_turn}" if branch.after_turn else "before its first turn"
                return (
                    f"{where} is in an abandoned branch of the session (a rewind or an edit {after}, "
                    f"{session}@{branch.leaf} in the tree); Claude Code resumes only the session's "
                    "active conversation (even `--resume-session-at` finds no message of another "
                    f"branch), so no fork can start there: {turns}"
                )
        for chain in view.sidechains if view is not None else ():
            if any(turn.start <= line <= turn.end for turn in chain.turns):
                return (
                    f"{where} is in a subagent Claude Code wrote inside the session's file "
                    f"({session}@{chain.root} in the tree), which no harness resumes: {turns}"
                )
    return f"{where} is in no turn; `remem sessions turns` shows each turn's lines"
