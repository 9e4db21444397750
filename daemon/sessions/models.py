"""Schemas of a DSH session log line: the header record and the event envelope.

Numbers follow JavaScript semantics because DSH validates with `Number.isSafeInteger`: an
integral float such as `3.0` is the integer 3, `-0` is refused where DSH refuses it. Event
`data` stays a plain JSON value so unknown event types and fields pass through untouched.

`event_from_record` is the reader's path: the same envelope rules checked by hand, because
pydantic validation (and even `model_construct`) costs more per event than parsing its JSON.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Final, Literal, NamedTuple

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from ..validation import problems as validation_problems

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
# `BaseModel`'s slot setters, bound once: the cheapest way to fill a model without validation.
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
# The fields set of every event that carries exactly the four required keys. Shared: the model
# is frozen, so pydantic never adds to it, and `model_copy` copies it before an update.
_ENVELOPE_FIELDS_SET = set(_REQUIRED_KEYS)


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
        problems = validation_problems(exc)
        raise EnvelopeError(f"surfaceOp: {problems}") from None


def _construct(values: dict[str, Any], fields_set: set[str]) -> SessionEvent:
    # Exactly what `model_construct` stores, without its per-field loop (9 µs per event).
    event = _new_object(SessionEvent)
    _set_dict(event, values)
    _set_fields_set(event, fields_set)
    _set_extra(event, None)
    _set_private(event, None)
    return event


def chunk_events(
    seq0: int,
    times: list[int],
    turn: Any,
    step: Any,
    head: dict[str, Any],
    member_key: str,
    members: list[str],
) -> list[SessionEvent]:
    """The `assistant/chunk` events of a decoded packed row, built without per-event checks.

    Member k is `{type: "assistant/chunk", seq: seq0 + k, time: times[k], data: {turn, step,
    chunk: {**head, member_key: members[k]}}}`. Only for a row already known valid: `seq0` a
    non-negative safe integer, the times safe integers, as many times as members.
    """
    events: list[SessionEvent] = []
    append = events.append
    seq = seq0
    if member_key == "text" and len(head) == 2:  # text and reasoning deltas: `{type, index, text}`
        chunk_type, index = head["type"], head["index"]
        chunks = [{"type": chunk_type, "index": index, "text": member} for member in members]
    else:
        chunks = [{**head, member_key: member} for member in members]
    for time, chunk in zip(times, chunks, strict=True):
        event = _new_object(SessionEvent)
        _set_dict(
            event,
            {
                "type": "assistant/chunk",
                "seq": seq,
                "time": time,
                "data": {"turn": turn, "step": step, "chunk": chunk},
                "surfaceOp": None,
                "sourceEventSeqs": None,
                "ignorable": None,
            },
        )
        _set_fields_set(event, _ENVELOPE_FIELDS_SET)
        _set_extra(event, None)
        _set_private(event, None)
        append(event)
        seq += 1
    return events


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


_ENVELOPE_ORDER = ("type", "seq", "time", "data")
_ABSENT_OPTIONALS = {"surfaceOp": None, "sourceEventSeqs": None, "ignorable": None}


def adopt_bare_record(record: dict[str, Any]) -> SessionEvent | None:
    """`event_from_record(record, adopt=True)` for the record DSH writes most, else None.

    That record has exactly `type, seq, time, data` in this order, a non-empty string type,
    and plain integers in range for seq and time. Any other record is left untouched for
    `event_from_record`, which knows every rule and its error.
    """
    seq, time, kind = record.get("seq"), record.get("time"), record.get("type")
    if (
        seq.__class__ is int
        and time.__class__ is int
        and kind.__class__ is str
        and kind
        and 0 <= seq <= MAX_SAFE_INTEGER
        and -MAX_SAFE_INTEGER <= time <= MAX_SAFE_INTEGER
        and tuple(record) == _ENVELOPE_ORDER
    ):
        record.update(_ABSENT_OPTIONALS)
        return _construct(record, _ENVELOPE_FIELDS_SET)
    return None


def event_from_record(record: dict[str, Any], *, adopt: bool = False) -> SessionEvent:
    """`SessionEvent.model_validate(record)` for a JSON record, checked by hand.

    Same rules as the model, except that `ignorable` must be exactly `true` (pydantic's lax
    mode would also take `1`, which DSH refuses). Raises `EnvelopeError`.

    `adopt` hands the record over to the event: when it already holds exactly the event's
    values (the four required keys in field order, integer seq and time, as DSH writes
    them), it becomes the event's `__dict__`, gaining the absent optional fields, instead of
    being copied. The caller must not use the record afterwards.
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
    plain = len(record) == len(_REQUIRED_KEYS)  # all four are present, so there is no other key
    if plain and adopt:
        event = adopt_bare_record(record)  # the record, once it holds exactly `values` below
        if event is not None:
            return event
    values = {
        "type": kind,
        "seq": seq,
        "time": time,
        "data": data,
        "surfaceOp": None,
        "sourceEventSeqs": None,
        "ignorable": None,
    }
    if plain:
        return _construct(values, _ENVELOPE_FIELDS_SET)
    _check_keys(record.keys())
    _optional_fields(record, values)
    return _construct(values, set(record))


class Skimmed(NamedTuple):
    """A checked event of `BARE_TYPES` whose payload a skimming reader was told not to keep.

    `data` is decoded only for the types the caller keeps (None otherwise): what a listing's
    projection reads, without building the payloads it never looks at.
    """

    type: str
    seq: int
    data: Any
