"""Where a fork cuts its source, resolved exactly like DSH's Host `session.fork`.

The boundary is the first `turn/end` at or after the anchor (no anchor: the last one); the
cut then extends over everything up to the next `turn/start` (titles, idle injections,
standalone compactions), so a child never starts in the middle of between-turn bookkeeping.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..sessions.errors import OperationError
from ..sessions.models import SessionEvent


@dataclass(frozen=True)
class Cut:
    seed_length: int  # events[:seed_length] become the child's seed
    fork_turn: int  # the turn whose end the cut follows


def resolve_cut(events: Sequence[SessionEvent], at_seq: int | None) -> Cut:
    if at_seq is not None and at_seq < 0:
        raise OperationError("INVALID_ANCHOR", f"--at must be a non-negative event seq, not {at_seq}")
    ends = [e for e in events if e.type == "turn/end"]
    boundary = _boundary(events, ends, at_seq)
    cut = boundary.seq + 1
    while cut < len(events) and events[cut].type != "turn/start":
        cut += 1
    turn = boundary.data.get("turn") if isinstance(boundary.data, dict) else None
    return Cut(seed_length=cut, fork_turn=turn if isinstance(turn, int) else len(ends))


def _boundary(events: Sequence[SessionEvent], ends: list[SessionEvent], at_seq: int | None) -> SessionEvent:
    last_seq = events[-1].seq if events else -1
    if at_seq is None or at_seq > last_seq:
        if not ends:
            raise OperationError("OPEN_TURN", "the session has no completed turn to branch from yet")
        return ends[-1]
    following = next((e for e in ends if e.seq >= at_seq), None)
    if following is None:
        raise OperationError(
            "OPEN_TURN",
            f"seq {at_seq} is inside a turn that has not ended; branch from an earlier turn or wait",
        )
    return following
