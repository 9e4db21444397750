"""The line scanner of DSH's `scanLog`: logical bytes -> seq-contiguous event records.

A log is append-only and a crash can only damage its end, so the scanner finds the committed
prefix: the lines before the first torn or bad line. A bad line is only forgivable when nothing
after it could have been a later durable write; a `turn/end` after it proves that later
batches were committed, so the log is corrupt instead (format.ts L272-378).

A scan either holds every record it finds (`ScanResult.records`) or, given a `sink`, hands
them over in batches as it goes, so a reader that folds them (a listing's projection) holds a
batch at a time. `SESSION_EVENTS_MAX` bounds the events held at once: all of them, or one
batch (and one packed row, which expands at once) when streaming.

A skimming scan decodes a window of lines in one msgspec call, each line into the struct of
its type (`envelopes`), which proves its envelope and, with its judge, its payload rules; a
bare line then costs a seq comparison. A line the structs refuse, and every line of a window
that is not one object per line, takes the line-by-line path, which owns every error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from ..limits import SESSION_EVENTS_MAX, SESSION_LINE_MAX_BYTES, size_text
from .checks import BARE_TYPES, checked_bare_event
from .chunks import ROW_TAGS, ChunkRowError, expand_row_events, skim_row
from .decode import TypedLine, decode_line, parse_json
from .envelopes import LineUnion, Note, decode_window, union_for
from .models import MAX_SAFE_INTEGER, SessionEvent, Skimmed

TURN_END_TEXT = b'"turn/end"'
_CHUNK = "assistant/chunk"  # the type of a packed row's members
SINK_BATCH = 4096  # records handed to a sink at once: large enough to amortise the call
# Lines are decoded a window at a time, so a scan that streams holds a window's structs.
ENVELOPE_WINDOW_BYTES = 1 << 20


class CorruptLog(ValueError):
    """The log cannot be used at all; the message says where and why."""


class _BadLine(ValueError):
    """A complete line the scanner cannot accept (ends the committed prefix)."""


class _Envelope(msgspec.Struct, forbid_unknown_fields=True):
    """A bare event line, its payload checked as JSON but not built."""

    type: str
    seq: int
    time: int
    data: msgspec.Raw


_envelope = TypedLine(_Envelope)


Record = dict[str, Any] | SessionEvent | Skimmed
Sink = Callable[[list[Record]], None]


def _no_note(seq: int, message_id: str) -> None:
    pass


@dataclass(frozen=True)
class ScanResult:
    # In seq order: the checked events of plain lines and packed rows (valid by construction),
    # and the records of the plain lines still to be upgraded and checked (`_decode_line`);
    # with a sink, only those it was not handed yet.
    records: list[Record]
    count: int  # events scanned, those handed to the sink included
    end: int  # buffer offset just past the last committed line
    stop: str | None  # why the committed prefix ends before the buffer does


def _is_seq(value: Any, expected: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value == expected


def _parse_line(line: bytes, line_no: int) -> Any:
    """`decode_line(line)`, with the scanner's errors."""
    try:
        return decode_line(line)
    except UnicodeDecodeError as exc:
        raise CorruptLog(f"line {line_no} is not valid UTF-8 (byte {exc.start} of the line)") from None
    except ValueError as exc:
        raise _BadLine(f"line {line_no} is not valid JSON ({exc})") from None


_TYPE_FIRST = b'{"type":"'
_BARE_TYPE_BYTES = frozenset(t.encode() for t in BARE_TYPES)
_new_tuple = tuple.__new__


def _skim(line: bytes, expected_seq: int, keep: frozenset[str]) -> Skimmed | None:
    """The line as a `Skimmed` event when it is a bare record of `BARE_TYPES`, which
    `_decode_line` would take as it is (`checked_bare_event`); None sends it the general way."""
    # DSH writes the type first: a line that is plainly of another type is not decoded twice.
    if line.startswith(_TYPE_FIRST) and line[9 : line.find(b'"', 9)] not in _BARE_TYPE_BYTES:
        return None
    envelope = _envelope(line)
    return None if envelope is None else _skimmed(envelope, expected_seq, keep)


def _skimmed(envelope: _Envelope, expected_seq: int, keep: frozenset[str]) -> Skimmed | None:
    """The `Skimmed` event of a bare line's envelope, or None when it is not one of `BARE_TYPES`."""
    kind, seq, time = envelope.type, envelope.seq, envelope.time
    # The seq equals a count of events, so it is a non-negative safe integer.
    if kind not in BARE_TYPES or seq != expected_seq or abs(time) > MAX_SAFE_INTEGER:
        return None
    try:
        data = decode_line(bytes(envelope.data)) if kind in keep else None
    except ValueError:  # not expected of JSON msgspec checked; the general path would say why
        return None
    return _new_tuple(Skimmed, (kind, expected_seq, data))


