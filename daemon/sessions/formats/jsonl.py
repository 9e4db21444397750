"""Splitting a JSONL file into decoded records, turning every bad line into a `Problem`.

A harness appends whole lines, so a last line without its newline that does not decode is a
write in progress (`torn-tail`, ignored, not an error); any other undecodable line — not JSON,
not UTF-8, not an object, not the record shape, nested too deep, or longer than `MAX_LINE` — is
skipped with its line number and the decoder's reason. Nothing raises. UTF-8 is checked here,
for the whole line: msgspec checks only the bytes it decodes, so a line whose bad bytes lie in
a field the shape skips would otherwise be read, and refused later by whatever decodes it whole
(a fork's copy). A reader whose harness reads such a line with U+FFFD in place of its bad bytes
(Claude Code, `replace_bad_utf8`) has it read so instead, kept and flagged (`replaced-utf8`,
decision 0415). Past the first 50 problems of a kind, the rest are only counted
(`ProblemSink`): a file of a million bad lines costs its bytes, not a million reasons.

A file whose every line is one object, as harnesses write them, is decoded in one msgspec
call; any other file, or one that call refuses, is decoded line by line, which owns every
problem, so both paths give the same records.

`read_bounded` reads an open file for them, refusing it at the first line longer than the cap
instead of holding a line of any size in memory, and refusing a file past the caps on its
size and lines before its lines are decoded (decision 0367).
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, BinaryIO, Generic, NamedTuple, TypeVar

import msgspec

from ...limits import HARNESS_FILE_MAX_BYTES, HARNESS_LINE_MAX_BYTES, HARNESS_LINES_MAX, size_text
from ..decode import decode_mended
from .model import Problem, ProblemSink

MAX_LINE = HARNESS_LINE_MAX_BYTES  # module attributes, so a test can lower them
MAX_LINES = HARNESS_LINES_MAX
MAX_FILE = HARNESS_FILE_MAX_BYTES
_UTF8_WINDOW = 64 << 10  # checked as one str, which stays in cache (1 MiB ones took 13 times as long)
_BLOCK = 1 << 20
_FIRST_BLOCK = 1 << 12  # end_of_line's first count: a line or a few on
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


# What a line that is not UTF-8 but is read with U+FFFD in place of its bad bytes is flagged.
REPLACED_UTF8 = "replaced-utf8"


def records(
    data: bytes, shape: type[T], problems: list[Problem], first: int = 1, *, replace_bad_utf8: bool = False
) -> Records[T]:
    """The records of `data` decoded as `shape`, in file order; defects go to `problems`.
    `data` is the file from its line `first` on (what an append added, after `first - 1`).
    With `replace_bad_utf8`, a line that is not UTF-8 is decoded with U+FFFD in place of each
    bad sequence (as Python's and JavaScript's decoders replace them), kept and flagged
    `replaced-utf8`, instead of refused (`not-utf8`)."""
    decoder = _DECODERS.get(shape) or _DECODERS.setdefault(shape, msgspec.json.Decoder(shape))
    unended = 1 if data and not data.endswith(b"\n") else 0
    whole = _whole_lines(data, decoder)
    if whole is not None:
        return Records(list(map(_LINE, enumerate(whole, start=first))), len(whole) - unended)
    lines, count = _each_line(data, decoder, problems, first - 1, replace_bad_utf8)
    return Records(lines, count - unended)


def replaced_utf8(line: bytes) -> bytes:
    """`line` as UTF-8 text, each sequence of it that is not UTF-8 replaced by U+FFFD, as
    `bytes.decode(errors="replace")` and JavaScript's `TextDecoder` replace them; `line` itself
    when it is UTF-8."""
    if line.isascii() or utf8_error(line) is None:
        return line
    return line.decode("utf-8", errors="replace").encode("utf-8")


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
    if lines is None or (not data.isascii() and utf8_error(data) is not None):
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
    data: bytes,
    decoder: msgspec.json.Decoder[T],
    problems: list[Problem],
    before: int,
    replace_bad: bool = False,
) -> tuple[list[Line[T]], int]:
    """The good lines of `data` (the file after its line `before`), decoded one by one, and how
    many lines it has; with `replace_bad`, a line that is not UTF-8 is decoded as
    `replaced_utf8` makes it, and flagged."""
    lines: list[Line[T]] = []
    sink = ProblemSink(problems)
    offset, number, size = 0, before, len(data)
    while offset < size:
        newline = data.find(b"\n", offset)
        end = size if newline < 0 else newline
        number += 1
        start, offset = offset, end + 1
        if end - start > MAX_LINE:
            sink.add(number, "too-long", f"line {number} is {end - start} bytes, over {MAX_LINE}")
            continue
        raw = data[start:end].strip()
        if not raw:
            continue
        bad = None if raw.isascii() else utf8_error(raw)
        failed: Exception | None = None
        if bad is None:
            try:
                lines.append(Line(number, decode_mended(decoder, raw)))
                continue
            except (msgspec.DecodeError, RecursionError) as exc:  # ValidationError is a DecodeError
                failed = exc
        elif replace_bad:
            try:
                lines.append(Line(number, decode_mended(decoder, replaced_utf8(raw))))
            except (msgspec.DecodeError, RecursionError) as exc:
                failed = exc  # refused as not UTF-8: text of another encoding, most likely
            else:
                sink.add(number, REPLACED_UTF8, _replaced_reason(number, raw, bad))
                continue
        if newline < 0:  # a write in progress, or torn (a character cut in two included)
            sink.add(number, "torn-tail", f"line {number} has no newline: being written, or torn")
        elif bad is not None or failed is None:
            sink.add(number, "not-utf8", f"line {number} is not UTF-8 text (byte {bad})")
        else:
            code = "bad-record" if isinstance(failed, msgspec.ValidationError) else "not-json"
            if sink.wants(code):  # a reason is written only for a problem kept whole
                sink.add(number, code, _bad_reason(number, raw, failed))
            else:
                sink.count(code)
    sink.close()
    return lines, number - before


def _replaced_reason(number: int, raw: bytes, bad: int) -> str:
    return (
        f"line {number} is not UTF-8 text (byte {bad}, 0x{raw[bad]:02x}): read with U+FFFD in place "
        "of its bad bytes, as Claude Code reads it"
    )


def _bad_reason(number: int, raw: bytes, exc: Exception) -> str:
    if isinstance(exc, msgspec.ValidationError):
        # msgspec quotes types and paths as Markdown code, whose backticks a terminal shows.
        return f"line {number}: {str(exc).replace('`', '')}"
    if raw.startswith(codecs.BOM_UTF8):  # an editor's save; msgspec only says "byte 0"
        return f"line {number} begins with a UTF-8 byte-order mark, which JSON forbids"
    return f"line {number} is not JSON: {exc}"


def utf8_error(data: bytes, start: int = 0, end: int | None = None) -> int | None:
    """The offset in `data` of the first byte of `data[start:end]` that is not UTF-8 text, or
    None when it all is. Checked a window at a time, each cut before a character's first byte,
    so that no more than a window is ever held as a str."""
    end = len(data) if end is None else end
    view = memoryview(data)
    at = start
    while at < end:
        stop = min(at + _UTF8_WINDOW, end)
        back = stop
        while back < end and back > at and stop - back < 3 and 0x80 <= data[back] < 0xC0:
            back -= 1  # a continuation byte: the window ends before its character
        if back > at:
            stop = back
        else:  # a window shorter than the character: it ends after it
            while stop < end and stop - at < 4 and 0x80 <= data[stop] < 0xC0:
                stop += 1
        try:
            str(view[at:stop], "utf-8")
        except UnicodeDecodeError as bad:
            return at + bad.start
        at = stop
    return None


class LineTooLong(Exception):
    """A file is refused whole while it is read: it holds a line longer than the cap (that line
    is not read), or it is past a cap on the whole file (`FileTooLarge`). `reason` says why."""

    def __init__(self, line: int, cap: int) -> None:
        self.reason = (
            f"line {line} is longer than {cap} bytes; no harness writes such a line, so the file "
            "is refused (it is damaged, or not a session)"
        )
        super().__init__(self.reason)


class FileTooLarge(LineTooLong):
    """A file past the cap on a harness file's size (refused before a byte is read) or on its
    lines (refused before a line is decoded): decision 0367."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        Exception.__init__(self, reason)


