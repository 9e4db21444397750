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
from pathlib import Path
from typing import Literal

from ..protocol.forks import ForkRequest, ForkResult
from ..protocol.sessions import SessionMeta
from ..sessions.catalog import Entry, SessionCatalog, SessionNotFound
from ..sessions.errors import OperationError
from ..sessions.published import PublishedLogs
from . import codex_child
from .harness_service import HarnessForkRequest, HarnessForks, Listed
from .service import ForkService

log = logging.getLogger("remem.daemon")


def fork_session(catalog: SessionCatalog, request: ForkRequest) -> tuple[ForkResult, Path]:
    """The fork `request` asks for, and the child's file."""
    try:
        entry = catalog.find(request.source)
    except SessionNotFound as exc:
        raise OperationError("NOT_FOUND", str(exc)) from None
    if entry.format == "dsh":
        result = ForkService(catalog).fork(request)
        return result, catalog.find(result.child).path
    return _harness_fork(catalog, entry, request)


def _harness_fork(catalog: SessionCatalog, entry: Entry, request: ForkRequest) -> tuple[ForkResult, Path]:
    harness: Literal["claude-code", "codex"] = "claude-code" if entry.format == "claude-code" else "codex"
    root = catalog.root_of(entry.path)
    if harness == "codex":
        _check_child_root(catalog, entry, root)
    done = HarnessForks(catalog.home).fork(
        HarnessForkRequest(
            harness=harness,
            path=str(entry.path),
            operationId=request.operationId,
            afterTurn=None if request.atSeq is None else _turn_at(catalog, entry, request.atSeq),
            title=request.title,
            expectedRevision=request.expectedRevision,
            asked=request.digest(),
        ),
        Listed(root, entry.summary.title),
    )
    if done.created:
        PublishedLogs(catalog.home).record(Path(done.path))
    if harness == "codex" and done.title is not None:
        _name_codex_child(catalog, done.child, done.title)
    result = ForkResult(
        child=done.child,
        seedLength=done.seedLength,
        forkTurn=done.forkTurn,
        created=done.created,
        resume=done.resume,
    )
    return result, Path(done.path)


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


def _turn_at(catalog: SessionCatalog, entry: Entry, line: int) -> int:
    """The turn whose line range holds `line`. A turn that cannot be branched from has no end
    (`endSeq` None): its lines run to the next turn's, so the fork names it and is refused for
    what it is (`OPEN_TURN`, or `INVALID` in a Claude Code subagent's file), not as an address
    in no turn."""
    turns = catalog.projection(entry.summary.id).turns
    for turn, after in zip(turns, [*turns[1:], None], strict=True):
        last = turn.endSeq if turn.endSeq is not None else (after.startSeq - 1 if after else line)
        if turn.startSeq <= line <= last:
            return turn.turn
    raise OperationError(
        "INVALID_ANCHOR",
        f"line {line} of {entry.summary.id} is in no turn; `remem sessions turns` shows each turn's lines",
    )
