"""Schemas of a DSH session log line: the header record and the event envelope.

Numbers follow JavaScript semantics because DSH validates with `Number.isSafeInteger`: an
integral float such as `3.0` is the integer 3, `-0` is refused where DSH refuses it. Event
`data` stays a plain JSON value so unknown event types and fields pass through untouched.

`event_from_record` is the reader's path: the same envelope rules checked by hand, because
pydantic validation (and even `model_construct`) costs more per event than parsing its JSON.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

MAX_SAFE_INTEGER = 2**53 - 1
SESSION_FORMAT_VERSION: Final = 0
RETIRED_HEADER_KEYS = ("sandboxMode", "approvalPolicy")
SURFACE_TYPES = frozenset({"user/message", "assistant/message", "tool/result"})


class EnvelopeError(ValueError):
    """A record whose event envelope breaks a rule; the message starts with the field."""


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


_INTS_ONLY = frozenset({int})


def all_safe_ints(values: list[Any]) -> bool:
    """Every item is a plain safe integer; one C-level pass per property, for long lists."""
    return not values or (
        set(map(type, values)) == _INTS_ONLY
        and min(values) >= -MAX_SAFE_INTEGER
        and max(values) <= MAX_SAFE_INTEGER
    )


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


EVENT_KEYS = frozenset(SessionEvent.model_fields)
_REQUIRED_KEYS = frozenset({"type", "seq", "time", "data"})
_new_object = object.__new__
_set_slot = object.__setattr__


def _checked_int(key: str, value: Any, *, negative: bool) -> int:
    """The slow path of an integer field: JS number rules, or an `EnvelopeError` naming `key`."""
    try:
        number = _safe_int(value)
        return number if negative else _non_negative(number)
    except ValueError as exc:
        raise EnvelopeError(f"{key}: {exc}") from None


def _source_seqs(value: Any) -> list[int] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise EnvelopeError("sourceEventSeqs: must be a list of integers")
    if not all_safe_ints(value) or (value and min(value) < 0):
        return [_checked_int(f"sourceEventSeqs.{i}", s, negative=False) for i, s in enumerate(value)]
    return value


def _surface_op(value: Any) -> str | ReplaceOp | None:
    if value is None or value == "append":
        return value
    if not isinstance(value, dict):
        raise EnvelopeError("surfaceOp: must be 'append' or {op: 'replace', start, end}")
    try:
        return ReplaceOp.model_validate(value)  # rare enough that pydantic's cost does not matter
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise EnvelopeError(f"surfaceOp: {problems}") from None


def _construct(values: dict[str, Any], fields_set: set[str]) -> SessionEvent:
    # Exactly what `model_construct` stores, without its per-field loop (9 µs per event).
    event = _new_object(SessionEvent)
    _set_slot(event, "__dict__", values)
    _set_slot(event, "__pydantic_fields_set__", fields_set)
    _set_slot(event, "__pydantic_extra__", None)
    _set_slot(event, "__pydantic_private__", None)
    return event


def _check_keys(keys: Any) -> None:
    if not keys <= EVENT_KEYS:
        raise EnvelopeError(f"{sorted(keys - EVENT_KEYS)}: extra keys are not permitted")
    if not keys >= _REQUIRED_KEYS:
        raise EnvelopeError(f"{sorted(_REQUIRED_KEYS - keys)}: required")


def _optional_fields(record: dict[str, Any], values: dict[str, Any]) -> None:
    ignorable = record.get("ignorable")
    if ignorable is not None and ignorable is not True:
        raise EnvelopeError("ignorable: must be true when present")
    values["surfaceOp"] = _surface_op(record.get("surfaceOp"))
    values["sourceEventSeqs"] = _source_seqs(record.get("sourceEventSeqs"))
    values["ignorable"] = ignorable


def event_from_record(record: dict[str, Any]) -> SessionEvent:
    """`SessionEvent.model_validate(record)` for a JSON record, checked by hand.

    Same rules as the model, except that `ignorable` must be exactly `true` (pydantic's lax
    mode would also take `1`, which DSH refuses). Raises `EnvelopeError`.
    """
    try:
        kind, seq, time, data = record["type"], record["seq"], record["time"], record["data"]
    except KeyError:
        _check_keys(record.keys())
        raise
    if not isinstance(kind, str) or not kind:
        raise EnvelopeError("type: must be a non-empty string")
    if type(seq) is not int or not 0 <= seq <= MAX_SAFE_INTEGER:
        seq = _checked_int("seq", seq, negative=False)
    if type(time) is not int or not -MAX_SAFE_INTEGER <= time <= MAX_SAFE_INTEGER:
        time = _checked_int("time", time, negative=True)
    values = {
        "type": kind,
        "seq": seq,
        "time": time,
        "data": data,
        "surfaceOp": None,
        "sourceEventSeqs": None,
        "ignorable": None,
    }
    if len(record) != len(_REQUIRED_KEYS):  # all four are present, so only surplus keys remain
        _check_keys(record.keys())
        _optional_fields(record, values)
    return _construct(values, set(record))
