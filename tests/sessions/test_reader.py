"""Reading logs: both encodings agree, torn tails stay in memory, hostile input is a clear error."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import zstandard

from remem.daemon.limits import SESSION_LINE_MAX_BYTES
from remem.daemon.sessions.digest import LogDigest, log_digest
from remem.daemon.sessions.errors import SessionLogError
from remem.daemon.sessions.paths import Encoding
from remem.daemon.sessions.reader import read_session
from remem.daemon.sessions.zstd_frames import encode_frame
from tests.sessions.factory import build_family, write_session

from .logs import event, factory_batches, header, line, lines, place, raw_log, turn_events, zstd_log


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _records(log) -> list[dict]:
    return [e.to_record() for e in log.events]


def test_factory_family_reads_identically_in_both_encodings(tmp_path: Path) -> None:
    family = build_family(11)
    for draft in family.drafts:
        raw = read_session(write_session(tmp_path / "raw", draft, encoding=Encoding.RAW))
        zst = read_session(write_session(tmp_path / "zstd", draft, encoding=Encoding.ZSTD))
        assert _records(raw) == _records(zst) == [e.to_record() for e in draft.events]
        assert raw.header == zst.header == draft.header
        assert (raw.digest, raw.logical_length) == (zst.digest, zst.logical_length)
        assert raw.torn is zst.torn is None and raw.closers == zst.closers == ()
        assert zst.resume.frame_count == 1 + len(draft.batches)
        assert raw.resume.file_offset == raw.path.stat().st_size == raw.logical_length


def test_raw_digest_covers_exactly_the_committed_bytes(tmp_path: Path) -> None:
    path = raw_log(tmp_path, lines(turn_events()))
    log = read_session(path)
    assert log.digest == log_digest(path.read_bytes())
    assert log.digest_state.length == log.resume.logical_offset == path.stat().st_size
    assert log.revision.count(":") == 4


def test_raw_torn_tail_at_every_cut_is_repaired_in_memory_only(tmp_path: Path) -> None:
    batches = factory_batches(turns=2)
    head = line(header()) + batches[0]
    tail = batches[1]
    full_count = len(read_session(raw_log(tmp_path / "full", b"".join(batches))).events)
    for cut in range(1, len(tail), max(1, len(tail) // 60)):
        path = place(tmp_path / f"cut{cut}", "s1", head + tail[:cut])
        before = _sha(path)
        log = read_session(path)
        assert _sha(path) == before
        assert log.resume.file_offset == len(head) + tail[:cut].rfind(b"\n") + 1
        assert log.torn is not None and "torn" in log.torn.reason
        assert len(log.events) < full_count
        assert log.digest == log_digest(path.read_bytes()[: log.resume.file_offset])
        if log.closers:
            assert log.closers[-1].data["reason"] == {"kind": "interrupted"}
            assert {c.time for c in log.closers} == {log.events[-1].time}
            assert [c.seq for c in log.closers] == list(
                range(len(log.events), len(log.events) + len(log.closers))
            )


def test_torn_tail_may_cut_a_utf8_character(tmp_path: Path) -> None:
    body = lines(turn_events())
    partial = line(event(8, "session/title", {"title": "é€", "messageSeqs": [], "source": {"kind": "user"}}))
    cut = partial.index("€".encode()) + 1
    log = read_session(raw_log(tmp_path, body + partial[:cut]))
    assert len(log.events) == 8 and log.torn is not None


def test_crash_closers_for_started_and_unstarted_calls(tmp_path: Path) -> None:
    records = turn_events()[:5]  # turn open, call c1 started (tool/call at seq 4)
    unstarted = event(
        5,
        "assistant/message",
        {
            "turn": 1,
            "step": 1,
            "message": {
                "id": "a2",
                "role": "assistant",
                "content": [{"type": "tool-call", "id": "c2", "name": "x", "arguments": "{}"}],
                "source": {"kind": "model", "provider": "p", "model": "m"},
            },
        },
        surfaceOp="append",
    )
    log = read_session(raw_log(tmp_path, lines([*records, unstarted])))
    kinds = [(c.type, c.seq) for c in log.closers]
    assert kinds == [("tool/result", 6), ("tool/result", 7), ("step/end", 8), ("turn/end", 9)]
    started, not_started = log.closers[0], log.closers[1]
    assert started.data["error"]["code"] == "TOOL_OUTCOME_UNKNOWN" and started.sourceEventSeqs == [4]
    assert started.data["message"]["id"] == "interrupted-tool-result-c1-6"
    assert not_started.data["error"]["code"] == "TOOL_NOT_STARTED" and not_started.sourceEventSeqs is None
    assert log.torn is None and log.balanced_events[-1].type == "turn/end"


def test_zstd_torn_last_frame_recovers_complete_lines(tmp_path: Path) -> None:
    batches = factory_batches(turns=3)
    path = zstd_log(tmp_path, batches)
    full = read_session(path)
    data = path.read_bytes()
    path.write_bytes(data[:-7])
    before = _sha(path)
    log = read_session(path)
    assert _sha(path) == before
    assert log.torn is not None and log.torn.file_offset == log.resume.file_offset
    assert log.resume.frame_count == len(batches)  # header frame + all but the torn batch
    assert log.resume.event_count + log.torn.recovered_events == len(log.events) < len(full.events)
    assert _records(log) == _records(full)[: len(log.events)]


def test_zstd_recovered_events_count_toward_the_digest(tmp_path: Path) -> None:
    body = lines(turn_events())
    encoder = zstandard.ZstdCompressor(write_checksum=True, write_content_size=False).compressobj()
    # Flush a block after the body so a frame cut in its final block still yields the body.
    torn_frame = (
        encoder.compress(body)
        + encoder.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
        + encoder.compress(b'{"type":')
    )
    log = read_session(place(tmp_path, "s1", encode_frame(line(header())) + torn_frame, Encoding.ZSTD))
    assert log.torn is not None and log.torn.recovered_events == len(log.events) == 8
    assert log.resume.event_count == 0 and log.resume.frame_count == 1
    assert log.digest == log_digest(line(header()) + body)
    assert log.logical_length == len(line(header()) + body)
    # The state stops at the resume point: the torn frame's bytes are read again after an append.
    assert log.digest_state == LogDigest().state.model_copy(
        update={"tail": line(header()), "length": len(line(header()))}
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (lines(turn_events()[:3]) + b"{not json\n" + lines(turn_events(4, 2)), "not valid JSON.*turn/end"),
        (lines(turn_events()[:3]) + lines(turn_events(5, 2)), "seq gap.*turn/end"),
        (lines(turn_events()[:2]) + b"\xff\xfe\n", "not valid UTF-8"),
        (
            line(
                event(
                    0, "user/message", {"id": "u", "role": "user", "content": [], "source": {"kind": "user"}}
                )
            ),
            "must carry surfaceOp",
        ),
        (line(event(0, "turn/start", {"turn": 1}, surfaceOp="append")), "only surface events"),
        (line(event(0, "mode/set", {})), "retired legacy"),
        (
            line(
                event(
                    0,
                    "assistant/message",
                    {"message": {"id": "a", "role": "assistant", "content": [], "source": {"kind": "model"}}},
                    surfaceOp="append",
                )
            ),
            "provider and model",
        ),
        (
            line(
                event(
                    0,
                    "request/header",
                    {"header": {"config": {"provider": "p", "model": "m"}}, "reason": "fallback"},
                )
            ),
            "fallback",
        ),
        (line(event(0, "turn/start", {"turn": 1}, extra=1)), "bad event envelope"),
        (line(event(0, ["turn/start"], {"turn": 1})), "event seq 0: bad event envelope"),
        (lines(turn_events()[:4]) + line({**turn_events()[5], "seq": 4}), "event seq 4: .*strictly earlier"),
        (
            lines(turn_events()[:5]) + line({**turn_events()[5], "sourceEventSeqs": [4, 4]}),
            "unique and strictly earlier",
        ),
        (
            lines(turn_events()[:5]) + line({**turn_events()[5], "sourceEventSeqs": []}),
            "only assistant/message may have empty",
        ),
        (
            line(
                event(
                    0,
                    "user/message",
                    {"id": "u", "role": "assistant", "source": {"kind": "user"}},
                    surfaceOp="append",
                )
            ),
            "event seq 0: message role must be 'user'",
        ),
        (
            lines(turn_events()[:5])
            + line(
                {
                    **turn_events()[5],
                    "data": {"message": {**turn_events()[5]["data"]["message"], "content": []}},
                }
            ),
            "exactly one tool-result block",
        ),
        (line(event(0, "request/header", {"header": {"config": {"provider": "p"}}})), "config.provider"),
        (line(event(0, "turn/start", {"turn": 1}, ignorable=False)), "ignorable"),
    ],
)
def test_hostile_bodies_are_per_session_errors(tmp_path: Path, body: bytes, message: str) -> None:
    with pytest.raises(SessionLogError, match=message) as caught:
        read_session(raw_log(tmp_path, body))
    assert caught.value.path.name == "session.jsonl"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (lines(turn_events()[:3]) + b"{not json\n", "not valid JSON"),
        (lines(turn_events()[:3]) + line(event(9, "turn/start", {"turn": 2})), "seq gap"),
        (lines(turn_events()[:3]) + b"[" * 100_000 + b"\n", "nesting"),
        (lines(turn_events()[:3]) + b'{"type":"x","seq":3,"time":NaN,"data":{}}\n', "NaN"),
        (lines(turn_events()[:3]) + "\ufeff".encode() + line(turn_events()[3]), "byte order mark"),
        (
            lines(turn_events()[:3]) + b'{"type":"text-chunks","seq0":3,"time0":0,"data":{}}\n',
            "malformed packed row",
        ),
    ],
)
def test_forgivable_bad_tail_ends_the_committed_prefix(tmp_path: Path, body: bytes, reason: str) -> None:
    path = raw_log(tmp_path, body)
    log = read_session(path)
    assert len(log.events) == 3 and log.torn is not None and reason in log.torn.reason
    assert [c.type for c in log.closers] == ["step/end", "turn/end"]


@pytest.mark.parametrize(
    ("first_line", "message"),
    [
        ({**header(), "version": 1}, "version 1 was written by a newer harness"),
        ({**header(), "sandboxMode": "x"}, "retired keys"),
        ({k: v for k, v in header().items() if k != "delegationDepth"}, "not a session header"),
        ({**header(), "type": "event"}, "not a session header"),
        ({**header(), "createdAt": -5}, "createdAt"),
        ({**header(), "cwd": "relative/dir"}, "not absolute"),
    ],
)
def test_bad_headers(tmp_path: Path, first_line: dict, message: str) -> None:
    with pytest.raises(SessionLogError, match=message):
        read_session(place(tmp_path, "s1", line(first_line)))


def test_header_only_log_reads_with_no_events(tmp_path: Path) -> None:
    log = read_session(place(tmp_path, "s1", line(header())))
    assert log.events == () and log.torn is None and log.closers == ()


def test_empty_and_headerless_files_are_errors(tmp_path: Path) -> None:
    with pytest.raises(SessionLogError, match="empty"):
        read_session(place(tmp_path / "a", "s1", b""))
    with pytest.raises(SessionLogError, match="header line is incomplete"):
        read_session(place(tmp_path / "b", "s1", line(header())[:-5]))
    with pytest.raises(SessionLogError, match="header frame is incomplete"):
        read_session(place(tmp_path / "c", "s1", encode_frame(line(header()))[:-3], Encoding.ZSTD))


@pytest.mark.parametrize("session_id", ["..", "../escape", "a/b", "."])
def test_header_id_must_match_its_directory(tmp_path: Path, session_id: str) -> None:
    log_bytes = line(header(session_id))
    with pytest.raises(SessionLogError, match="belong at"):
        read_session(place(tmp_path, "innocent", log_bytes))
    assert read_session(place(tmp_path, session_id, log_bytes)).header.id == session_id


def test_log_copied_into_another_project_is_refused(tmp_path: Path) -> None:
    path = raw_log(tmp_path, lines(turn_events()))
    wrong = place(tmp_path, "s1", path.read_bytes(), cwd="/elsewhere")
    with pytest.raises(
        SessionLogError, match="--home-dev-projects-demo--/s1/session.jsonl, not --elsewhere--"
    ):
        read_session(wrong)


def test_zstd_damage_in_a_complete_frame_is_corruption(tmp_path: Path) -> None:
    batches = factory_batches(turns=3)
    path = zstd_log(tmp_path, batches)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x55
    path.write_bytes(bytes(data))
    with pytest.raises(SessionLogError, match="frame \\d+ .* damaged"):
        read_session(path)


@pytest.mark.parametrize(
    ("frames", "message"),
    [
        ([lines(turn_events()[:2]), lines(turn_events(3, 2))], "seq gap"),
        ([lines(turn_events())[:-1]], "not newline-terminated"),
        ([b"garbage\n"], "not valid JSON"),
    ],
)
def test_zstd_complete_frames_must_be_clean(tmp_path: Path, frames: list[bytes], message: str) -> None:
    with pytest.raises(SessionLogError, match=message):
        read_session(zstd_log(tmp_path, frames))


def test_garbage_after_frames_is_refused(tmp_path: Path) -> None:
    path = zstd_log(tmp_path, [lines(turn_events())])
    path.write_bytes(path.read_bytes() + b"not a frame at all")
    with pytest.raises(SessionLogError, match="bad magic"):
        read_session(path)


def test_unknown_event_types_are_carried_through_and_reported(tmp_path: Path) -> None:
    custom = event(0, "remem/marker", {"anything": [1, {"deep": True}]}, ignorable=True)
    newer = event(1, "future/kind", {"x": 1})
    log = read_session(raw_log(tmp_path, lines([custom, newer])))
    assert [e.to_record() for e in log.events] == [custom, newer]
    assert log.unknown_types == {"remem/marker", "future/kind"}


def test_legacy_shapes_are_upgraded_in_memory(tmp_path: Path) -> None:
    legacy = [
        event(0, "turn/start", {"turn": 1, "trigger": "user"}),
        event(
            1,
            "steering/message",
            {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}},
            surfaceOp="append",
        ),
        event(
            2,
            "assistant/message",
            {
                "turn": 1,
                "step": 1,
                "content": [{"type": "text", "text": "yo"}],
                "provenance": {"provider": "p", "model": "m"},
            },
            surfaceOp="append",
        ),
        event(
            3,
            "tool/result",
            {"turn": 1, "step": 1, "callId": "c", "content": [], "isError": True},
            surfaceOp="append",
            sourceEventSeqs=[2],
        ),
        event(
            4,
            "tool/result",
            {"turn": 1, "step": 1, "callId": "c", "content": [{"type": "text", "text": "pruned"}]},
            surfaceOp={"op": "replace", "start": 3, "end": 3},
            sourceEventSeqs=[3],
        ),
        event(5, "turn/end", {"turn": 1, "reason": {"kind": "disposed"}}),
    ]
    path = raw_log(tmp_path, lines(legacy))
    before = _sha(path)
    events = read_session(path).events
    assert _sha(path) == before
    assert events[0].data == {"turn": 1}
    assert (
        events[1].type == "user/message"
        and events[1].data["id"] == "legacy-message:s1:1"
        and events[1].data["role"] == "user"
    )
    assert events[2].data["message"] == {
        "id": "legacy-message:s1:2",
        "role": "assistant",
        "content": [{"type": "text", "text": "yo"}],
        "source": {"provider": "p", "model": "m", "kind": "model"},
    }
    assert events[3].data["message"]["content"] == [
        {"type": "tool-result", "toolCallId": "c", "content": [], "isError": True}
    ]
    assert events[4].data["message"]["id"] == events[3].data["message"]["id"] == "legacy-message:s1:3"
    assert events[5].data["reason"] == {"kind": "aborted", "reason": {"kind": "disposed"}}


@pytest.mark.parametrize(
    ("reason", "upgraded"),
    [
        ({"kind": "aborted"}, {"kind": "aborted", "reason": {"kind": "legacy"}}),
        (
            {"kind": "error", "message": "boom", "code": "X"},
            {"kind": "error", "error": {"message": "boom", "code": "X"}},
        ),
        ({"kind": "aborted", "reason": {"kind": "user"}}, {"kind": "aborted", "reason": {"kind": "user"}}),
    ],
)
def test_old_turn_end_reasons(tmp_path: Path, reason: dict, upgraded: dict) -> None:
    log = read_session(raw_log(tmp_path, line(event(0, "turn/end", {"turn": 1, "reason": reason}))))
    assert log.events[0].data["reason"] == upgraded


def test_not_a_log_name(tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("x")
    with pytest.raises(SessionLogError, match="not a session log name"):
        read_session(other)


def test_unreadable_file_is_an_error_not_a_crash(tmp_path: Path) -> None:
    with pytest.raises(SessionLogError, match="cannot read"):
        read_session(tmp_path / "p" / "s" / "session.jsonl")


@pytest.mark.parametrize("encoding", list(Encoding))
def test_a_line_past_the_cap_is_refused_naming_it(tmp_path: Path, encoding: Encoding) -> None:
    big = "x" * SESSION_LINE_MAX_BYTES
    title = event(0, "session/title", {"title": big, "messageSeqs": [], "source": {"kind": "user"}})
    body = line(title) + line(event(1, "session/end-seed", {}))
    path = raw_log(tmp_path, body) if encoding is Encoding.RAW else zstd_log(tmp_path, [body])
    with pytest.raises(SessionLogError, match="line 2 is .* bytes; .* up to 8 MiB .SESSION_LINE_MAX_BYTES"):
        read_session(path)


def test_session_without_cwd_lives_in_no_cwd(tmp_path: Path) -> None:
    log_bytes = (
        json.dumps(
            {"type": "session", "version": 0, "id": "n", "createdAt": 1, "delegationDepth": 0}
        ).encode()
        + b"\n"
    )
    path = place(tmp_path, "n", log_bytes, cwd=None)
    assert path.parent.parent.name == "_no-cwd" and read_session(path).header.cwd is None