def _decode_line(
    line: bytes, line_no: int, expected_seq: int, keep: frozenset[str] | None, held: int, *, skim: bool = True
) -> SessionEvent | Skimmed | dict[str, Any] | list[SessionEvent] | list[Skimmed]:
    """A plain line's checked event or, when it needs more than the scanner knows (an upgrade,
    the session id, a payload rule), its record; or the checked events of a packed row. When
    skimming (`keep` given), a bare line is a `Skimmed` event (`skim`: unless the caller knows
    it is none). `held` events are held already."""
    if keep is not None and skim:
        skimmed = _skim(line, expected_seq, keep)
        if skimmed is not None:
            return skimmed
    record = _parse_line(line, line_no)
    if not isinstance(record, dict):
        raise _BadLine(f"line {line_no} is not a JSON object")
    kind = record.get("type")
    if isinstance(kind, str) and kind in ROW_TAGS:  # `is_chunk_row`
        _within_events_cap(held + _row_members(record), line_no)  # before a member is built
        try:
            events = expand_row_events(record) if keep is None else skim_row(record)
        except ChunkRowError as exc:
            raise _BadLine(f"line {line_no}: malformed packed row: {exc}") from None
        # The seq-gap rule is also what makes the events' seqs non-negative (their one
        # envelope rule a row cannot settle alone), so they need no further check.
        if events[0].seq != expected_seq:
            raise _BadLine(f"line {line_no}: seq gap (expected seq {expected_seq}, found {events[0].seq!r})")
        return events
    seq = record.get("seq")
    if not (seq.__class__ is int and seq == expected_seq) and not _is_seq(seq, expected_seq):
        raise _BadLine(f"line {line_no}: seq gap (expected seq {expected_seq}, found {seq!r})")
    # Checked while the record is still in the CPU cache; an event that needs more (or fails a
    # check) stays a record, for the reader's upgrade and check pass to handle in seq order.
    event = checked_bare_event(record)
    return record if event is None else event


def _row_members(record: dict[str, Any]) -> int:
    """How many events a packed row claims to stand for (its shape is checked later)."""
    data = record.get("data")
    members = (
        data.get("args" if record["type"] == "tool-call-chunks" else "texts")
        if isinstance(data, dict)
        else None
    )
    return len(members) if isinstance(members, list) else 0


def _within_events_cap(count: int, line_no: int) -> None:
    if count > SESSION_EVENTS_MAX:
        raise CorruptLog(
            f"the log holds more than {SESSION_EVENTS_MAX} events (line {line_no}); remem reads "
            f"logs of up to {SESSION_EVENTS_MAX} events (SESSION_EVENTS_MAX)"
        )


def _has_turn_end(line: bytes) -> bool:
    if TURN_END_TEXT not in line:
        return False
    try:
        record = parse_json(line)
    except ValueError:
        return True  # unparsable: DSH cannot rule out a turn/end either
    return isinstance(record, dict) and record.get("type") == "turn/end"


def _turn_end_after(buf: bytes, pos: int, line_no: int) -> int | None:
    """Line number of the first line at or after `pos` that holds a turn/end."""
    while pos < len(buf):
        nl = buf.find(b"\n", pos)
        end = len(buf) if nl < 0 else nl
        if _has_turn_end(buf[pos:end]):
            return line_no
        pos, line_no = end + 1, line_no + 1
    return None


@dataclass
class _Skimming:
    """How a skimming scan takes a run of a window's decoded lines (`envelopes`)."""

    union: LineUnion
    keep: frozenset[str]
    sink: Sink | None
    note: Note
    held_before: int  # events the caller holds, for the cap

    def run(
        self, lines: list[Any], first: int, first_line: int, seq: int, records: list[Record]
    ) -> tuple[int, int, list[Record]]:
        """Take `lines[first:]` (`lines[0]` is line `first_line`) until a line needs the general
        path: the index of that line (or `len(lines)`), the next seq and the records held."""
        ways, keep, note, sink = self.union.ways, self.keep, self.note, self.sink
        every = sink is None  # every event, or (folding) the kept ones and the last
        members = every or _CHUNK in keep
        append, extend = records.append, records.extend
        cap, before = SESSION_EVENTS_MAX, self.held_before
        # One comparison per line: a batch to hand over, or (never expected) the events cap.
        limit = min(cap - before + 1, SINK_BATCH if sink is not None else cap)
        index, count = first, len(lines)
        while index < count:
            decoded = lines[index]
            way = ways[decoded.__class__]
            if way.__class__ is str:  # a plain line's type
                if decoded.seq != seq:
                    break
                seq += 1
                index += 1
                if not every:
                    continue
                append(_new_tuple(Skimmed, (way, seq - 1, None)))
            else:
                item = way(decoded, seq, cap - before - len(records), note)  # type: ignore[operator]
                if item is None:
                    break
                index += 1
                if item.__class__ is int:  # a packed row's members
                    if members:
                        extend([_new_tuple(Skimmed, (_CHUNK, q, None)) for q in range(seq, seq + item)])
                    seq += item
                else:
                    if every or item.type in keep:  # type: ignore[union-attr]
                        append(item)  # type: ignore[arg-type]
                    seq += 1
            if len(records) >= limit:
                if sink is not None and len(records) >= SINK_BATCH:
                    sink(records)
                    records = []
                    append, extend = records.append, records.extend
                _within_events_cap(before + len(records), first_line + index - 1)
        if not every and index > first:  # the run's last event, for the fold's last seq
            last = self.union.kinds[lines[index - 1].__class__]
            if last not in keep:
                append(_new_tuple(Skimmed, (last, seq - 1, None)))
        return index, seq, records


