"""The caps on session logs remem reads but does not write, shared by every log reader.

A log is held in memory while it is read, so a hostile or broken one (a zstd bomb, one endless
line, millions of tiny events) could otherwise take the daemon's memory with it. Each cap is
far above any real log (decision 0141); past one, that log alone is refused with an error
naming the cap, and every other log is still read.
"""

from __future__ import annotations

MIB = 1024 * 1024
SESSION_LOG_MAX_BYTES = 64 * MIB  # a log's file, and its plaintext once decompressed
SESSION_LINE_MAX_BYTES = 8 * MIB  # one JSON line (one event, or one packed row of deltas)
SESSION_EVENTS_MAX = 150_000  # events in one log, packed rows expanded
# One Claude Code or Codex line: those harnesses inline pasted images as base64 in the line.
HARNESS_LINE_MAX_BYTES = 64 * MIB
# A Claude Code or Codex file, before a byte of it is read (a runaway file: real ones reach
# hundreds of MB), and its lines, before one is decoded (each costs the reader about 1 KB,
# however short): decision 0367.
HARNESS_FILE_MAX_BYTES = 1024 * MIB
HARNESS_LINES_MAX = 150_000


def size_text(size: int) -> str:
    """`size` bytes for an error message: whole MiB when it is that, else bytes."""
    return f"{size // MIB} MiB" if size % MIB == 0 else f"{size} bytes"
