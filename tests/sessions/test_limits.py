"""The caps on a session log: each refuses that log alone, naming the cap, before it is held.

The attack's inputs at their full sizes are in tests/reliability; here the caps are made small
where that keeps the test small, and each path that enforces one is taken.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from remem.daemon.sessions import reader, scanner, zstd_frames
from remem.daemon.sessions.decode import decode_line
from remem.daemon.sessions.errors import SessionLogError
from remem.daemon.sessions.reader import read_session, skim_session
from remem.daemon.sessions.zstd_frames import TooLarge, decode_frame, decode_torn_frame, encode_frame

from .logs import event, line, raw_log, turn_events, zstd_log


def _steps(count: int) -> bytes:
    return b"".join(line(event(seq, "step/start", {"turn": 1, "step": seq})) for seq in range(count))


def test_a_frame_is_decompressed_only_up_to_its_limit() -> None:
    frame = encode_frame(b" " * 100_000)
    assert decode_frame(frame, 100_000) == b" " * 100_000
    with pytest.raises(TooLarge):
        decode_frame(frame, 99_999)
    blocks = encode_frame(bytes(range(256)) * 1200)  # 300 KB of 128 KiB blocks: two decode whole
    assert len(decode_torn_frame(blocks[:-10])) >= 128 * 1024
    with pytest.raises(TooLarge):
        decode_torn_frame(blocks[:-10], 1_000)


def test_a_log_whose_plaintext_passes_the_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = b"".join(line(e) for e in turn_events())
    monkeypatch.setattr(reader, "SESSION_LOG_MAX_BYTES", len(body))  # the header takes it past
    monkeypatch.setattr(zstd_frames, "SESSION_LOG_MAX_BYTES", len(body))
    with pytest.raises(SessionLogError, match="frame 1 .* past its cap: .*SESSION_LOG_MAX_BYTES"):
        read_session(zstd_log(tmp_path, [body]))


def test_a_log_file_past_the_cap_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = raw_log(tmp_path, _steps(10))
    monkeypatch.setattr(reader, "SESSION_LOG_MAX_BYTES", path.stat().st_size - 1)
    with pytest.raises(SessionLogError, match=r"the log file is \d+ bytes, past its cap"):
        skim_session(path, frozenset())


@pytest.mark.parametrize("skim", [False, True])
def test_a_log_past_the_events_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, skim: bool
) -> None:
    monkeypatch.setattr(scanner, "SESSION_EVENTS_MAX", 5)
    path = raw_log(tmp_path, _steps(5))
    assert len(read_session(path).events) == 5
    path = raw_log(tmp_path, _steps(6))
    with pytest.raises(SessionLogError, match="more than 5 events .line 7.*SESSION_EVENTS_MAX"):
        skim_session(path, frozenset()) if skim else read_session(path)


def test_a_packed_row_past_the_events_cap_is_refused_before_it_expands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scanner, "SESSION_EVENTS_MAX", 5)
    data = {"turn": 1, "step": 1, "index": 0, "dt": [0] * 5, "texts": ["a"] * 6}
    path = raw_log(tmp_path, line({"type": "text-chunks", "seq0": 0, "time0": 1, "data": data}))
    with pytest.raises(SessionLogError, match="more than 5 events .line 2"):
        read_session(path)


def test_a_folding_skim_holds_a_batch_so_only_a_packed_row_meets_the_events_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scanner, "SESSION_EVENTS_MAX", 5)
    monkeypatch.setattr(scanner, "SINK_BATCH", 3)
    batches: list[list[int]] = []
    skim = skim_session(
        raw_log(tmp_path, _steps(20)),
        frozenset({"step/start"}),
        fold=lambda b: batches.append([e.seq for e in b]),
    )
    assert skim.events == () and skim.resume.event_count == 20
    assert [seq for batch in batches for seq in batch] == list(range(20))
    assert max(map(len, batches)) <= 5
    data = {"turn": 1, "step": 1, "index": 0, "dt": [0] * 5, "texts": ["a"] * 6}
    path = raw_log(tmp_path, line({"type": "text-chunks", "seq0": 0, "time0": 1, "data": data}))
    with pytest.raises(SessionLogError, match="more than 5 events .line 2"):
        skim_session(path, frozenset(), fold=batches.append)


def test_a_folding_skim_hands_over_only_the_kept_types_and_the_last_event(tmp_path: Path) -> None:
    """What it leaves out is never held, so a log of any number of such events holds none."""
    steps = [line(event(seq, "step/start", {"turn": 1, "step": seq})) for seq in range(9)]
    steps[4] = line(event(4, "session/title", {"title": "T"}))
    body = b"".join(steps)
    folded: list[tuple[str, int]] = []
    skim_session(
        raw_log(tmp_path, body),
        frozenset({"session/title"}),
        fold=lambda b: folded.extend((e.type, e.seq) for e in b),
    )
    assert folded == [("session/title", 4), ("step/start", 8)]


def test_a_packed_row_a_skim_refuses_is_held_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The window's struct of the row goes before the line-by-line path decodes it again to say
    why: a million-member row held twice took the daemon past its 200 MB."""
    monkeypatch.setattr(scanner, "SESSION_EVENTS_MAX", 5)
    members = 200_000
    data = {"turn": 1, "step": 1, "index": 0, "dt": [0] * (members - 1), "texts": ["a"] * members}
    row = line({"type": "text-chunks", "seq0": 0, "time0": 1, "data": data})
    path = raw_log(tmp_path, row)
    del data
    tracemalloc.start()
    try:
        decode_line(row)
        once = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        with pytest.raises(SessionLogError, match="more than 5 events .line 2"):
            skim_session(path, frozenset(), fold=lambda batch: None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * once  # the file, the row's struct or its dict: never both at once
