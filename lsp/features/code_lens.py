"""Code lenses: consolidate and branch in session transcripts, provenance on records.

In a transcript (`remem-session:/<encodeURIComponent(id)>/<title>.md`, the title only naming
the tab): "Consolidate this session" on the first line (a subagent's, which is reviewed with
the session that ran it, offers that session instead), and "Branch after turn N" right after
each turn the daemon says can be branched from (above the next `## Turn N — status — time`
heading, or on the last line; none for a number several turns bear, which a lens could not tell
apart), carrying the session revision the text was read at, so that a
branch from a transcript the session has outgrown is refused, not cut from turns it does not
show. They run the extension's flows (`remem.consolidateSession`, `remem.branchFromTurn`), so a
lens checks the model route, explains a refusal and confirms as the palette and the tree do.
Without a daemon a transcript gets no lenses, since none of them could run; a text this
server did not hand out gets no branch lenses, since what it was read from is unknown.

On a record whose current content a review produced: that provenance on the first line, which
opens the session's transcript at the evidence's first turn (the extension's
`remem.openTranscript`), and "Receipt" beside it (`remem.showReceipt`); without a daemon the
provenance names events, and opens the receipt.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.workspace import TextDocument

from remem.daemon.memory.validation import parse_record
from remem.daemon.protocol.rpc import SessionParams, TurnRow, TurnsResult

from .. import ids
from ..documents import Kind, MemoryFile, lines_of, memory_file, opened
from ..provenance import history
from ..server import RememServer
from ..transcripts import TURN_HEADING, session_of


def register(server: RememServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    async def code_lens(ls: RememServer, params: types.CodeLensParams) -> list[types.CodeLens] | None:
        uri = params.text_document.uri
        document = opened(ls, uri)
        if document is None:
            return None
        session = session_of(uri)
        if session is not None:
            return await _transcript_lenses(ls, document, session)
        file = memory_file(ls, uri)
        if file is None or file.kind is not Kind.RECORD:
            return None
        return await _provenance_lenses(ls, document, file)


async def _transcript_lenses(ls: RememServer, document: TextDocument, session: str) -> list[types.CodeLens]:
    try:
        answer = await ls.link.api.session_turns(SessionParams(id=session))
    except JsonRpcException:
        return []  # no daemon, or the session is gone: none of these lenses could run
    lenses = await _consolidation_lenses(ls, session, answer)
    revision = ls.transcripts.revision(session, document.source)
    if revision is None:
        return lenses  # not a text this server handed out: which conversation it shows is unknown
    # A number that several turns bear (a log that repeats it) names none of them: a branch
    # carries only the number, so it gets no lens rather than one that cuts another turn.
    numbered = Counter(row.turn for row in answer.turns)
    for row, line in _placed(_turn_ends(lines_of(document.source)), answer.turns):
        if row.forkable and numbered[row.turn] == 1:
            # The revision the text was read at: a session changed since is refused `STALE_SOURCE`.
            target = {"session": session, "turn": row.turn, "expectedRevision": revision}
            lenses.append(_lens(line, f"Branch after turn {row.turn}", ids.BRANCH_FROM_TURN, target))
    return lenses


def _placed(ends: list[tuple[int | None, int]], rows: list[TurnRow]) -> list[tuple[TurnRow, int]]:
    """The daemon's row of each turn heading, with the line its lens sits on. The headings are
    the rows in order when there are as many and their numbers agree: a `## Turn ?` heading (no
    number in the log) is then the row the daemon numbered by its place, as `remem sessions
    turns` shows it. Otherwise each numbered heading is the row of its number."""
    if len(ends) == len(rows) and all(
        n is None or n == row.turn for (n, _), row in zip(ends, rows, strict=True)
    ):
        return [(row, line) for (_, line), row in zip(ends, rows, strict=True)]
    by_number = {row.turn: row for row in rows}
    return [(by_number[n], line) for n, line in ends if n is not None and n in by_number]


async def _consolidation_lenses(ls: RememServer, session: str, turns: TurnsResult) -> list[types.CodeLens]:
    """ "Consolidate this session", or for a subagent's (the daemon refuses it, `SUBAGENT`: it is
    reviewed as part of the session that ran it, decision 0356) that session, when the daemon
    knows it and it is no subagent's itself; nothing otherwise."""
    if turns.kind != "subagent":
        return [_lens(0, "Consolidate this session", ids.CONSOLIDATE_SESSION, {"session": session})]
    if turns.parent is None:
        return []
    try:
        parent = await ls.link.api.session_turns(SessionParams(id=turns.parent))
    except JsonRpcException:
        return []  # its parent is not listed: nothing here can be consolidated
    if parent.kind == "subagent":
        return []
    target = {"session": turns.parent}
    return [_lens(0, "Consolidate the session that ran this subagent", ids.CONSOLIDATE_SESSION, target)]


def _turn_ends(lines: list[str]) -> list[tuple[int | None, int]]:
    """Each turn (its number; None for `## Turn ?`) with the line a lens above sits right after
    it: the next section's heading (another turn, what happened between turns, an abandoned
    branch), or the last line."""
    sections = [n for n, line in enumerate(lines) if line.startswith("## ")]
    # Each section ends where the next begins, the last on the last line; with no section at
    # all (a session with no turns yet) there is nothing to pair the last line with.
    ends = dict(zip(sections, [*sections[1:], max(len(lines) - 1, 0)], strict=False))
    return [
        (None if m.group(1) == "?" else int(m.group(1)), ends[n])
        for n, line in enumerate(lines)
        if (m := TURN_HEADING.match(line))
    ]


async def _provenance_lenses(
    ls: RememServer, document: TextDocument, file: MemoryFile
) -> list[types.CodeLens]:
    record = parse_record(document.source, file.path.name).record
    if record is None:
        return []
    found = (await history(ls, file.key, record)).provenance
    if found is None:
        return []
    receipt = {"review": found.review, "path": found.receipt}
    if not found.turns:  # the daemon cannot say where the evidence is: the receipt can
        return [_lens(0, found.label(), ids.SHOW_RECEIPT, receipt)]
    at = {"session": found.session, "turn": found.turns[0], "label": found.source()}
    return [
        _lens(0, found.label(), ids.OPEN_TRANSCRIPT, at),
        _lens(0, "Receipt", ids.SHOW_RECEIPT, receipt),
    ]


def _lens(line: int, title: str, command: str, argument: Mapping[str, object]) -> types.CodeLens:
    at = types.Position(line, 0)
    return types.CodeLens(
        range=types.Range(at, at), command=types.Command(title=title, command=command, arguments=[argument])
    )
