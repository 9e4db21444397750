"""Schemas of a DSH session log line: the header record and the event envelope.

Numbers follow JavaScript semantics because DSH validates with `Number.isSafeInteger`: an
integral float such as `3.0` is the integer 3, `-0` is refused where DSH refuses it. Event
`data` stays a plain JSON value so unknown event types and fields pass through untouched.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

MAX_SAFE_INTEGER = 2**53 - 1
SESSION_FORMAT_VERSION: Final = 0
RETIRED_HEADER_KEYS = ("sandboxMode", "approvalPolicy")
SURFACE_TYPES = frozenset({"user/message", "assistant/message", "tool/result"})


class NegativeZero(float):
    """What `-0` in JSON text parses to, so a field that refuses -0 can tell it from 0."""


def parse_json_int(text: str) -> int | float:
    """`parse_int` hook for `json.loads`: keeps `-0` distinguishable, as JS does."""
    return NegativeZero(-0.0) if text == "-0" else int(text)


def _safe_int(value: Any, *, allow_negative_zero: bool = True) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("must be an integer")
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise ValueError("must be an integer")
        if not allow_negative_zero and math.copysign(1.0, value) < 0 and value == 0:
            raise ValueError("must not be -0")
        value = int(value)
    if abs(value) > MAX_SAFE_INTEGER:
        raise ValueError("must be a safe integer")
    return value


def _non_negative(value: int) -> int:
    if value < 0:
        raise ValueError("must be non-negative")
    return value


SafeInt = Annotated[int, BeforeValidator(_safe_int)]
NonNegativeInt = Annotated[int, BeforeValidator(lambda v: _non_negative(_safe_int(v)))]
Timestamp = Annotated[int, BeforeValidator(lambda v: _non_negative(_safe_int(v, allow_negative_zero=False)))]


class SessionHeader(BaseModel):
    """The first line of every log. Field order is the order DSH's `toHeaderLine` writes."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    type: Literal["session"] = "session"
    version: Literal[0] = SESSION_FORMAT_VERSION
    id: str = Field(min_length=1)
    createdAt: Timestamp
    cwd: str | None = Field(default=None, min_length=1)
    parentSession: str | None = None
    seedLength: NonNegativeInt | None = None
    origin: Literal["subagent"] | None = None
    delegationDepth: NonNegativeInt = 0
    agentPreset: str | None = None

    def to_record(self) -> dict[str, Any]:
        """The header as DSH writes it: absent optionals omitted, never null."""
        return self.model_dump(exclude_none=True)


class ReplaceOp(BaseModel):
    """A surface replacement: `start`/`end` are event seqs of current surface nodes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    op: Literal["replace"]
    start: NonNegativeInt
    end: NonNegativeInt


class SessionEvent(BaseModel):
    """One logical event. Unknown `type`s and `data` shapes are kept verbatim."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str = Field(min_length=1)
    seq: NonNegativeInt
    time: SafeInt
    data: Any
    surfaceOp: Literal["append"] | ReplaceOp | None = None
    sourceEventSeqs: list[NonNegativeInt] | None = None
    ignorable: Literal[True] | None = None

    def to_record(self) -> dict[str, Any]:
        """Key order of DSH's live appends: type, seq, time, data, sourceEventSeqs?, surfaceOp?."""
        record: dict[str, Any] = {"type": self.type, "seq": self.seq, "time": self.time, "data": self.data}
        if self.sourceEventSeqs is not None:
            record["sourceEventSeqs"] = list(self.sourceEventSeqs)
        if self.surfaceOp is not None:
            record["surfaceOp"] = (
                self.surfaceOp if isinstance(self.surfaceOp, str) else self.surfaceOp.model_dump()
            )
        if self.ignorable:
            record["ignorable"] = True
        return record
