"""Header and envelope schemas: DSH's key order, JS number rules, strict envelopes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from remem.daemon.sessions.models import (
    EnvelopeError,
    SessionEvent,
    SessionHeader,
    event_from_record,
    parse_json_int,
)


def test_header_key_order_and_omitted_optionals() -> None:
    header = SessionHeader(
        id="s",
        createdAt=5,
        cwd="/w",
        parentSession="p",
        seedLength=3,
        origin="subagent",
        delegationDepth=1,
        agentPreset="x",
    )
    assert list(header.to_record()) == [
        "type",
        "version",
        "id",
        "createdAt",
        "cwd",
        "parentSession",
        "seedLength",
        "origin",
        "delegationDepth",
        "agentPreset",
    ]
    assert SessionHeader(id="s", createdAt=5).to_record() == {
        "type": "session",
        "version": 0,
        "id": "s",
        "createdAt": 5,
        "delegationDepth": 0,
    }


def test_header_drops_unknown_keys_and_accepts_integral_floats() -> None:
    header = SessionHeader.model_validate({"id": "s", "createdAt": 7.0, "delegationDepth": 0, "futureKey": 1})
    assert header.createdAt == 7 and "futureKey" not in header.to_record()


@pytest.mark.parametrize(
    "created_at",
    ["-0", "-1", "1.5", "9007199254740992", "true", '"5"'],
)
def test_header_refuses_bad_created_at(created_at: str) -> None:
    record = json.loads(
        f'{{"id":"s","createdAt":{created_at},"delegationDepth":0}}', parse_int=parse_json_int
    )
    with pytest.raises(ValidationError, match="createdAt"):
        SessionHeader.model_validate(record)


def test_header_origin_only_subagent() -> None:
    with pytest.raises(ValidationError, match="origin"):
        SessionHeader(id="s", createdAt=1, origin="fork")


def test_event_record_key_order_and_passthrough() -> None:
    event = SessionEvent.model_validate(
        {
            "surfaceOp": "append",
            "sourceEventSeqs": [1],
            "data": {"z": [1, {"u": None}]},
            "time": -4,
            "seq": 2,
            "type": "x/y",
        }
    )
    assert list(event.to_record()) == ["type", "seq", "time", "data", "sourceEventSeqs", "surfaceOp"]
    assert event.to_record()["data"] == {"z": [1, {"u": None}]}


@pytest.mark.parametrize(
    "patch",
    [
        {"extra": 1},
        {"ignorable": False},
        {"seq": -1},
        {"seq": 2**53},
        {"time": 0.5},
        {"surfaceOp": {"op": "replace", "start": 0}},
        {"surfaceOp": {"op": "replace", "start": 0, "end": 1, "x": 1}},
        {"surfaceOp": "prepend"},
    ],
)
def test_event_envelope_is_strict(patch: dict) -> None:
    with pytest.raises(ValidationError):
        SessionEvent.model_validate({"type": "t", "seq": 0, "time": 0, "data": {}, **patch})


_json_number = st.one_of(
    st.integers(-(2**54), 2**54), st.floats(allow_nan=False, allow_infinity=False), st.booleans()
)
_envelope_value = st.one_of(st.none(), _json_number, st.text(max_size=3), st.lists(_json_number, max_size=3))
_surface_op = st.one_of(
    st.sampled_from(["append", "prepend", None]),
    st.fixed_dictionaries(
        {"op": st.sampled_from(["replace", "x"]), "start": _json_number, "end": _json_number}
    ),
)


@given(
    st.fixed_dictionaries(
        {
            "type": st.one_of(st.sampled_from(["t", ""]), _envelope_value),
            "seq": _json_number,
            "time": _json_number,
        },
        optional={
            "data": _envelope_value,
            "surfaceOp": _surface_op,
            "sourceEventSeqs": st.one_of(st.none(), st.lists(_json_number, max_size=4)),
            "ignorable": st.one_of(st.just(True), _envelope_value),
            "extra": st.none(),
        },
    )
)
def test_hand_checked_envelope_agrees_with_the_model(record: dict) -> None:
    try:
        expected = SessionEvent.model_validate(record)
    except ValidationError:
        expected = None
    try:
        event = event_from_record(record)
    except EnvelopeError:
        # Stricter only where DSH is: `ignorable` must be the literal true.
        assert expected is None or record.get("ignorable") not in (None, True)
        return
    assert expected is not None
    assert event == expected and event.model_fields_set == expected.model_fields_set
    assert event.to_record() == expected.to_record()


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"type": "t", "seq": 0, "time": 0}, r"\['data'\]: required"),
        ({"type": "t", "seq": 0, "time": 0, "data": {}, "x": 1}, r"\['x'\]: extra keys"),
        ({"type": ["t"], "seq": 0, "time": 0, "data": {}}, "type: must be a non-empty string"),
        ({"type": "t", "seq": -1, "time": 0, "data": {}}, "seq: must be non-negative"),
        ({"type": "t", "seq": 0, "time": 2**53, "data": {}}, "time: must be a safe integer"),
        ({"type": "t", "seq": 0, "time": 0, "data": {}, "ignorable": 1}, "ignorable: must be true"),
        ({"type": "t", "seq": 0, "time": 0, "data": {}, "sourceEventSeqs": [0, True]}, "sourceEventSeqs.1"),
        ({"type": "t", "seq": 0, "time": 0, "data": {}, "sourceEventSeqs": 3}, "sourceEventSeqs: must be"),
        ({"type": "t", "seq": 0, "time": 0, "data": {}, "surfaceOp": ["append"]}, "surfaceOp: must be"),
        ({"type": "t", "seq": 0, "time": 0, "data": {}, "surfaceOp": {"op": "replace", "start": 0}}, "end"),
    ],
)
def test_hand_checked_envelope_names_the_field(record: dict, message: str) -> None:
    with pytest.raises(EnvelopeError, match=message):
        event_from_record(record)


def test_hand_built_event_is_a_frozen_model() -> None:
    event = event_from_record({"type": "t", "seq": 1, "time": 2.0, "data": {"a": 1}})
    assert event.time == 2 and type(event.time) is int and event.model_dump()["data"] == {"a": 1}
    with pytest.raises(ValidationError):
        event.seq = 5
