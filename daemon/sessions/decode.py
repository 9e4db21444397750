"""The hot path of every session-log reader: one JSON line of bytes to Python values, in C.

`decode_line` is msgspec's decoder with the stdlib decoder behind it. msgspec takes every
line DSH writes (strict UTF-8, no NaN or Infinity, integers of any size, correctly rounded
floats, the same nesting limit) to the same values as `json`, about twice as fast; a line it
refuses goes through `parse_json`, JSON.parse semantics on the stdlib decoder, so what a
reader accepts, and the error it gives, stay those of the stdlib path. Readers of other
formats use the same pair, and `TypedLine` for records whose shape a struct can prove.

A lone UTF-16 surrogate escape (`"\\ud83d"`, half an emoji JavaScript's `JSON.stringify` cut in
two) is valid JSON that no UTF-8 text can hold: `mend_surrogates` makes it U+FFFD before any
decoder sees it, as a JavaScript harness's own UTF-8 output (`TextEncoder`) shows it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import msgspec

S = TypeVar("S", bound=msgspec.Struct)
T = TypeVar("T")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_fast_decode = msgspec.json.Decoder().decode


# Escapes from left to right, so an escaped backslash is never taken for one.
_ESCAPES = re.compile(
    rb"(\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})"  # a pair
    rb"|(\\u[dD][89a-fA-F][0-9a-fA-F]{2})"  # alone
    rb"|\\."
)
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _mended(match: re.Match[bytes]) -> bytes:
    return b"\\ufffd" if match.group(2) else match.group()


def mend_surrogates(line: bytes) -> bytes:
    """`line` with every lone surrogate escape written as U+FFFD's; pairs and all else as is."""
    if _SURROGATE_ESCAPE.search(line) is None:
        return line
    return _ESCAPES.sub(_mended, line)


def decode_mended(decoder: msgspec.json.Decoder[T], line: bytes) -> T:
    """`decoder.decode(line)`; msgspec refuses a lone surrogate escape, so a line it refuses
    that holds one is tried again mended (`mend_surrogates`)."""
    try:
        return decoder.decode(line)
    except msgspec.DecodeError:
        mended = mend_surrogates(line)
        if mended is line:
            raise
        return decoder.decode(mended)


def parse_json(line: bytes, parse_int: Callable[[str], Any] | None = None) -> Any:
    """JSON.parse semantics: strict UTF-8, no NaN/Infinity; deep nesting is a parse error; a
    lone surrogate escape is U+FFFD (`mend_surrogates`).

    The reference decoder (stdlib): raises `UnicodeDecodeError` for bad UTF-8 and `ValueError`
    naming what is wrong for anything else.
    """
    text = mend_surrogates(line).decode("utf-8")
    if text.startswith("\ufeff"):
        raise ValueError("a byte order mark is not JSON")
    # `json.loads` with options builds a new decoder per call; the shared one is the hot path.
    decoder = (
        _DECODER
        if parse_int is None
        else json.JSONDecoder(parse_constant=_reject_constant, parse_int=parse_int)
    )
    try:
        return decoder.decode(text)
    except RecursionError:
        raise ValueError("JSON nesting is too deep") from None


def decode_line(line: bytes) -> Any:
    """`parse_json(line)`, decoded by msgspec when it can: same values, same errors."""
    try:
        return _fast_decode(line)
    except (msgspec.DecodeError, RecursionError):
        # Refused by msgspec (or valid JSON it declines, such as a lone surrogate escape or
        # a float out of range): the reference decoder gives the value or the exact error.
        return parse_json(line)


class TypedLine(Generic[S]):
    """Decode lines straight into the struct `S`, or None when a line does not fit it.

    For a reader's commonest record shapes: fields typed `msgspec.Raw` are checked as JSON
    (strictly: only lines the reference decoder accepts get through) but never built into
    Python objects. None means "take the general path" (`decode_line` and the reader's own
    checks), which owns every error message, so a struct only ever proves a line good.
    """

    def __init__(self, struct: type[S]) -> None:
        self._decode = msgspec.json.Decoder(struct).decode

    def __call__(self, line: bytes) -> S | None:
        if not line.isascii():
            try:  # msgspec checks the UTF-8 of the strings it builds, not of those it skips
                line.decode("utf-8")
            except UnicodeDecodeError:
                return None
        try:
            return self._decode(line)
        except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
            return None
