"""Zstandard framing of `session.jsonl.zstd`: one standard frame per durable write.

DSH frames carry a content checksum and no content-size field, which python-zstandard's
one-shot API refuses, so frames are delimited here by walking the frame and block headers,
then each frame is decoded alone (libzstd verifies the checksum while decoding).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import zstandard

from ..limits import SESSION_LOG_MAX_BYTES

FRAME_MAGIC = b"\x28\xb5\x2f\xfd"
COMPRESSION_LEVEL = 3  # zstd's (and node:zlib's) default level
_DICT_ID_SIZES = (0, 1, 2, 4)
_BLOCK_HEADER_SIZE = 3
_CHECKSUM_SIZE = 4
_RLE_BLOCK, _RESERVED_BLOCK = 1, 3


class FrameError(ValueError):
    """A frame that is present in full but cannot be trusted."""


@dataclass(frozen=True)
class FrameSpan:
    """A complete frame's byte range in the file."""

    start: int
    end: int


@dataclass(frozen=True)
class FrameSplit:
    """Complete frames in order, then the start of a structurally incomplete last frame."""

    frames: list[FrameSpan]
    torn_start: int | None


def _header_size(data: bytes | memoryview, start: int) -> int | None:
    """Bytes of the frame header at `start`, or None if the data ends inside it."""
    if len(data) < start + 5:
        return None
    descriptor = data[start + 4]
    if descriptor & 0x08:
        raise FrameError(f"frame at byte {start}: reserved header bit is set")
    content_size_flag = descriptor >> 6
    single_segment = bool(descriptor & 0x20)
    content_size_bytes = (1 if single_segment else 0, 2, 4, 8)[content_size_flag]
    window_bytes = 0 if single_segment else 1
    return 5 + window_bytes + _DICT_ID_SIZES[descriptor & 0x03] + content_size_bytes


def starts_frame(data: bytes | memoryview, start: int = 0) -> bool:
    """Whether the bytes at `start` can begin a frame (a frame cut inside its magic included)."""
    return FRAME_MAGIC.startswith(bytes(data[start : start + len(FRAME_MAGIC)]))


def _frame_end(data: bytes | memoryview, start: int) -> int | None:
    """End offset of the frame starting at `start`, or None when the data ends inside it."""
    if not starts_frame(data, start):
        raise FrameError(f"bytes at {start} are not a zstd frame (bad magic; skippable frames are refused)")
    header = _header_size(data, start)
    if header is None:
        return None
    has_checksum = bool(data[start + 4] & 0x04)
    pos = start + header
    while True:
        if len(data) < pos + _BLOCK_HEADER_SIZE:
            return None
        block = data[pos] | (data[pos + 1] << 8) | (data[pos + 2] << 16)
        last, block_type, size = block & 1, (block >> 1) & 3, block >> 3
        if block_type == _RESERVED_BLOCK:
            raise FrameError(f"frame at byte {start}: reserved block type")
        pos += _BLOCK_HEADER_SIZE + (1 if block_type == _RLE_BLOCK else size)
        if last:
            break
    pos += _CHECKSUM_SIZE if has_checksum else 0
    return pos if pos <= len(data) else None


def split_frames(data: bytes | memoryview) -> FrameSplit:
    """Delimit every frame; only the last one may be cut short (a torn append)."""
    frames: list[FrameSpan] = []
    pos = 0
    while pos < len(data):
        end = _frame_end(data, pos)
        if end is None:
            return FrameSplit(frames, pos)
        frames.append(FrameSpan(pos, end))
        pos = end
    return FrameSplit(frames, None)


_CHUNK = 64 * 1024  # plaintext per read of a frame: a small frame allocates no more than it needs
_TORN_FEED = 1024  # input bytes per step of a torn frame's decode: at most ~32 MiB of output


class TooLarge(ValueError):
    """A frame whose plaintext is more than the caller allows (a bomb, or a log past its cap)."""


def decode_frame(frame: bytes | memoryview, limit: int = SESSION_LOG_MAX_BYTES) -> bytes:
    """Decompress one complete frame, verifying its checksum (libzstd does, at the frame's
    end); `TooLarge` past `limit` plaintext bytes, of which at most one more chunk is held."""
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(frame), read_across_frames=False)
    parts, total = [], 0
    try:
        while chunk := reader.read(_CHUNK):
            total += len(chunk)
            if total > limit:
                raise TooLarge(f"it decompresses to more than {limit} bytes")
            parts.append(chunk)
    except zstandard.ZstdError as exc:
        raise FrameError(str(exc)) from exc
    return b"".join(parts)


def decode_torn_frame(partial: bytes | memoryview, limit: int = SESSION_LOG_MAX_BYTES) -> bytes:
    """Whatever plaintext a flush-mode decode of an incomplete frame yields (maybe nothing), up
    to `limit` bytes; fed a little at a time, so a bomb stops near the limit."""
    decoder = zstandard.ZstdDecompressor().decompressobj()
    out = bytearray()
    try:
        for at in range(0, len(partial), _TORN_FEED):
            out += decoder.decompress(bytes(partial[at : at + _TORN_FEED]))
            if len(out) > limit:
                raise TooLarge(f"its torn last frame decompresses to more than {limit} bytes")
    except zstandard.ZstdError:
        return b""
    return bytes(out)


def encode_frame(plaintext: bytes) -> bytes:
    """One DSH-style frame: default level, content checksum, no content-size field."""
    compressor = zstandard.ZstdCompressor(
        level=COMPRESSION_LEVEL, write_checksum=True, write_content_size=False
    )
    return compressor.compress(plaintext)
