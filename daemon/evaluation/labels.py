"""What one evaluation case is: a scripted session, the memory before it, and its grading key.

The key says what an ideal review keeps (facts), updates or deletes (stale records), and must
not contain (noise, secrets), each with the turns that justify it. `ideal` is one proposal that
satisfies the key; the scorer never compares against it, it grades against the key, so any
wording that carries the same facts scores the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..protocol.memory import Record
from ..sessions.scripted import ScriptedTurn


@dataclass(frozen=True)
class Fact:
    """A durable fact planted in the session: a good proposal keeps it, in any words.

    `terms` are its key terms; `turns` the turns (1-based, as the evidence numbers them) a
    change keeping it may cite."""

    id: str
    kind: Literal["preference", "convention", "command", "decision", "reference"]
    terms: tuple[str, ...]
    turns: tuple[int, ...]


@dataclass(frozen=True)
class Stale:
    """An existing record the session contradicts: delete it, or put it again as `replaced_by`."""

    record: str
    turns: tuple[int, ...]
    replaced_by: str | None = None  # a Fact id: an updated put of the same name that keeps it


@dataclass(frozen=True)
class Noise:
    """Something a good proposal leaves out: a one-off detail, a guess, what the code says."""

    id: str
    kind: Literal["one-off", "obvious", "guess", "ephemeral"]
    terms: tuple[str, ...]


@dataclass(frozen=True)
class IdealChange:
    """One change of the ideal proposal: `put` (record), `delete` (name) or `replace-global` (text)."""

    action: Literal["put", "delete", "replace-global"]
    turns: tuple[int, ...]
    record: Record | None = None
    name: str | None = None
    text: str | None = None


@dataclass(frozen=True)
class Case:
    """One session to review, the memory it is reviewed against, and how to grade the review.

    Turn numbers in the key count the scripted `turns` (1-based). `filler` > 0 pads the session
    with one-off turns, after scripted turn `filler_after`, until the review input is about that
    fraction of `consolidation.max_input_bytes`; the session's own turn numbers then differ from
    the scripted ones, which is why a generated session reports each scripted turn's range."""

    name: str
    summary: str
    turns: tuple[ScriptedTurn, ...]
    facts: tuple[Fact, ...] = ()
    stale: tuple[Stale, ...] = ()
    noise: tuple[Noise, ...] = ()
    secrets: tuple[str, ...] = ()
    records: tuple[Record, ...] = ()
    global_text: str = ""
    ideal: tuple[IdealChange, ...] = ()
    filler: float = 0.0
    filler_after: int = 0
    seed: int = 0

    @property
    def expects_change(self) -> bool:
        return bool(self.facts or self.stale)
