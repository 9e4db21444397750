"""A skimming read checks exactly what a full read checks, and projects to the same listing.

`skim_session` leaves the payloads of bare events unbuilt (msgspec `Raw`), so it must accept
exactly the logs `read_session` accepts, refuse the others with the same message, and give
the same projection, resume point, digest and revision. Each test compares the two on the
same bytes, on realistic logs and on every way a bare line can be bent. A skimming read proves
most lines by per-type structs decoded a window at a time (`envelopes`), so every rule those
structs and their judges carry is bent here too, in the middle of a log and at its end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from remem.daemon.sessions.checks import BARE_TYPES
from remem.daemon.sessions.errors import SessionLogError
from remem.daemon.sessions.models import Skimmed
from remem.daemon.sessions.projection import PROJECTED_TYPES, Projection
from remem.daemon.sessions.reader import read_appended, read_session, skim_session
from remem.daemon.sessions.upgrades import LegacyUpgrader, upgrades

from .logs import factory_batches, line, lines, raw_log, turn_events, zstd_log


def _outcome(read: object, path: Path) -> object:
    """What a listing learns from a read of `path`: its projection and identity, or the error."""
    try:
        log = read(path)  # type: ignore[operator]
    except SessionLogError as exc:
        return ("refused", exc.reason)
    projection = Projection().fold(log.events)
    return (projection.model_dump(), log.resume, log.digest, log.digest_state, log.revision, log.header)


def _assert_agree(path: Path) -> object:
    full = _outcome(read_session, path)
    assert _outcome(lambda p: skim_session(p, PROJECTED_TYPES), path) == full
    return full


@pytest.mark.parametrize("encoding", ["raw", "zstd"])
def test_a_realistic_log_skims_to_the_same_listing(tmp_path: Path, encoding: str) -> None:
    batches = factory_batches(seed=5, turns=6)
    path = raw_log(tmp_path, b"".join(batches)) if encoding == "raw" else zstd_log(tmp_path, batches)
    outcome = _assert_agree(path)
    assert outcome[0] != "refused"
    skim = skim_session(path, PROJECTED_TYPES)
    skimmed = [e for e in skim.events if isinstance(e, Skimmed)]
    # Every bare line is skimmed; the other events are surface, turn or packed-row events.
    bare = [e for e in skim.events if e.type in BARE_TYPES and e.type != "assistant/chunk"]
    assert len(skimmed) >= len(bare) > 10
    assert all(e.data is None for e in skimmed if e.type not in PROJECTED_TYPES)


# One bare line (`step/start`, seq 3 after a turn/start, user/message and assistant chunk),
# bent in each way the envelope rules care about; some bends are legal (and must read the
# same), the others are refused (with the same message).
_BENT = [
    '{"type":"step/start","seq":3,"time":5,"data":{"turn":1}}',  # as written
    '{"seq":3,"type":"step/start","data":{"turn":1},"time":5}',  # another key order
    '{"type":"step/start","seq":3.0,"time":5,"data":{}}',  # an integral float seq
    '{"type":"step/start","seq":3,"time":5.0,"data":{}}',
    '{"type":"step/start","seq":3,"time":5.5,"data":{}}',
    '{"type":"step/start","seq":3,"time":9007199254740992,"data":{}}',  # past MAX_SAFE_INTEGER
    '{"type":"step/start","seq":3,"time":-9007199254740991,"data":{}}',
    '{"type":"step/start","seq":4,"time":5,"data":{}}',  # a seq gap
    '{"type":"step/start","seq":-0,"time":5,"data":{}}',
    '{"type":"step/start","seq":true,"time":5,"data":{}}',
    '{"type":"step/start","seq":3,"time":5}',  # no data
    '{"type":"step/start","seq":3,"time":5,"data":{},"extra":1}',
    '{"type":"step/start","seq":3,"time":5,"data":{},"ignorable":true}',
    '{"type":"step/start","seq":3,"time":5,"data":{},"surfaceOp":"append"}',
    '{"type":"step/start","seq":3,"seq":3,"time":5,"data":{}}',  # a duplicate key
    '{"type":"","seq":3,"time":5,"data":{}}',
    '{"type":"brand/new","seq":3,"time":5,"data":{}}',  # an unknown type is carried through
    '{"type":"session/title","seq":3,"time":5,"data":{"title":"Skimmed title"}}',
    '{"type":"session/title","seq":3,"time":5,"data":{"title":"\\ud800 lone"}}',
    '{"type":"step/start","seq":3,"time":5,"data":{"a":NaN}}',
    '{"type":"step/start","seq":3,"time":5,"data":{"a":Infinity}}',
    '{"type":"step/start","seq":3,"time":5,"data":{"a":1e999}}',
    '{"type":"step/start","seq":3,"time":5,"data":{"a":"\\ud800"}}',
    '{"type":"step/start","seq":3,"time":5,"data":{"a":[1,]}}',
    '{"type":"step/start","seq":3,"time":5,"data":{"a":01}}',
    '{"type":"step/start","seq":3,"time":5,"data":{"a":"\\x"}}',
    '{"type":"step/start","seq":3,"time":5,"data":' + "[" * 3000 + "]" * 3000 + "}",
    '{"type":"step/start","seq":3,"time":5,"data":{"a":"caf\u00e9"}}',
    "",  # a blank line, a line of spaces, two objects on one line, one object over two lines
    "   ",
    '{"type":"step/start","seq":3,"time":5,"data":{}} {"type":"step/start","seq":4,"time":5,"data":{}}',
    '{"type":"step/start",\n"seq":3,"time":5,"data":{}}',
    ' {"type":"step/start","seq":3,"time":5,"data":{}}',
]
_BAD_UTF8 = b'{"type":"step/start","seq":3,"time":5,"data":{"a":"\xff"}}'


@pytest.mark.parametrize("bent", [b.encode() for b in _BENT] + [_BAD_UTF8])
@pytest.mark.parametrize("where", ["middle", "last"])
def test_every_bent_bare_line_skims_as_it_reads(tmp_path: Path, bent: bytes, where: str) -> None:
    events = turn_events()
    body = lines(events[:3]) + bent + b"\n"
    if where == "middle":  # a bad line followed by a turn/end is corruption, not a torn tail
        renumbered = [{**e, "seq": e["seq"] + 1} for e in events[3:]]
        body += lines(renumbered)
    _assert_agree(raw_log(tmp_path, body))


def test_a_skimmed_append_continues_like_a_full_one(tmp_path: Path) -> None:
    batches = factory_batches(seed=7, turns=4)
    half = len(batches) // 2
    path = raw_log(tmp_path, b"".join(batches[:half]))
    first = read_session(path)
    with path.open("ab") as file:
        file.write(b"".join(batches[half:]))
    full = read_appended(path, first.header, first.resume, first.digest_state)
    skim = read_appended(path, first.header, first.resume, first.digest_state, keep=PROJECTED_TYPES)
    assert (skim.resume, skim.digest, skim.revision, skim.torn) == (
        full.resume,
        full.digest,
        full.revision,
        full.torn,
    )
    assert skim.closers == ()
    assert Projection().fold(skim.events).model_dump() == Projection().fold(full.events).model_dump()


def test_skimmed_titles_are_decoded(tmp_path: Path) -> None:
    title = {"type": "session/title", "seq": 3, "time": 9, "data": {"title": "Named \u00e9"}}
    path = raw_log(tmp_path, lines([*turn_events()[:3], title]))
    assert Projection().fold(skim_session(path, PROJECTED_TYPES).events).title == "Named \u00e9"
    assert json.dumps(title)  # the record above is plain JSON


def test_a_realistic_raw_log_skims_from_one_decoding_call(tmp_path: Path, monkeypatch) -> None:
    from remem.daemon.sessions import scanner

    path = raw_log(tmp_path, b"".join(factory_batches(seed=6, turns=4)))
    full = _outcome(read_session, path)

    def line_by_line(*args: object) -> None:
        raise AssertionError("a bare line was decoded on its own")

    monkeypatch.setattr(scanner, "_skim", line_by_line)
    assert _outcome(lambda p: skim_session(p, PROJECTED_TYPES), path) == full
    assert full[0] != "refused"  # type: ignore[index]


def _bend(index: int, change: dict[str, Any] | None = None, **data: Any) -> tuple[int, dict[str, Any]]:
    """Event `index` of `turn_events()` with its payload keys `data` replaced (None drops one) and
    its envelope keys `change`d (None drops one)."""
    return index, {"data": data, "change": change or {}}


def _bent_turn(index: int, bend: dict[str, Any]) -> dict[str, Any]:
    record = turn_events()[index]
    payload = record["data"]
    for key, value in bend["data"].items():
        if key == "message" and isinstance(value, dict) and isinstance(payload.get("message"), dict):
            value = {**payload["message"], **value}  # a message's keys bend one by one
        payload = {k: v for k, v in {**payload, key: value}.items() if v is not None}
    record = {**record, "data": payload}
    for key, value in bend["change"].items():
        record = {k: v for k, v in {**record, key: value}.items() if v is not None}
    return record


_SOURCE = {"kind": "model", "provider": "p", "model": "m"}
_RESULT_BLOCK = {"type": "tool-result", "toolCallId": "c1", "content": [], "isError": False}
# Each rule a line's struct or its judge proves (`envelopes`), bent: the legal bends must read
# the same, the others be refused with the same message (which names the line).
_CHECKED_BENDS = [
    _bend(2),  # the user message as written
    _bend(2, id=None, role=None),  # a legacy user message: upgraded
    _bend(2, role="assistant"),
    _bend(2, id=""),
    _bend(2, source={"kind": 5}),
    _bend(2, {"surfaceOp": None}),
    _bend(2, {"surfaceOp": "prepend"}),
    _bend(2, {"surfaceOp": {"op": "replace", "start": 0, "end": 1}}),
    _bend(2, {"surfaceOp": {"op": "replace", "start": -1, "end": 1}}),
    _bend(2, {"surfaceOp": {"op": "replace", "start": 0.0, "end": 1}}),
    _bend(2, {"surfaceOp": {"op": "replace", "start": 0, "end": 1, "x": 1}}),
    _bend(2, {"sourceEventSeqs": []}),  # only an assistant message may have none
    _bend(2, {"sourceEventSeqs": [1, 1]}),
    _bend(2, {"sourceEventSeqs": [2]}),  # not earlier
    _bend(2, {"sourceEventSeqs": [1.0]}),
    _bend(2, {"sourceEventSeqs": [-1]}),
    _bend(2, {"sourceEventSeqs": [True]}),
    _bend(2, {"ignorable": True}),
    _bend(2, {"ignorable": 1}),
    _bend(2, {"extra": 1}),
    _bend(2, {"type": "steering/message"}),  # legacy vocabulary: upgraded
    _bend(2, {"seq": 2.0}),
    _bend(2, {"time": 2**53}),
    _bend(3, {"sourceEventSeqs": []}),
    _bend(3, {"sourceEventSeqs": [0, 1, 2]}),  # a consecutive run, as DSH writes them
    _bend(3, {"sourceEventSeqs": [2, 0, 1]}),  # unordered but unique and earlier: legal
    _bend(3, {"sourceEventSeqs": [0, 2, 2]}),
    _bend(3, {"sourceEventSeqs": [0, 0, 2]}),  # a run's ends and length, a duplicate inside
    _bend(3, {"sourceEventSeqs": [5, 1]}),  # the last is earlier, another is not
    _bend(3, {"sourceEventSeqs": [1, 3]}),
    _bend(3, message={"role": "user"}),
    _bend(3, message={"id": ""}),
    _bend(3, message={"id": 7}),
    _bend(3, message={"source": {**_SOURCE, "kind": "user"}}),
    _bend(3, message={"source": {**_SOURCE, "provider": ""}}),
    _bend(3, message={"source": {"kind": "model", "provider": "p"}}),
    _bend(3, message="not an object"),
    _bend(3, message=None, content=[{"type": "text", "text": "x"}], provenance={"provider": "p"}),  # legacy
    _bend(5, message={"content": [_RESULT_BLOCK, _RESULT_BLOCK]}),
    _bend(5, message={"content": [{**_RESULT_BLOCK, "toolCallId": "c2"}]}),
    _bend(5, message={"content": [{"type": "tool-result"}], "source": {"kind": "tool"}}),  # none on both
    _bend(5, message={"content": [{**_RESULT_BLOCK, "toolCallId": None}], "source": {"kind": "tool"}}),
    _bend(5, message={"content": ["text", _RESULT_BLOCK]}),
    _bend(5, message={"content": {"type": "tool-result"}}),
    _bend(5, message={"id": ""}),
    _bend(5, message={"role": "assistant"}),
    _bend(5, message={"source": {"callId": "c1"}}),
    _bend(5, message=None, callId="c1", content=[]),  # a legacy tool result: upgraded
    _bend(0, trigger="user"),  # a legacy turn start: upgraded
    _bend(0, {"data": "not an object"}),
    _bend(0, {"surfaceOp": "append"}),
    _bend(7, reason={"kind": "disposed"}),  # legacy turn ends: upgraded
    _bend(7, reason={"kind": "aborted"}),
    _bend(7, reason={"kind": "error", "message": "m"}),
    _bend(1, {"type": "request/header"}, header={"config": {"provider": "p", "model": "m"}}),
    _bend(1, {"type": "request/header"}, header={"config": {"provider": "p", "model": ""}}),
    _bend(
        1, {"type": "request/header"}, header={"config": {"provider": "p", "model": "m"}}, reason="fallback"
    ),
    _bend(1, {"type": "mode/set"}),  # refused legacy vocabulary
]


@pytest.mark.parametrize(("index", "bend"), _CHECKED_BENDS)
@pytest.mark.parametrize("where", ["middle", "last"])
def test_every_bent_checked_line_skims_as_it_reads(
    tmp_path: Path, index: int, bend: dict, where: str
) -> None:
    events = turn_events()
    events[index] = _bent_turn(index, bend)
    body = lines(events if where == "middle" else events[: index + 1])
    if where == "middle":  # a second turn: a bad line before it is corruption, named by its line
        body += lines(turn_events(first_seq=8, turn=2))
    outcome = _assert_agree(raw_log(tmp_path, body))
    if outcome[0] == "refused" and where == "middle":
        assert f"line {index + 2}" in outcome[1] or f"event seq {index}" in outcome[1]  # type: ignore[index]


def _row(tag: str = "text-chunks", seq0: int = 8, **data: Any) -> dict[str, Any]:
    members = {"args": ["{", "}", ""]} if tag == "tool-call-chunks" else {"texts": ["a", "b", "c"]}
    head = {"turn": 1, "step": 1, "index": 0, **({"id": "c1"} if tag == "tool-call-chunks" else {})}
    payload = {k: v for k, v in {**head, "dt": [1, 1], **members, **data}.items() if v is not None}
    return {"type": tag, "seq0": seq0, "time0": 1_785_000_000_010, "data": payload}


_ROWS = [
    _row(),
    _row("reasoning-chunks"),
    _row("tool-call-chunks"),
    _row("tool-call-chunks", name="bash"),
    _row("tool-call-chunks", name=5),
    _row("tool-call-chunks", id=None),
    _row(dt=[1]),
    _row(dt=[-5, 1]),  # times may fall: the general path checks each
    _row(dt=[2**53, 1]),
    _row(dt=[1.0, 1]),
    _row(texts=[]),
    _row(texts=["a", 1, "c"]),
    _row(index=None),
    _row(extra=1),
    _row(seq0=9),
    {**_row(), "time0": 1.5},
    {**_row(), "seq": 8},
]


@pytest.mark.parametrize("row", _ROWS)
@pytest.mark.parametrize("where", ["middle", "last"])
def test_every_bent_packed_row_skims_as_it_reads(tmp_path: Path, row: dict, where: str) -> None:
    body = lines([*turn_events(), row])
    if where == "middle":
        body += lines(turn_events(first_seq=11, turn=2))
    _assert_agree(raw_log(tmp_path, body))


def test_a_refused_line_costs_only_its_own_decoding(tmp_path: Path, monkeypatch) -> None:
    """Lines around one the structs refuse are still proved by the window's one call."""
    from remem.daemon.sessions import scanner

    events = [*turn_events(), *turn_events(first_seq=8, turn=2)]
    events[9] = {**events[9], "type": "brand/new"}  # an unknown type: no struct, carried through
    general: list[bytes] = []
    real = scanner._decode_line

    def recording(raw: bytes, *args: Any, **kwargs: Any) -> Any:
        general.append(raw)
        return real(raw, *args, **kwargs)

    monkeypatch.setattr(scanner, "_decode_line", recording)
    path = raw_log(tmp_path, lines(events))
    assert _assert_agree(path)[0] != "refused"
    general.clear()
    skim_session(path, PROJECTED_TYPES)
    assert general == [line(events[9]).rstrip(b"\n")]


