"""Per-log projection for listings: title, turns with their seq ranges and status, seed end.

The projection folds events one at a time and is a pydantic model, so the derived index can
store it and continue it with only the events a later append added.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from pydantic import BaseModel, Field

from ..protocol.sessions import OPEN, TurnSummary
from .models import SessionEvent, Skimmed

USER_PREVIEW_CHARS = 120


class TurnBounds(NamedTuple):
    """A turn's number and seq range: all a fork's cut needs, cheap to load for 10 000 turns."""

    turn: int
    startSeq: int
    endSeq: int | None


class Projection(BaseModel):
    title: str | None = None
    turns: list[TurnSummary] = Field(default_factory=list)
    seedEnd: int | None = None
    lastSeq: int = -1
    pendingUser: str = ""  # a human prompt queued before its turn/start

    def fold(self, events: Iterable[SessionEvent | Skimmed]) -> Projection:
        # `lastSeq` is stored once, not per event: a pydantic attribute write costs more than
        # the rest of the loop. The `finally` keeps it as exact as before if a handler raises.
        handlers = _HANDLERS
        last: SessionEvent | Skimmed | None = None
        try:
            for last in events:
                handler = handlers.get(last.type)
                if handler is not None:
                    handler(self, last.seq, last.data)
        finally:
            if last is not None:
                self.lastSeq = last.seq
        return self

    def tail(self) -> Projection:
        """This projection with only its last turn: all a later fold can still change."""
        return self.model_copy(update={"turns": self.turns[-1:]})

    @property
    def open_turn(self) -> int | None:
        return self.turns[-1].turn if self.turns and self.turns[-1].status == OPEN else None

    def fork_turn(self, seed_length: int | None) -> int | None:
        """The last turn a fork child inherited: the last turn that ended before its seed end."""
        if seed_length is None:
            return None
        ended = [t.turn for t in self.turns if t.endSeq is not None and t.endSeq < seed_length]
        return ended[-1] if ended else None


def _turn_start(p: Projection, seq: int, data: Any) -> None:
    number = data.get("turn") if isinstance(data, dict) else None
    turn = number if isinstance(number, int) else len(p.turns) + 1
    p.turns.append(TurnSummary(turn=turn, startSeq=seq, user=p.pendingUser))
    if p.pendingUser:  # a pydantic attribute write costs more than the rest of this
        p.pendingUser = ""


def _turn_end(p: Projection, seq: int, data: Any) -> None:
    if not p.turns or p.turns[-1].status != OPEN:
        return  # an end without a start: DSH's checks reject it before a projection sees it
    reason = data.get("reason") if isinstance(data, dict) else None
    kind = reason.get("kind") if isinstance(reason, dict) else None
    p.turns[-1].endSeq = seq
    p.turns[-1].status = kind if isinstance(kind, str) else "completed"


def _title(p: Projection, seq: int, data: Any) -> None:
    title = data.get("title") if isinstance(data, dict) else None
    if isinstance(title, str):
        p.title = title


def _end_seed(p: Projection, seq: int, data: Any) -> None:
    p.seedEnd = seq


def _user_message(p: Projection, seq: int, data: Any) -> None:
    text = human_text(data)
    if not text:
        return
    if p.turns and p.turns[-1].status == OPEN:
        if not p.turns[-1].user:
            p.turns[-1].user = text
    elif not p.pendingUser:
        p.pendingUser = text


def human_text(message: Any) -> str:
    """First non-blank line of a real human prompt (`source.kind == "user"`), else ''."""
    if not isinstance(message, dict):
        return ""
    source = message.get("source")
    if not isinstance(source, dict) or source.get("kind") != "user":
        return ""
    for block in message.get("content") or []:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            for line in block["text"].splitlines():
                if line.strip():
                    return line.strip()[:USER_PREVIEW_CHARS]
    return ""


_HANDLERS = {
    "turn/start": _turn_start,
    "turn/end": _turn_end,
    "session/title": _title,
    "session/end-seed": _end_seed,
    "user/message": _user_message,
}
# The event types whose payload a projection reads: what a skimming read must keep.
PROJECTED_TYPES = frozenset(_HANDLERS)