def scan_records(
    buf: bytes,
    start: int,
    first_seq: int,
    first_line: int,
    *,
    strict: bool,
    keep: frozenset[str] | None = None,
    sink: Sink | None = None,
    note: Note = _no_note,
) -> ScanResult:
    """Scan `buf[start:]`; `strict` (complete zstd frames) turns every defect into corruption.

    `keep` skims: bare events become `Skimmed`, with their payload only for the types in it,
    and so do the other events a window's structs prove (`envelopes`), whose current
    tool/results are told to `note`. `sink` is handed the records in batches (the result
    keeps the last, unhanded ones, for the caller to hand over before it scans on); without
    one, every event since the log's first is held. A skimming scan with a sink leaves out
    the events it proves of the types `keep` leaves out, all but the last it scans: the sink
    is a fold that reads only the kept types' payloads, and the last seq.
    """
    records: list[Record] = []
    append, extend, find, size = records.append, records.extend, buf.find, len(buf)
    pos, line_no, seq = start, first_line, first_seq
    held_before = 0 if sink is not None else first_seq  # events held by the caller, for the cap
    skimming = None if keep is None else _Skimming(union_for(keep), keep, sink, note, held_before)
    ascii = skimming is not None and buf.isascii()
    # The window's decoded lines (from line `lines_line`, ending at `lines_end`); the lines
    # before `slow_until` that none of them covers, and the `refused` one, take the general path.
    lines: list[Any] = []
    lines_line, lines_end, window_end, slow_until, refused = line_no, start, start, line_no, -1
    while pos < size:
        nl = find(b"\n", pos)
        if nl < 0:
            if strict:
                raise CorruptLog(f"line {line_no} is not newline-terminated inside a complete frame")
            return ScanResult(records, seq - first_seq, pos, f"line {line_no} is torn (no final newline)")
        if nl - pos > SESSION_LINE_MAX_BYTES:
            raise CorruptLog(
                f"line {line_no} is {nl - pos} bytes; remem reads session log lines of up to "
                f"{size_text(SESSION_LINE_MAX_BYTES)} (SESSION_LINE_MAX_BYTES)"
            )
        if skimming is not None and line_no != refused:
            first = line_no - lines_line
            if first >= len(lines) and line_no >= slow_until:
                if pos >= window_end:
                    window_end = max(buf.rfind(b"\n", pos, pos + ENVELOPE_WINDOW_BYTES), nl) + 1
                # A window of one line past the line cap was refused above; any other fits it.
                window = decode_window(skimming.union, buf, pos, window_end, ascii)
                lines, lines_line, lines_end, first = window.lines, line_no, window.end, 0
                slow_until = line_no + len(window.lines) + window.slow
            if first < len(lines):
                index, seq, records = skimming.run(lines, first, lines_line, seq, records)
                append, extend = records.append, records.extend
                if index == len(lines):
                    pos = lines_end
                else:  # a judge sends this line the general way
                    refused = lines_line + index
                    lines[index] = None  # which decodes it afresh: its struct (maybe MBs) can go
                    for _ in range(index - first):
                        pos = find(b"\n", pos) + 1
                line_no = lines_line + index
                continue
        try:
            held = held_before + len(records)
            decoded = _decode_line(buf[pos:nl], line_no, seq, keep, held, skim=line_no != refused)
            if isinstance(decoded, list):
                extend(decoded)
                seq += len(decoded)
            else:
                append(decoded)
                seq += 1
        except _BadLine as bad:
            if strict:
                raise CorruptLog(str(bad)) from None
            later = _turn_end_after(buf, pos, line_no)
            if later is not None:
                raise CorruptLog(f"{bad}, but line {later} holds a turn/end written after it") from None
            return ScanResult(records, seq - first_seq, pos, str(bad))
        if sink is not None and len(records) >= SINK_BATCH:
            sink(records)
            records = []
            append, extend = records.append, records.extend
        _within_events_cap(held_before + len(records), line_no)
        pos, line_no = nl + 1, line_no + 1
    return ScanResult(records, seq - first_seq, pos, None)
