"""Frame splitting of concatenated DSH zstd frames (no content size, checksummed)."""

from __future__ import annotations

import pytest
import zstandard

from remem.daemon.sessions.zstd_frames import (
    FrameError,
    decode_frame,
    decode_torn_frame,
    encode_frame,
    split_frames,
)


def test_encode_frame_has_checksum_and_no_content_size() -> None:
    params = zstandard.get_frame_parameters(encode_frame(b"hello\n"))
    assert params.has_checksum and params.content_size == zstandard.CONTENTSIZE_UNKNOWN


def test_split_and_decode_concatenated_frames() -> None:
    parts = [b'{"h":1}\n', b"x" * 200_000 + b"\n", b""]
    data = b"".join(encode_frame(p) for p in parts)
    split = split_frames(data)
    assert split.torn_start is None
    assert [decode_frame(data[f.start : f.end]) for f in split.frames] == parts


def test_every_truncation_is_a_torn_last_frame() -> None:
    first, second = encode_frame(b"header\n"), encode_frame(b"line one\nline two\n" * 50)
    data = first + second
    for cut in range(1, len(data)):
        split = split_frames(data[:cut])
        complete = [f.end for f in split.frames]
        assert complete == ([len(first)] if cut >= len(first) else [])
        assert split.torn_start == (None if cut == len(first) else (len(first) if cut > len(first) else 0))


def test_bad_checksum_is_refused() -> None:
    frame = bytearray(encode_frame(b"payload\n"))
    frame[-1] ^= 0xFF
    with pytest.raises(FrameError, match="checksum"):
        decode_frame(bytes(frame))


def test_skippable_and_garbage_frames_are_refused() -> None:
    skippable = b"\x50\x2a\x4d\x18" + (4).to_bytes(4, "little") + b"abcd"
    with pytest.raises(FrameError, match="magic"):
        split_frames(encode_frame(b"a\n") + skippable)


def test_torn_frame_decodes_what_it_can() -> None:
    text = b"".join(b"line %d\n" % i for i in range(40000))
    frame = zstandard.ZstdCompressor(write_checksum=True, write_content_size=False).compressobj()
    data = (
        frame.compress(text)
        + frame.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
        + frame.compress(b"tail\n")
        + frame.flush()
    )
    partial = decode_torn_frame(data[:-10])
    assert text.startswith(partial) and len(partial) > 0
