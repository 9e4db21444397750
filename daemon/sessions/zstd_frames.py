"""Zstandard framing of `session.jsonl.zstd`: one standard frame per durable write.

DSH frames carry a content checksum and no content-size field, which python-zstandard's
one-shot API refuses, so frames are delimited here by walking the frame and block headers,
then each frame is decoded alone (libzstd verifies the checksum while decoding).
"""

from __future__ import annotations

from dataclasses import dataclass

import zstandard

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


def decode_frame(frame: bytes | memoryview) -> bytes:
    """Decompress one complete frame, verifying its checksum."""
    decoder = zstandard.ZstdDecompressor().decompressobj()
    try:
        out = decoder.decompress(bytes(frame))
    except zstandard.ZstdError as exc:
        raise FrameError(str(exc)) from exc
    if not decoder.eof:
        raise FrameError("frame ended before its last block decoded")
    return out


def decode_torn_frame(partial: bytes | memoryview) -> bytes:
    """Whatever plaintext a flush-mode decode of an incomplete frame yields (maybe nothing)."""
    decoder = zstandard.ZstdDecompressor().decompressobj()
    try:
        return decoder.decompress(bytes(partial))
    except zstandard.ZstdError:
        return b""


def encode_frame(plaintext: bytes) -> bytes:
    """One DSH-style frame: default level, content checksum, no content-size field."""
    compressor = zstandard.ZstdCompressor(
        level=COMPRESSION_LEVEL, write_checksum=True, write_content_size=False
    )
    return compressor.compress(plaintext)
