"""Header and envelope schemas: DSH's key order, JS number rules, strict envelopes."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from remem.daemon.sessions.models import SessionEvent, SessionHeader, parse_json_int


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
