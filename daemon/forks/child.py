"""The child of a fork: its id, header, seed and title, encoded exactly as DSH would write it."""

from __future__ import annotations

import uuid

from ..sessions.errors import OperationError
from ..sessions.lineage import DEFAULT_TITLE_COUNTER, SHORTENED
from ..sessions.models import SessionEvent, SessionHeader
from ..sessions.paths import Encoding
from ..sessions.writer import encode_batch, encode_log, json_line
from .cut import Cut

# Fixed namespace: the same operation id names the same child in every process, forever.
_CHILD_NAMESPACE = uuid.UUID("5b1f3c7e-2a4d-5e8f-9c10-72656d656d66")
TITLE_MAX_BYTES = 80


def child_id(operation_id: str) -> str:
    return f"session-{uuid.uuid5(_CHILD_NAMESPACE, operation_id)}"


def next_title(parent_title: str) -> str:
    """DSH's client rule: a trailing `(N)` (or full-width `（N）`) becomes `(N+1)`, else ` (1)`,
    within DSH's 80 bytes. A stem too long for its counter is shortened, ending in `…`, so the
    counter always shows: DSH's own rename would cut the counter off, and the child would read
    exactly as its parent (decision 0379)."""
    match = DEFAULT_TITLE_COUNTER.match(parent_title)
    if match is None:
        stem, counter = parent_title, " (1)"
    else:
        stem, opening, number, closing = match.groups()
        counter = f" {opening}{int(number) + 1}{closing}"
    stem = normalize_title(stem)
    room = TITLE_MAX_BYTES - len(counter.encode("utf-8"))
    if len(stem.encode("utf-8")) > room:
        kept = stem.encode("utf-8")[: room - len(SHORTENED.encode("utf-8"))]
        stem = kept.decode("utf-8", errors="ignore").rstrip() + SHORTENED
    return stem + counter


def given_title(title: str) -> str:
    """A title a user gave, normalized; refused (`INVALID`) when nothing of it is left."""
    normalized = normalize_title(title)
    if not normalized:
        raise OperationError("INVALID", "the title is empty once control characters and blanks are removed")
    return normalized


def normalize_title(title: str) -> str:
    """Controls stripped, whitespace collapsed, trimmed and capped at 80 UTF-8 bytes, as DSH does."""
    text = " ".join("".join(ch for ch in title if ch.isprintable() or ch.isspace()).split())
    data = text.encode("utf-8")[:TITLE_MAX_BYTES]
    return data.decode("utf-8", errors="ignore").strip()


def seed_tail(seed_length: int, seed_has_marker: bool, title: str | None, now_ms: int) -> list[SessionEvent]:
    """What follows the seed: the seed marker (unless the seed ends with one), then the title."""
    events = []
    if not seed_has_marker:
        events.append(SessionEvent(type="session/end-seed", seq=seed_length, time=now_ms, data={}))
    if title:
        data = {"title": title, "messageSeqs": [], "source": {"kind": "user"}}
        events.append(
            SessionEvent(type="session/title", seq=seed_length + len(events), time=now_ms, data=data)
        )
    return events


def child_header(source: SessionHeader, child: str, cut: Cut, now_ms: int) -> SessionHeader:
    return SessionHeader(
        id=child,
        createdAt=now_ms,
        cwd=source.cwd,
        parentSession=source.id,
        seedLength=cut.seed_length,
        delegationDepth=0,
        agentPreset=source.agentPreset,
    )


def child_bytes(
    header: SessionHeader, events: list[SessionEvent], encoding: Encoding
) -> list[bytes | memoryview]:
    return [encode_log(header, encode_batch(events), encoding)]


def seeded_child_parts(
    header: SessionHeader, seed_lines: memoryview, tail: list[SessionEvent], encoding: Encoding
) -> list[bytes | memoryview]:
    """A child whose seed is the parent's own lines, byte for byte (packing included); a zstd
    child holds them with the tail in its first batch frame, as `child_bytes` would."""
    if encoding is Encoding.ZSTD:
        return [encode_log(header, b"".join((seed_lines, encode_batch(tail))), encoding)]
    return [json_line(header.to_record()), seed_lines, encode_batch(tail)]
