"""The reader's fast paths build exactly the events the full checks would, and defer every failure.

Packed rows expand straight to checked events, bare records of `BARE_TYPES` are checked by the
scanner, and records may be adopted as their event's `__dict__`; each must agree with the
reference path (expand to records, upgrade, `check_event`) down to field order and fields set.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remem.daemon.sessions.checks import BARE_TYPES, EventCheckError, check_event, checked_bare_event
from remem.daemon.sessions.chunks import ROW_TAGS, ChunkRowError, expand_row, expand_row_events
from remem.daemon.sessions.errors import SessionLogError
from remem.daemon.sessions.models import EnvelopeError, SessionEvent, event_from_record
from remem.daemon.sessions.projection import Projection
from remem.daemon.sessions.reader import read_session
from remem.daemon.sessions.upgrades import UPGRADED_TYPES, LegacyUpgrader
from remem.daemon.sessions.vocabulary import KNOWN_EVENT_TYPES
from remem.daemon.sessions.zstd_frames import encode_frame

from .logs import event, factory_batches, header, line, lines, place, raw_log, turn_events, zstd_log

_MAX = 2**53 - 1


def _assert_same(fast: SessionEvent, reference: SessionEvent) -> None:
    assert fast == reference
    assert fast.model_fields_set == reference.model_fields_set
    # `model_dump` follows `__dict__` order, so an adopted record must hold the fields in order.
    assert fast.model_dump_json() == reference.model_dump_json()
    assert list(fast.__dict__) == list(reference.__dict__)


def _reference_events(body: bytes, session_id: str = "s1") -> list[SessionEvent]:
    """The slow path: every line parsed, rows expanded to records, each upgraded and checked."""
    upgrade = LegacyUpgrader(session_id).upgrade
    events = []
    for raw in body.splitlines():
        record = json.loads(raw)
        for member in expand_row(record) if record["type"] in ROW_TAGS else [record]:
            events.append(check_event(upgrade(member)))
    return events


def test_realistic_log_reads_exactly_as_the_reference_path(tmp_path: Path) -> None:
    body = b"".join(factory_batches(seed=5, turns=6))
    assert b"-chunks" in body  # packed rows, bare records and surface events all occur
    log = read_session(raw_log(tmp_path, body))
    reference = _reference_events(body)
    assert len(log.events) == len(reference)
    for fast, slow in zip(log.events, reference, strict=True):
        _assert_same(fast, slow)


_int_like = st.one_of(
    st.integers(min_value=-3, max_value=5),
    st.sampled_from([_MAX, _MAX + 1, -_MAX, -_MAX - 1, 2.0, 2.5, True, False, -0.0]),
    st.sampled_from(["1", None, [1]]),
)


@st.composite
def _rows(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(sorted(ROW_TAGS)))
    count = draw(st.integers(min_value=0, max_value=5))
    members = draw(st.lists(st.one_of(st.text(max_size=3), st.just(1)), min_size=count, max_size=count))
    data: dict[str, Any] = {
        "turn": draw(_int_like),
        "step": draw(_int_like),
        "index": draw(_int_like),
        "dt": draw(st.lists(_int_like, min_size=max(count - 1, 0), max_size=count)),
    }
    if kind == "tool-call-chunks":
        data["id"] = draw(st.one_of(st.just("c1"), st.just(3)))
        if draw(st.booleans()):
            data["name"] = draw(st.one_of(st.just("bash"), st.just(None)))
        data["args"] = members
    else:
        data["texts"] = members
    seq0 = draw(st.one_of(st.integers(min_value=0, max_value=10), _int_like))
    return {"type": kind, "seq0": seq0, "time0": draw(_int_like), "data": data}


@given(_rows())
def test_expanded_row_events_are_the_checked_records(row: dict[str, Any]) -> None:
    try:
        records = expand_row(copy.deepcopy(row))
    except ChunkRowError as exc:
        with pytest.raises(ChunkRowError) as caught:
            expand_row_events(row)
        assert str(caught.value) == str(exc)
        return
    events = expand_row_events(row)
    if row["seq0"] < 0:  # the scanner's seq-gap rule refuses these rows (tested below)
        return
    assert len(events) == len(records)
    for fast, record in zip(events, records, strict=True):
        _assert_same(fast, check_event(record))


def test_row_with_negative_seq0_ends_the_committed_prefix(tmp_path: Path) -> None:
    row = {"type": "text-chunks", "seq0": -1, "time0": 0, "data": {"turn": 1, "step": 1, "index": 0}}
    row["data"].update({"dt": [1], "texts": ["a", "b"]})
    log = read_session(raw_log(tmp_path, lines(turn_events()[:3]) + line(row)))
    assert len(log.events) == 3
    assert log.torn is not None and "seq gap (expected seq 3, found -1)" in log.torn.reason


_kinds = st.sampled_from(
    sorted(BARE_TYPES)[:6] + sorted(UPGRADED_TYPES) + ["request/header", "mode/set", "x/custom", ""]
)
_keys = st.sampled_from(["type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable", "x"])


@st.composite
def _records(draw: st.DrawFn) -> dict[str, Any]:
    values = {
        "type": draw(st.one_of(_kinds, st.just(["step/start"]), st.just(None))),
        "seq": draw(_int_like),
        "time": draw(st.one_of(st.integers(min_value=-_MAX, max_value=_MAX), _int_like)),
        "data": draw(st.one_of(st.just({"turn": 1}), st.just({"turn": 1, "reason": {"kind": "disposed"}}))),
        "surfaceOp": "append",
        "sourceEventSeqs": [],
        "ignorable": True,
        "x": 1,
    }
    order = draw(st.lists(_keys, unique=True, min_size=3, max_size=6))
    if draw(st.booleans()):
        order = ["type", "seq", "time", "data"]
    return {key: values[key] for key in order}


@given(_records())
def test_scanner_checked_records_agree_with_the_full_checks(record: dict[str, Any]) -> None:
    pristine = copy.deepcopy(record)
    try:
        reference = check_event(LegacyUpgrader("s1").upgrade(copy.deepcopy(record)))
    except EventCheckError:
        reference = None
    fast = checked_bare_event(record)
    if fast is None:
        assert record == pristine and list(record) == list(pristine)  # left for the full path
        return
    assert reference is not None and fast.type in KNOWN_EVENT_TYPES
    _assert_same(fast, reference)


@given(_records())
def test_adopting_a_record_changes_nothing_but_the_copy(record: dict[str, Any]) -> None:
    try:
        reference = event_from_record(copy.deepcopy(record))
    except EnvelopeError as exc:
        with pytest.raises(EnvelopeError) as caught:
            event_from_record(record, adopt=True)
        assert str(caught.value) == str(exc)
        return
    _assert_same(event_from_record(record, adopt=True), reference)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"time": 2**53}, "event seq 3: bad event envelope \\(time: must be a safe integer\\)"),
        ({"time": 1.5}, "event seq 3: bad event envelope \\(time: must be an integer\\)"),
        ({"type": ""}, "event seq 3: bad event envelope \\(type: must be a non-empty string\\)"),
    ],
)
def test_a_bare_record_that_fails_is_reported_as_before(tmp_path: Path, bad: dict, message: str) -> None:
    body = lines(turn_events()[:3]) + line({**event(3, "step/start", {"turn": 1, "step": 2}), **bad})
    with pytest.raises(SessionLogError, match=message):
        read_session(raw_log(tmp_path, body))


def test_scan_and_header_errors_still_win_over_event_check_errors(tmp_path: Path) -> None:
    bad = line(event(0, "step/start", {"turn": 1}, surfaceOp="append"))
    # A damaged complete frame after the bad event: the frame is reported, as before.
    path = zstd_log(tmp_path, [bad, lines(turn_events(1))])
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x55  # the last frame's content checksum
    path.write_bytes(bytes(data))
    with pytest.raises(SessionLogError, match="frame 2 .* damaged"):
        read_session(path)
    path.write_bytes(path.read_bytes()[: -len(encode_frame(lines(turn_events(1))))])
    with pytest.raises(SessionLogError, match="only surface events"):
        read_session(path)
    # A bad header is reported before the bad event, too.
    path = place(tmp_path / "h", "s1", line({**header(), "createdAt": -5}) + bad)
    with pytest.raises(SessionLogError, match="createdAt"):
        read_session(path)


def test_unknown_types_are_reported_whichever_path_checked_them(tmp_path: Path) -> None:
    body = lines(turn_events()[:3]) + line(event(3, "x/custom", {}, ignorable=True))
    body += line(event(4, "y/custom", {}))
    log = read_session(raw_log(tmp_path, body))
    assert log.unknown_types == {"x/custom", "y/custom"}


def test_turn_end_without_a_legacy_reason_is_not_copied() -> None:
    record = event(3, "turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    assert LegacyUpgrader("s1").upgrade(record) is record


def test_fold_records_the_last_seq_once() -> None:
    assert Projection().fold([]).lastSeq == -1
    events = [check_event(r) for r in turn_events()]
    folded = Projection().fold(events)
    assert folded.lastSeq == events[-1].seq and "lastSeq" in folded.model_fields_set
    assert Projection().fold(iter(events)) == folded
