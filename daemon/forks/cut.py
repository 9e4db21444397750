"""Where a fork cuts its source, resolved exactly like DSH's Host `session.fork`.

The boundary is the first `turn/end` at or after the anchor (no anchor: the last one; an
anchor that is no event of the log is refused, decision 0536); the cut then extends over
everything up to the next `turn/start` (titles, idle injections, standalone compactions), so a
child never starts in the middle of between-turn bookkeeping. It is resolved on the
projection's turn list, which holds every turn's `turn/start` and `turn/end` seqs, so no event
needs to be read again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..sessions.errors import OperationError
from ..sessions.projection import TurnBounds


@dataclass(frozen=True)
class Cut:
    seed_length: int  # events[:seed_length] become the child's seed
    fork_turn: int  # the turn whose end the cut follows


def resolve_cut(turns: Sequence[TurnBounds], last_seq: int, at_seq: int | None) -> Cut:
    index = _boundary(turns, at_seq)
    following = turns[index + 1].startSeq if index + 1 < len(turns) else last_seq + 1
    return Cut(seed_length=following, fork_turn=turns[index].turn)


def turn_end(turns: Sequence[TurnBounds], turn: int, session: str) -> int:
    """The seq a fork after turn `turn` (as `sessions turns` numbers them) names: its end;
    `INVALID_ANCHOR` for a turn the session does not have, `OPEN_TURN` for one not ended."""
    found = next((t for t in turns if t.turn == turn), None)
    if found is None:
        raise no_turn(session, turn, len(turns))
    if found.endSeq is None:
        raise OperationError(
            "OPEN_TURN", f"turn {turn} of {session} has not ended; branch from an earlier turn or wait"
        )
    return found.endSeq


def check_anchor(session: str, at: int, last: int, *, lines: bool) -> None:
    """Refuse an `--at` that names nothing in the session: no event of a DSH log (0 to `last`),
    no line of a Claude Code or Codex file (1 to `last`). DSH's Host takes one past the end for
    its last turn; a mistyped anchor forking a child no one asked for is worse (decision 0536)."""
    first, unit, one = (1, "lines", "a line") if lines else (0, "events", "an event")
    if first <= at <= last:
        return
    held = f"its {unit} are {first}-{last}" if last >= first else f"it has no {unit[:-1]} yet"
    raise OperationError(
        "INVALID_ANCHOR",
        f"--at {at} is no {unit[:-1]} of {session}: {held}; give {one} of the turn to branch after "
        f"(`remem sessions turns {session}`), or leave --at out to branch after the last ended turn",
    )


def no_turn(session: str, turn: int, count: int) -> OperationError:
    """The refusal of a fork after a turn the session does not have: which turns it has."""
    turns = f"its turns are 1-{count}" if count else "it has no turn yet"
    return OperationError("INVALID_ANCHOR", f"{session} has no turn {turn}: {turns} (remem sessions turns)")


def _boundary(turns: Sequence[TurnBounds], at_seq: int | None) -> int:
    ended = [i for i, t in enumerate(turns) if t.endSeq is not None]
    if at_seq is None:
        if not ended:
            raise OperationError("OPEN_TURN", "the session has no completed turn to branch from yet")
        return ended[-1]
    for i in ended:
        end = turns[i].endSeq
        if end is not None and end >= at_seq:
            return i
    raise OperationError(
        "OPEN_TURN", f"seq {at_seq} is inside a turn that has not ended; branch from an earlier turn or wait"
    )
