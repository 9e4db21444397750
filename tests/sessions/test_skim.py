"""A skimming read checks exactly what a full read checks, and projects to the same listing.

`skim_session` leaves the payloads of bare events unbuilt (msgspec `Raw`), so it must accept
exactly the logs `read_session` accepts, refuse the others with the same message, and give
the same projection, resume point, digest and revision. Each test compares the two on the
same bytes, on realistic logs and on every way a bare line can be bent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.sessions.checks import BARE_TYPES
from remem.daemon.sessions.errors import SessionLogError
from remem.daemon.sessions.models import Skimmed
from remem.daemon.sessions.projection import PROJECTED_TYPES, Projection
from remem.daemon.sessions.reader import read_appended, read_session, skim_session

from .logs import factory_batches, lines, raw_log, turn_events, zstd_log


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
