"""Incremental reading: a log continued from an earlier read's resume point equals a fresh read."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.daemon.sessions.digest import DigestState
from remem.daemon.sessions.errors import SessionLogError
from remem.daemon.sessions.paths import Encoding
from remem.daemon.sessions.reader import (
    NotAppendOnly,
    SessionLog,
    file_revision,
    read_appended,
    read_session,
)
from remem.daemon.sessions.repair import interrupted_turn_closers
from remem.daemon.sessions.writer import encode_batch, json_line
from remem.daemon.sessions.zstd_frames import encode_frame, split_frames
from tests.sessions.factory import SessionSpec, build_session, write_session

from .logs import event, line, lines, raw_log, turn_events, zstd_log


def _full_log(root: Path, encoding: Encoding, seed: int = 7) -> tuple[Path, list[int]]:
    """A factory log written through the writer, and the file offset after each of its batches."""
    draft = build_session(SessionSpec(seed=seed, turns=4))
    path = write_session(root, draft, encoding=encoding)
    if encoding is Encoding.ZSTD:
        return path, [f.end for f in split_frames(path.read_bytes()).frames]
    ends = [len(json_line(draft.header.to_record()))]
    for batch in draft.batches:
        ends.append(ends[-1] + len(encode_batch(batch)))
    return path, ends


def _records(events: tuple) -> list[dict]:
    return [e.to_record() for e in events]


def _read_then_append(path: Path, rest: bytes) -> SessionLog:
    """Read the log, then append `rest` to the same file, as a live writer would."""
    before = read_session(path)
    with path.open("ab") as file:
        file.write(rest)
    return before


def _assert_continues(before: SessionLog, path: Path) -> None:
    fresh = read_session(path)
    appended = read_appended(path, before.header, before.resume, before.digest_state)
    assert _records(before.events + appended.events) == _records(fresh.events)
    assert appended.events[:1] == () or appended.events[0].seq == before.resume.event_count
    assert (appended.digest, appended.digest_state) == (fresh.digest, fresh.digest_state)
    assert (appended.resume, appended.torn) == (fresh.resume, fresh.torn)
    assert appended.revision == file_revision(path) == fresh.revision
    if any(e.type in ("turn/start", "turn/end") for e in appended.events):
        assert appended.closers == fresh.closers


def _copy_prefix(source: Path, root: Path, length: int) -> tuple[Path, bytes]:
    data = source.read_bytes()
    target = root / source.relative_to(source.parents[2])
    target.parent.mkdir(parents=True)
    target.write_bytes(data[:length])
    return target, data[length:]


@pytest.mark.parametrize("encoding", list(Encoding))
def test_continuing_at_every_batch_boundary_equals_a_fresh_read(tmp_path: Path, encoding: Encoding) -> None:
    source, ends = _full_log(tmp_path / "full", encoding)
    for index, end in enumerate(ends):
        path, rest = _copy_prefix(source, tmp_path / f"cut{index}", end)
        _assert_continues(_read_then_append(path, rest), path)


@pytest.mark.parametrize("encoding", list(Encoding))
def test_a_torn_prefix_continues_once_its_batch_is_complete(tmp_path: Path, encoding: Encoding) -> None:
    source, ends = _full_log(tmp_path / "full", encoding)
    for index, (start, end) in enumerate(zip(ends[1:], ends[2:], strict=False)):
        cut = start + (end - start) * 2 // 3
        path, rest = _copy_prefix(source, tmp_path / f"cut{index}", cut)
        before = _read_then_append(path, rest)
        assert before.torn is not None and start <= before.resume.file_offset < cut
        if encoding is Encoding.ZSTD:
            assert before.resume.file_offset == start
        _assert_continues(before, path)


@pytest.mark.parametrize("encoding", list(Encoding))
def test_closers_of_a_turn_opened_in_the_new_bytes(tmp_path: Path, encoding: Encoding) -> None:
    title = event(0, "session/title", {"title": "t", "messageSeqs": [], "source": {"kind": "user"}})
    opening = [{**r, "seq": r["seq"] + 1} for r in turn_events()[:5]]  # open turn, one started call
    batches = [line(title), lines(opening)]
    if encoding is Encoding.RAW:
        path = raw_log(tmp_path, batches[0])
        rest = batches[1]
    else:
        path = zstd_log(tmp_path, batches[:1])
        rest = encode_frame(batches[1])
    before = _read_then_append(path, rest)
    appended = read_appended(path, before.header, before.resume, before.digest_state)
    fresh = read_session(path)
    assert appended.closers == fresh.closers == tuple(interrupted_turn_closers(list(fresh.events)))
    assert [c.type for c in appended.closers] == ["tool/result", "step/end", "turn/end"]


def test_nothing_appended_returns_the_same_point(tmp_path: Path) -> None:
    path, _ = _full_log(tmp_path, Encoding.ZSTD)
    log = read_session(path)
    appended = read_appended(path, log.header, log.resume, log.digest_state)
    assert appended.events == () and appended.resume == log.resume and appended.digest == log.digest


@pytest.mark.parametrize("encoding", list(Encoding))
def test_a_shrunk_or_rewritten_file_is_not_append_only(tmp_path: Path, encoding: Encoding) -> None:
    path, ends = _full_log(tmp_path, encoding)
    data = path.read_bytes()
    log = read_session(path)
    path.write_bytes(data[: ends[2]])
    with pytest.raises(NotAppendOnly, match="shorter"):
        read_appended(path, log.header, log.resume, log.digest_state)
    prefix = read_session(path)
    offset = prefix.resume.file_offset
    path.write_bytes(data[: offset - 1] + b"X" + data[offset - 1 :])
    with pytest.raises(NotAppendOnly, match="newline" if encoding is Encoding.RAW else "start a zstd frame"):
        read_appended(path, prefix.header, prefix.resume, prefix.digest_state)


def test_defects_in_the_new_bytes_are_errors_with_their_place(tmp_path: Path) -> None:
    path = raw_log(tmp_path, lines(turn_events()[:3]))
    log = read_session(path)
    with path.open("ab") as file:
        file.write(line(event(3, "turn/start", {"turn": 1}, surfaceOp="append")))
    with pytest.raises(SessionLogError, match="after offset .*event seq 3: only surface events") as caught:
        read_appended(path, log.header, log.resume, log.digest_state)
    assert not isinstance(caught.value, NotAppendOnly)


def test_a_legacy_replacement_of_an_earlier_result_needs_the_whole_log(tmp_path: Path) -> None:
    result = {"turn": 1, "step": 1, "callId": "c", "content": []}
    first = event(0, "tool/result", result, surfaceOp="append")
    replace = event(
        1, "tool/result", result, surfaceOp={"op": "replace", "start": 0, "end": 0}, sourceEventSeqs=[0]
    )
    path = raw_log(tmp_path, line(first))
    before = _read_then_append(path, line(replace))
    with pytest.raises(NotAppendOnly, match="replaces seq 0"):
        read_appended(path, before.header, before.resume, before.digest_state)
    # Read whole, the replacement reuses the replaced result's message id.
    assert read_session(path).events[1].data["message"]["id"] == "legacy-message:s1:0"


def test_a_digest_state_from_another_point_is_a_caller_error(tmp_path: Path) -> None:
    path = raw_log(tmp_path, lines(turn_events()))
    log = read_session(path)
    with pytest.raises(ValueError, match="digest state"):
        read_appended(path, log.header, log.resume, DigestState())
