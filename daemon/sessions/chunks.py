"""Packed chunk rows (`chunk-rows.ts`): runs of streaming deltas stored as one storage record.

Decoding is strict for the three row tags (any extra or missing key is corruption), because a
row that silently expanded to the wrong members would shift every later seq.
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any

from .models import MAX_SAFE_INTEGER, SessionEvent, Skimmed, all_safe_ints, chunk_events

ROW_TAGS: dict[str, str] = {
    "text-chunks": "text-delta",
    "reasoning-chunks": "reasoning-delta",
    "tool-call-chunks": "tool-call-delta",
}
_DELTA_TAGS = {delta: row for row, delta in ROW_TAGS.items()}
_ROW_KEYS = frozenset({"type", "seq0", "time0", "data"})
_TEXT_DATA_KEYS = frozenset({"turn", "step", "index", "dt", "texts"})
_TOOL_DATA_KEYS = frozenset({"turn", "step", "index", "id", "dt", "args"})
_TEXT_CHUNK_KEYS = frozenset({"type", "index", "text"})
_TOOL_CHUNK_KEYS = frozenset({"type", "index", "id", "argumentsDelta"})
MIN_PACKED_RUN = 3
_STRS_ONLY = frozenset({str})


class ChunkRowError(ValueError):
    """A packed row that does not decode; the message says which rule it broke."""


def is_chunk_row(record: dict[str, Any]) -> bool:
    kind = record.get("type")
    return isinstance(kind, str) and kind in ROW_TAGS


def _is_safe_int(value: Any) -> bool:
    return type(value) is int and abs(value) <= MAX_SAFE_INTEGER


def _check_row_shape(record: dict[str, Any]) -> tuple[dict[str, Any], str]:
    if record.keys() != _ROW_KEYS:
        raise ChunkRowError(f"{record['type']} row keys must be exactly {sorted(_ROW_KEYS)}")
    data = record["data"]
    if not isinstance(data, dict):
        raise ChunkRowError(f"{record['type']} row data must be an object")
    tool = record["type"] == "tool-call-chunks"
    required = _TOOL_DATA_KEYS if tool else _TEXT_DATA_KEYS
    allowed = required | {"name"} if tool else required
    if not required <= data.keys() <= allowed:
        raise ChunkRowError(f"{record['type']} row data keys must be {sorted(allowed)}")
    members_key = "args" if tool else "texts"
    return data, members_key


def _check_row_values(record: dict[str, Any], data: dict[str, Any], members: Any) -> None:
    ints = [record["seq0"], record["time0"], data["turn"], data["step"], data["index"]]
    if not all_safe_ints(ints):
        raise ChunkRowError("row seq0/time0/turn/step/index must be safe integers")
    if not isinstance(members, list) or not members or set(map(type, members)) != _STRS_ONLY:
        raise ChunkRowError("row members must be a non-empty list of strings")
    dt = data["dt"]
    if not isinstance(dt, list) or len(dt) != len(members) - 1 or not all_safe_ints(dt):
        raise ChunkRowError("row dt must hold len(members) - 1 safe integers")
    if "id" in data and not isinstance(data["id"], str):
        raise ChunkRowError("tool-call row id must be a string")
    if "name" in data and not isinstance(data["name"], str):
        raise ChunkRowError("tool-call row name must be a string")


def _chunk_head(data: dict[str, Any], delta_type: str) -> dict[str, Any]:
    """The keys every member's chunk shares, in DSH's key order (the member key comes last)."""
    chunk: dict[str, Any] = {"type": delta_type, "index": data["index"]}
    if delta_type == "tool-call-delta":
        chunk["id"] = data["id"]
        if "name" in data:
            chunk["name"] = data["name"]
    return chunk


def _decode_row(record: dict[str, Any]) -> tuple[list[int], dict[str, Any], str, list[str]]:
    """Check a row whole: the member times, the shared chunk keys, the member key, the members."""
    data, members_key = _check_row_shape(record)
    members = data[members_key]
    _check_row_values(record, data, members)
    times = list(accumulate(data["dt"], initial=record["time0"]))
    # The times are ints already (sums of safe integers); only their range is left to check.
    if record["seq0"] + len(members) - 1 > MAX_SAFE_INTEGER or not (
        min(times) >= -MAX_SAFE_INTEGER and max(times) <= MAX_SAFE_INTEGER
    ):
        raise ChunkRowError("expanded seq/time leaves the safe integer range")
    delta_type = ROW_TAGS[record["type"]]
    member_key = "argumentsDelta" if delta_type == "tool-call-delta" else "text"
    return times, _chunk_head(data, delta_type), member_key, members


def expand_row(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The `assistant/chunk` event records a packed row stands for, in seq order."""
    times, head, member_key, members = _decode_row(record)
    seq0 = record["seq0"]
    turn, step = record["data"]["turn"], record["data"]["step"]
    return [
        {
            "type": "assistant/chunk",
            "seq": seq,
            "time": time,
            "data": {"turn": turn, "step": step, "chunk": {**head, member_key: member}},
        }
        for seq, time, member in zip(range(seq0, seq0 + len(members)), times, members, strict=True)
    ]