def _too_many_lines(lines: int) -> FileTooLarge:
    return FileTooLarge(
        f"the file has more than {MAX_LINES} lines ({lines} read), the most a harness file may "
        "have: it is refused (far more than any real session holds; a damaged or runaway file)"
    )


def _check_lines(lines: int) -> None:
    """`_too_many_lines` when a file's `lines` (its newline characters) pass `MAX_LINES`."""
    if lines > MAX_LINES:
        raise _too_many_lines(lines)


def read_bounded(
    stream: BinaryIO, cap: int | None = None, chunk: int = 1 << 20, *, lines_before: int = 0
) -> bytes:
    """All of `stream`, unless a line in it is longer than `cap` bytes (default `MAX_LINE`):
    then `LineTooLong`, having held at most `cap` + `chunk` bytes of that line. A file over
    `MAX_FILE` bytes is `FileTooLarge` before a byte is read, and one whose newlines, with the
    `lines_before` of a file read on from where it was read before, pass `MAX_LINES` once read."""
    cap = MAX_LINE if cap is None else cap
    size = os.fstat(stream.fileno()).st_size
    if size > MAX_FILE:
        raise FileTooLarge(
            f"the file is {size} bytes, over the {size_text(MAX_FILE)} a harness file may be: it is "
            "refused unread (far more than the largest real sessions; a damaged or runaway file)"
        )
    if size <= cap:
        data = stream.read()  # no line can be longer than the whole file
        if lines_before + len(data) > MAX_LINES:  # else too few bytes for too many newlines
            _check_lines(lines_before + data.count(b"\n"))
        return data
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
            _check_lines(lines_before + line - 1)
            run = len(block) - block.rfind(b"\n") - 1  # lines inside a block are under `chunk`
        if run > cap:
            raise LineTooLong(line, cap)
        blocks.append(block)
    return b"".join(blocks)


def end_of_line(data: bytes, number: int, line: int = 0, at: int = 0) -> int:
    """The byte offset just after line `number` (1-based; 0 is the start) of `data`, counted
    on from `at`, the offset just after its line `line` (at most `number`): a caller after
    many lines in file order counts each from the last, reading the file once, not once each."""
    # Whole blocks are skipped by counting their newlines (in C), not by finding each one; each
    # block twice the last, up to `_BLOCK`, so a line just after `at` costs about its own bytes.
    left, size = number - line, min(_FIRST_BLOCK, _BLOCK)
    while left and at < len(data):
        block = data.count(b"\n", at, at + size)
        if block >= left:
            break
        at, left, size = at + size, left - block, min(2 * size, _BLOCK)
    for _ in range(left):
        newline = data.find(b"\n", at)
        if newline < 0:
            return len(data)
        at = newline + 1
    return min(at, len(data))