@pytest.mark.parametrize("replaced", [5, 9])
def test_a_legacy_result_replacing_a_proved_one_takes_its_message_id(tmp_path: Path, replaced: int) -> None:
    """The upgrader learns the ids of the results a window proves, and looks up only earlier ones."""
    legacy = {"turn": 1, "step": 1, "callId": "c1", "content": []}
    events = turn_events()[:7]
    op = {"op": "replace", "start": replaced, "end": replaced}
    events.append({**events[5], "seq": 7, "data": legacy, "surfaceOp": op, "sourceEventSeqs": [4]})
    events.append({**events[6], "seq": 8})
    events.append({**events[5], "seq": 9, "sourceEventSeqs": [4]})
    path = raw_log(tmp_path, lines(events))
    full = read_session(path)
    skim = skim_session(path, frozenset({"tool/result"}))
    results = [e.data for e in full.events if e.type == "tool/result"]
    assert [e.data for e in skim.events if e.type == "tool/result"] == results
    assert results[1]["message"]["id"] == ("r1" if replaced == 5 else "legacy-message:s1:7")


@pytest.mark.parametrize(("index", "bend"), _CHECKED_BENDS)
def test_upgrades_says_whether_the_upgrader_changes_a_record(index: int, bend: dict) -> None:
    record = _bent_turn(index, bend)
    kind = record.get("type")
    changed = LegacyUpgrader("s1").upgrade(record) is not record
    assert upgrades(kind, record.get("data")) == changed  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "message",
    [
        "Expected `int`, got `float` - at `$[99].seq`",
        "JSON is malformed: invalid character (byte 99999)",
        "other",
    ],
)
def test_an_error_naming_no_line_of_the_window_sends_it_whole_the_general_way(message: str) -> None:
    from remem.daemon.sessions import envelopes

    union = envelopes.union_for(PROJECTED_TYPES)

    def refusing(body: memoryview) -> list[Any]:
        raise msgspec.ValidationError(message)

    buf = lines(turn_events())
    window = envelopes.decode_window(
        envelopes.LineUnion(refusing, union.plain, union.judges, union.kinds), buf, 0, len(buf), True
    )
    assert (window.lines, window.slow, window.end) == ([], 8, 0)
