"""Packed chunk rows: exact expansion, strict decoding, DSH's packing rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remem.daemon.sessions.chunks import ChunkRowError, expand_row, pack_chunk_runs


def _delta(seq: int, time: int, text: str, *, index: int = 0, kind: str = "text-delta") -> dict:
    return {
        "type": "assistant/chunk",
        "seq": seq,
        "time": time,
        "data": {"turn": 1, "step": 1, "chunk": {"type": kind, "index": index, "text": text}},
    }


def test_expand_text_row_times_accumulate_including_negative_gaps() -> None:
    row = {
        "type": "text-chunks",
        "seq0": 4,
        "time0": 100,
        "data": {"turn": 1, "step": 2, "index": 0, "dt": [5, -2], "texts": ["a", "b", "c"]},
    }
    events = expand_row(row)
    assert [(e["seq"], e["time"]) for e in events] == [(4, 100), (5, 105), (6, 103)]
    assert events[2]["data"] == {
        "turn": 1,
        "step": 2,
        "chunk": {"type": "text-delta", "index": 0, "text": "c"},
    }


def test_expand_tool_row_with_and_without_name() -> None:
    base = {"turn": 1, "step": 1, "index": 2, "id": "c1", "dt": [1], "args": ["{", "}"]}
    named = expand_row({"type": "tool-call-chunks", "seq0": 0, "time0": 0, "data": {**base, "name": "bash"}})
    assert named[1]["data"]["chunk"] == {
        "type": "tool-call-delta",
        "index": 2,
        "id": "c1",
        "name": "bash",
        "argumentsDelta": "}",
    }
    plain = expand_row({"type": "tool-call-chunks", "seq0": 0, "time0": 0, "data": base})
    assert "name" not in plain[0]["data"]["chunk"]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            {
                "type": "text-chunks",
                "seq0": 0,
                "time0": 0,
                "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "texts": ["a"]},
                "x": 1,
            },
            "keys",
        ),
        (
            {
                "type": "text-chunks",
                "seq0": 0,
                "time0": 0,
                "data": {"turn": 1, "step": 1, "index": 0, "texts": ["a"]},
            },
            "data keys",
        ),
        (
            {
                "type": "text-chunks",
                "seq0": 0,
                "time0": 0,
                "data": {"turn": 1, "step": 1, "index": 0, "dt": [1], "texts": ["a"]},
            },
            "dt",
        ),
        (
            {
                "type": "text-chunks",
                "seq0": 0,
                "time0": 0,
                "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "texts": []},
            },
            "non-empty",
        ),
        (
            {
                "type": "reasoning-chunks",
                "seq0": "0",
                "time0": 0,
                "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "texts": ["a"]},
            },
            "safe integers",
        ),
        (
            {
                "type": "text-chunks",
                "seq0": 0,
                "time0": 0,
                "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "texts": ["a"], "name": "n"},
            },
            "data keys",
        ),
    ],
)
def test_expand_row_is_strict(row: dict, message: str) -> None:
    with pytest.raises(ChunkRowError, match=message):
        expand_row(row)


@pytest.mark.parametrize(
    ("seq0", "time0", "dt", "message"),
    [
        (2**53 - 2, 0, [1, 1], "leaves the safe integer range"),
        (0, 2**53 - 2, [1, 1], "leaves the safe integer range"),
        (0, -(2**53) + 2, [-1, -1], "leaves the safe integer range"),
        (0, 0, [1, True], "dt must hold"),
        (0, 0, [1, 1.0], "dt must hold"),
    ],
)
def test_expanded_values_must_stay_safe_integers(seq0: int, time0: int, dt: list, message: str) -> None:
    data = {"turn": 1, "step": 1, "index": 0, "dt": dt, "texts": ["a", "b", "c"]}
    with pytest.raises(ChunkRowError, match=message):
        expand_row({"type": "text-chunks", "seq0": seq0, "time0": time0, "data": data})


def test_members_must_all_be_strings() -> None:
    data = {"turn": 1, "step": 1, "index": 0, "id": "c", "dt": [0], "args": ["{", 1]}
    with pytest.raises(ChunkRowError, match="list of strings"):
        expand_row({"type": "tool-call-chunks", "seq0": 0, "time0": 0, "data": data})


def test_pack_needs_three_consecutive_same_block_deltas() -> None:
    two = [_delta(0, 0, "a"), _delta(1, 1, "b")]
    assert pack_chunk_runs(two) == two
    mixed = [
        _delta(0, 0, "a"),
        _delta(1, 1, "b"),
        _delta(2, 2, "c", index=1),
        _delta(3, 3, "d", index=1),
        _delta(4, 4, "e", index=1),
    ]
    packed = pack_chunk_runs(mixed)
    assert (
        packed[:2] == mixed[:2]
        and packed[2]["type"] == "text-chunks"
        and packed[2]["data"]["texts"] == ["c", "d", "e"]
    )


def test_pack_leaves_ignorable_and_non_delta_chunks_alone() -> None:
    run = [_delta(i, i, "x") for i in range(3)]
    ignorable = [{**run[0], "ignorable": True}, *run[1:]]
    assert pack_chunk_runs(ignorable)[0] == ignorable[0]
    finish = {
        "type": "assistant/chunk",
        "seq": 3,
        "time": 3,
        "data": {"turn": 1, "step": 1, "chunk": {"type": "finish", "reason": {"kind": "stop"}}},
    }
    assert pack_chunk_runs([*run, finish])[-1] == finish


_member = st.fixed_dictionaries(
    {
        "text": st.text(max_size=5),
        "dt": st.integers(-50, 50),
        "index": st.integers(0, 1),
        "kind": st.sampled_from(["text-delta", "reasoning-delta", "tool-call-delta", "finish"]),
        "named": st.booleans(),
    }
)


def _event(seq: int, time: int, m: dict) -> dict:
    if m["kind"] == "tool-call-delta":
        chunk = {
            "type": m["kind"],
            "index": m["index"],
            "id": "c",
            **({"name": "n"} if m["named"] else {}),
            "argumentsDelta": m["text"],
        }
    elif m["kind"] == "finish":
        chunk = {"type": "finish", "reason": {"kind": "stop"}}
    else:
        chunk = {"type": m["kind"], "index": m["index"], "text": m["text"]}
    return {
        "type": "assistant/chunk",
        "seq": seq,
        "time": time,
        "data": {"turn": 1, "step": 1, "chunk": chunk},
    }


@given(st.lists(_member, max_size=30))
def test_pack_then_expand_round_trips(members: list[dict]) -> None:
    events, time = [], 1000
    for seq, m in enumerate(members):
        time += m["dt"]
        events.append(_event(seq, time, m))
    expanded = [
        e for r in pack_chunk_runs(events) for e in (expand_row(r) if r["type"].endswith("-chunks") else [r])
    ]
    assert expanded == events
