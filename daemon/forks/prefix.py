"""A raw log's seed as bytes: the lines from the header to the cut, found without a full parse.

Forking a 50 MB log by parsing and re-encoding every event costs seconds; the index already
holds the validated projection, so only the cut's `turn/start` line has to be located — by
searching for its type and parsing just the candidate lines.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..sessions.reader import stat_revision

_TURN_START = b'"turn/start"'


def raw_seed_lines(
    path: Path, revision: str, seed_length: int, last_seq: int, committed_end: int
) -> memoryview | None:
    """The parent's lines of events `[0, seed_length)`, or None when the log is not at `revision`."""
    with open(path, "rb") as handle:
        if stat_revision(os.fstat(handle.fileno())) != revision:
            return None
        data = handle.read(committed_end)
        if stat_revision(os.fstat(handle.fileno())) != revision or len(data) != committed_end:
            return None
    header_end = data.index(b"\n") + 1
    end = committed_end if seed_length == last_seq + 1 else _turn_start_line(data, header_end, seed_length)
    # A view, not a slice: the seed of a large log is written out without another copy.
    return memoryview(data)[header_end:end] if end is not None else None


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
