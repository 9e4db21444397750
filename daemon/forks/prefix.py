"""A log's seed as bytes: the lines from the header to the cut, found without a full parse.

Forking a 50 MB log by parsing and re-encoding every event costs seconds, and would hold every
event at once; the index already holds the validated projection, so only the cut's
`turn/start` line has to be located — by searching for its type and parsing just the candidate
lines. A zstd log's frames are decompressed (within the plaintext cap) to find it the same way.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..limits import SESSION_LOG_MAX_BYTES
from ..sessions.paths import Encoding
from ..sessions.reader import ResumePoint, open_log, stat_revision
from ..sessions.zstd_frames import FrameError, TooLarge, decode_frame, split_frames

_TURN_START = b'"turn/start"'


def seed_lines(
    path: Path, encoding: Encoding, revision: str, seed_length: int, resume: ResumePoint
) -> memoryview | None:
    """The parent's lines of events `[0, seed_length)`, or None when they cannot be taken as
    bytes: the log is not at `revision` (the index's), or the seed reaches past the durable
    prefix (events salvaged from a torn zstd frame)."""
    if seed_length > resume.event_count:
        return None
    with os.fdopen(open_log(path), "rb") as handle:
        if stat_revision(os.fstat(handle.fileno())) != revision:
            return None
        data = handle.read(resume.file_offset)
        if stat_revision(os.fstat(handle.fileno())) != revision or len(data) != resume.file_offset:
            return None
    plain = data if encoding is Encoding.RAW else _plaintext(data)
    if plain is None:
        return None
    header_end = plain.index(b"\n") + 1
    whole = seed_length == resume.event_count
    end = len(plain) if whole else _turn_start_line(plain, header_end, seed_length)
    # A view, not a slice: the seed of a large log is written out without another copy.
    return memoryview(plain)[header_end:end] if end is not None else None


def _plaintext(data: bytes) -> bytes | None:
    """The logical bytes of a zstd log's complete frames (the index read them already)."""
    try:
        parts: list[bytes] = []
        size = 0
        for span in split_frames(data).frames:
            parts.append(decode_frame(memoryview(data)[span.start : span.end], SESSION_LOG_MAX_BYTES - size))
            size += len(parts[-1])
    except (FrameError, TooLarge):
        return None  # changed in place since it was indexed: the careful path says how
    return b"".join(parts)


def _turn_start_line(data: bytes, position: int, seq: int) -> int | None:
    """Offset of the line holding the `turn/start` with this seq (the text may also occur in content)."""
    while (hit := data.find(_TURN_START, position)) >= 0:
        line_start = data.rfind(b"\n", 0, hit) + 1
        line_end = data.find(b"\n", hit)
        record = json.loads(data[line_start:line_end])
        if isinstance(record, dict) and record.get("type") == "turn/start" and record.get("seq") == seq:
            return line_start
        position = line_end
    return None
