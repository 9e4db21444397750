"""Splitting a JSONL file into decoded records, turning every bad line into a `Problem`.

A harness appends whole lines, so a last line without its newline that does not decode is a
write in progress (`torn-tail`, ignored, not an error); any other undecodable line — not JSON,
not UTF-8, not an object, not the record shape, or longer than `MAX_LINE` — is skipped with its
line number and the decoder's reason. Nothing raises.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgspec

from .model import Problem

MAX_LINE = 64 * 1024 * 1024  # bytes; a longer line is skipped (pasted images stay far below)
_BLOCK = 1 << 20

T = TypeVar("T")


class Fields(msgspec.Struct):
    """A decoded object read like a dict. Only declared fields are decoded: a harness line's
    bulk (tool output, file contents, compacted history) is skipped, never built."""

    def get(self, key: str, default: Any = None) -> Any:
        value = getattr(self, key, None)
        return default if value is None else value


@dataclass(frozen=True)
class Line(Generic[T]):
    number: int  # 1-based
    offset: int  # byte offset of the line's start
    record: T


def records(data: bytes, shape: type[T], problems: list[Problem]) -> Iterator[Line[T]]:
    """The records of `data` decoded as `shape`, in file order; defects go to `problems`."""
    decoder = msgspec.json.Decoder(shape)
    offset, number, size = 0, 0, len(data)
    while offset < size:
        newline = data.find(b"\n", offset)
        end = size if newline < 0 else newline
        number += 1
        start, offset = offset, end + 1
        if end - start > MAX_LINE:
            problems.append(
                Problem(number, "too-long", f"line {number} is {end - start} bytes, over {MAX_LINE}")
            )
            continue
        raw = data[start:end].strip()
        if not raw:
            continue
        try:
            yield Line(number, start, decoder.decode(raw))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            if newline < 0:
                problems.append(
                    Problem(number, "torn-tail", f"line {number} is being written (no newline yet)")
                )
            else:
                code = "bad-record" if isinstance(exc, msgspec.ValidationError) else "not-json"
                problems.append(Problem(number, code, f"line {number}: {exc}"))


def end_of_line(data: bytes, number: int) -> int:
    """The byte offset just after line `number` (1-based; 0 is the start) of `data`."""
    # Whole blocks are skipped by counting their newlines (in C), not by finding each one.
    at, left = 0, number
    while left and at < len(data):
        block = data.count(b"\n", at, at + _BLOCK)
        if block >= left:
            break
        at, left = at + _BLOCK, left - block
    for _ in range(left):
        newline = data.find(b"\n", at)
        if newline < 0:
            return len(data)
        at = newline + 1
    return min(at, len(data))