def expand_row_events(record: dict[str, Any]) -> list[SessionEvent]:
    """`expand_row` as checked events: what `check_event` would make of each expanded record.

    The row is validated once, as a whole; its members are then valid by construction (an
    `assistant/chunk` without surface fields, with safe-integer seq and time, no payload
    rule), so each is built without a per-event check. The one rule a row cannot settle
    alone is a non-negative seq: the caller must check `seq0` against the seq it expects
    (the scanner's seq-gap rule) before it uses the events.
    """
    times, head, member_key, members = _decode_row(record)
    data = record["data"]
    return chunk_events(record["seq0"], times, data["turn"], data["step"], head, member_key, members)


def skim_row(record: dict[str, Any]) -> list[Skimmed]:
    """`expand_row_events` for a skimming read: the row checked whole, its members `Skimmed`."""
    _, _, _, members = _decode_row(record)
    seq0 = record["seq0"]
    # `tuple.__new__`, not the named tuple's Python-level constructor: rows hold most events.
    new = tuple.__new__
    return [new(Skimmed, ("assistant/chunk", seq, None)) for seq in range(seq0, seq0 + len(members))]


def _packable_kind(event: dict[str, Any]) -> str | None:
    """The row tag an event could join, or None when it must stay a plain record."""
    if event.get("type") != "assistant/chunk" or set(event) != {"type", "seq", "time", "data"}:
        return None
    data = event["data"]
    if not isinstance(data, dict) or set(data) != {"turn", "step", "chunk"}:
        return None
    chunk = data["chunk"]
    if not isinstance(chunk, dict) or not _is_safe_int(event["time"]):
        return None
    row = _DELTA_TAGS.get(str(chunk.get("type")))
    if row is None:
        return None
    if row == "tool-call-chunks":
        allowed = {_TOOL_CHUNK_KEYS, _TOOL_CHUNK_KEYS | {"name"}}
        member_ok = isinstance(chunk.get("argumentsDelta"), str) and isinstance(chunk.get("id"), str)
    else:
        allowed = {_TEXT_CHUNK_KEYS}
        member_ok = isinstance(chunk.get("text"), str)
    if frozenset(chunk) not in allowed or not member_ok:
        return None
    if not all(_is_safe_int(data[k]) for k in ("turn", "step")) or not _is_safe_int(chunk["index"]):
        return None
    return row


def _run_key(event: dict[str, Any]) -> tuple[Any, ...]:
    data = event["data"]
    chunk = data["chunk"]
    return (data["turn"], data["step"], chunk["index"], chunk.get("id"), "name" in chunk, chunk.get("name"))


def _build_row(kind: str, run: list[dict[str, Any]]) -> dict[str, Any]:
    first = run[0]["data"]
    chunk = first["chunk"]
    data: dict[str, Any] = {"turn": first["turn"], "step": first["step"], "index": chunk["index"]}
    if kind == "tool-call-chunks":
        data["id"] = chunk["id"]
        if "name" in chunk:
            data["name"] = chunk["name"]
    data["dt"] = [b["time"] - a["time"] for a, b in zip(run, run[1:], strict=False)]
    member = "argumentsDelta" if kind == "tool-call-chunks" else "text"
    data["args" if kind == "tool-call-chunks" else "texts"] = [e["data"]["chunk"][member] for e in run]
    return {"type": kind, "seq0": run[0]["seq"], "time0": run[0]["time"], "data": data}


def pack_chunk_runs(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Replace every run of >= 3 packable same-block deltas with one row (DSH's `packChunkRuns`)."""
    out: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []
    run_kind: str | None = None

    def flush() -> None:
        if len(run) >= MIN_PACKED_RUN and run_kind is not None:
            out.append(_build_row(run_kind, run))
        else:
            out.extend(run)
        run.clear()

    for record in records:
        kind = _packable_kind(record)
        continues = (
            kind is not None
            and kind == run_kind
            and run
            and record["seq"] == run[-1]["seq"] + 1
            and _run_key(record) == _run_key(run[-1])
        )
        if not continues:
            flush()
            run_kind = kind
        if kind is None:
            out.append(record)
        else:
            run.append(record)
    flush()
    return out
