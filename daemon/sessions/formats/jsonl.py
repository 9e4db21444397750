"""Splitting a JSONL file into decoded records, turning every bad line into a `Problem`.

A harness appends whole lines, so a last line without its newline that does not decode is a
write in progress (`torn-tail`, ignored, not an error); any other undecodable line — not JSON,
not UTF-8, not an object, not the record shape, nested too deep, or longer than `MAX_LINE` — is
skipped with its line number and the decoder's reason. Nothing raises.

A file whose every line is one object, as harnesses write them, is decoded in one msgspec
call; any other file, or one that call refuses, is decoded line by line, which owns every
problem, so both paths give the same records.

`read_bounded` reads an open file for them, refusing it at the first line longer than the cap
instead of holding a line of any size in memory.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, BinaryIO, Generic, NamedTuple, TypeVar

import msgspec

from ...limits import HARNESS_LINE_MAX_BYTES
from .model import Problem

MAX_LINE = HARNESS_LINE_MAX_BYTES  # a module attribute, so a test can lower it
_BLOCK = 1 << 20
_OPEN, _CLOSE = ord("{"), ord("}")

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)  # a line of a record is a line of its base record


class Fields(msgspec.Struct):
    """A decoded object read like a dict. Only declared fields are decoded: a harness line's
    bulk (tool output, file contents, compacted history) is skipped, never built."""

    def get(self, key: str, default: Any = None) -> Any:
        value = getattr(self, key, None)
        return default if value is None else value


if TYPE_CHECKING:

    class Line(NamedTuple, Generic[T_co]):
        number: int  # 1-based
        record: T_co

else:  # a generic NamedTuple needs Python 3.11; at run time one class holds every shape

    class Line(NamedTuple):
        number: int  # 1-based
        record: object


_DECODERS: dict[type[Any], msgspec.json.Decoder[Any]] = {}
# A Line from a (number, record) pair built in C: Line._make and Line() run Python per line.
_LINE: Callable[[tuple[int, Any]], Line[Any]] = partial(tuple.__new__, Line)


@dataclass(frozen=True)
class Records(Generic[T_co]):
    """A file's decoded lines, and how many newline characters it holds (its line count, less
    one when its last line has none): counted on the way, so no caller scans the file again."""

    lines: list[Line[T_co]]
    newlines: int


def records(data: bytes, shape: type[T], problems: list[Problem], first: int = 1) -> Records[T]:
    """The records of `data` decoded as `shape`, in file order; defects go to `problems`.
    `data` is the file from its line `first` on (what an append added, after `first - 1`)."""
    decoder = _DECODERS.get(shape) or _DECODERS.setdefault(shape, msgspec.json.Decoder(shape))
    unended = 1 if data and not data.endswith(b"\n") else 0
    whole = _whole_lines(data, decoder)
    if whole is not None:
        return Records(list(map(_LINE, enumerate(whole, start=first))), len(whole) - unended)
    lines, count = _each_line(data, decoder, problems, first - 1)
    return Records(lines, count - unended)


def _whole_lines(data: bytes, decoder: msgspec.json.Decoder[T]) -> list[T] | None:
    """Every line of `data` decoded in one call, or None when some line may not be exactly
    one good record (then only the line-by-line path can say which, and why).

    `decode_lines` takes whitespace-separated values, not lines, so the values are lines only
    when every newline but a final one sits in a `}\n{`: JSON allows no raw newline in a
    string, and inside a value no `{` can follow a `}`, so each such newline ends a top-level
    value, and as many values as lines leaves none holding two.
    """
    if not data.startswith(b"{") or not data.endswith((b"}", b"}\n")) or len(data) > MAX_LINE:
        return None
    lines = _object_lines(data)
    if lines is None:
        return None
    try:
        decoded = decoder.decode_lines(data)
    except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
        return None
    return decoded if len(decoded) == lines else None


def _object_lines(data: bytes) -> int | None:
    """How many lines `data` has when every newline but a final one sits in a `}\n{`, else None.

    Each newline is found with `find` (memchr) and its neighbours looked at: harness lines are
    hundreds of bytes or more, so this costs a fraction of `count(b"}\n{")`, whose multi-byte
    search steps through every byte."""
    last = len(data) - 1
    lines = 1
    at = data.find(b"\n")
    while 0 <= at < last:
        if data[at - 1] != _CLOSE or data[at + 1] != _OPEN:
            return None
        lines += 1
        at = data.find(b"\n", at + 1)
    return lines


def _each_line(
    data: bytes, decoder: msgspec.json.Decoder[T], problems: list[Problem], before: int
) -> tuple[list[Line[T]], int]:
    """The good lines of `data` (the file after its line `before`), decoded one by one, and how
    many lines it has."""
    lines: list[Line[T]] = []
    offset, number, size = 0, before, len(data)
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
            lines.append(Line(number, decoder.decode(raw)))
        except (msgspec.DecodeError, RecursionError) as exc:  # ValidationError is a DecodeError
            if newline < 0:
                problems.append(
                    Problem(number, "torn-tail", f"line {number} has no newline: being written, or torn")
                )
            else:
                problems.append(_bad_line(number, raw, exc))
    return lines, number - before


def _bad_line(number: int, raw: bytes, exc: Exception) -> Problem:
    if isinstance(exc, msgspec.ValidationError):
        return Problem(number, "bad-record", f"line {number}: {exc}")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        return Problem(number, "not-utf8", f"line {number} is not UTF-8 text (byte {bad.start}): {exc}")
    if raw.startswith(codecs.BOM_UTF8):  # an editor's save; msgspec only says "byte 0"
        return Problem(
            number, "not-json", f"line {number} begins with a UTF-8 byte-order mark, which JSON forbids"
        )
    return Problem(number, "not-json", f"line {number} is not JSON: {exc}")


class LineTooLong(Exception):
    """A file holds a line longer than the cap: it is refused whole, without reading that line."""

    def __init__(self, line: int, cap: int) -> None:
        self.reason = (
            f"line {line} is longer than {cap} bytes; no harness writes such a line, so the file "
            "is refused (it is damaged, or not a session)"
        )
        super().__init__(self.reason)


def read_bounded(stream: BinaryIO, cap: int | None = None, chunk: int = 1 << 20) -> bytes:
    """All of `stream`, unless a line in it is longer than `cap` bytes (default `MAX_LINE`):
    then `LineTooLong`, having held at most `cap` + `chunk` bytes of that line."""
    cap = MAX_LINE if cap is None else cap
    if os.fstat(stream.fileno()).st_size <= cap:
        return stream.read()  # no line can be longer than the whole file
    chunk = min(chunk, cap)
    blocks: list[bytes] = []
    line, run = 1, 0  # the line being read, and its bytes so far
    while block := stream.read(chunk):
        first = block.find(b"\n")
        if first < 0:
            run += len(block)
        else:
            if run + first > cap:
                raise LineTooLong(line, cap)
            line += block.count(b"\n")
            run = len(block) - block.rfind(b"\n") - 1  # lines inside a block are under `chunk`
        if run > cap:
            raise LineTooLong(line, cap)
        blocks.append(block)
    return b"".join(blocks)


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
