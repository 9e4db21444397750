"""The hot path of every session-log reader: one JSON line of bytes to Python values, in C.

`decode_line` is msgspec's decoder with the stdlib decoder behind it. msgspec takes every
line DSH writes (strict UTF-8, no NaN or Infinity, integers of any size, correctly rounded
floats, the same nesting limit) to the same values as `json`, about twice as fast; a line it
refuses goes through `parse_json`, JSON.parse semantics on the stdlib decoder, so what a
reader accepts, and the error it gives, stay those of the stdlib path. Readers of other
formats use the same pair, and `TypedLine` for records whose shape a struct can prove.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import msgspec

S = TypeVar("S", bound=msgspec.Struct)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_fast_decode = msgspec.json.Decoder().decode


def parse_json(line: bytes, parse_int: Callable[[str], Any] | None = None) -> Any:
    """JSON.parse semantics: strict UTF-8, no NaN/Infinity; deep nesting is a parse error.

    The reference decoder (stdlib): raises `UnicodeDecodeError` for bad UTF-8 and `ValueError`
    naming what is wrong for anything else.
    """
    text = line.decode("utf-8")
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
