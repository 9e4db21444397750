"""The C decoding layer gives the reference decoder's values and refuses what it refuses.

`decode_line` (msgspec, stdlib behind it) must be indistinguishable from `parse_json`: equal
values of equal types on every line, and the same exception with the same text on every bad
one, so that each shape the reader refused before is refused now with the same message.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.daemon.sessions.decode import decode_line, parse_json
from remem.daemon.sessions.errors import SessionLogError
from remem.daemon.sessions.reader import read_session

from .logs import lines, raw_log, turn_events


def _same(a: Any, b: Any) -> bool:
    """Equal with equal types all the way down (1 == 1.0 == True must not pass), -0.0 signed."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b) or (a != a and b != b)
    return a == b


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=400)
@given(_JSON, st.booleans())
def test_every_json_value_decodes_as_the_reference_does(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, separators=(",", ":"))
    line = text.encode("utf-8", "surrogatepass")
    try:
        expected = parse_json(line)
    except UnicodeDecodeError:
        # `json.dumps` writes a lone surrogate raw unless asked for ASCII: not UTF-8, refused.
        with pytest.raises(UnicodeDecodeError):
            decode_line(line)
        return
    assert _same(decode_line(line), expected)


@pytest.mark.parametrize(
    "line",
    [
        b'{"a":"\\ud800"}',  # a lone surrogate escape: legal JSON text, a lone unit in JS
        b'{"a":1e999}',  # out of float range: the reference gives inf, as JSON.parse does
        b'{"a":123456789012345678901234567890}',
        b'{"a":-0,"b":-0.0}',
        b'{"a":1,"a":2}',  # a duplicate key: the last one wins
        b' \t{"a":[1 , 2]}\r\n',
        b'"\\ud83d\\ude00"',
        b"[" * 200 + b"]" * 200,  # deep, inside the nesting limit
    ],
)
def test_lines_msgspec_declines_or_treats_specially_decode_as_the_reference(line: bytes) -> None:
    assert _same(decode_line(line), parse_json(line))


_REFUSED = [
    b'{"a":NaN}',
    b'{"a":Infinity}',
    b'{"a":-Infinity}',
    b'\xef\xbb\xbf{"a":1}',  # a byte order mark
    b'{"a":1}x',  # trailing data
    b"[1,]",
    b'{"a":"\x01"}',  # a raw control character
    b'{"a":01}',
    b'{"a":1',  # truncated
    b"",
    b"[" * 5000 + b"]" * 5000,  # nesting past the limit
]


@pytest.mark.parametrize("line", _REFUSED)
def test_refused_lines_raise_the_reference_error(line: bytes) -> None:
    with pytest.raises(ValueError) as reference:
        parse_json(line)
    with pytest.raises(ValueError) as fast:
        decode_line(line)
    assert type(fast.value) is type(reference.value)
    assert str(fast.value) == str(reference.value)


@pytest.mark.parametrize("bad", [b'{"a":"\xff"}', b'{"a":"\xed\xa0\x80"}', b'{"a":"\xc0\x80"}'])
def test_invalid_utf8_is_refused_as_the_reference_refuses_it(bad: bytes) -> None:
    with pytest.raises(UnicodeDecodeError) as reference:
        parse_json(bad)
    with pytest.raises(UnicodeDecodeError) as fast:
        decode_line(bad)
    assert fast.value.start == reference.value.start


# Each refused line shape, last in a log whose later lines hold no turn/end (so the reader
# ends the committed prefix there) and in the middle of a log (so it is corruption), with the
# reader's message as it was before the C layer.
_TAIL_REASONS = [
    (b'{"type":"x","seq":3,"time":1,"data":NaN}', "line 5 is not valid JSON (NaN is not JSON)"),
    (b'{"type":"x","seq":3,"time":1,"data":Infinity}', "line 5 is not valid JSON (Infinity is not JSON)"),
    (b"\xef\xbb\xbf{}", "line 5 is not valid JSON (a byte order mark is not JSON)"),
    (b"{not json", "line 5 is not valid JSON (Expecting property name enclosed in double quotes: "),
    (b'{"type":"x"} {}', "line 5 is not valid JSON (Extra data: line 1 column 14 (char 13))"),
    (b"[" * 100_000, "line 5 is not valid JSON (JSON nesting is too deep)"),
    (b"[1,2]", "line 5 is not a JSON object"),
]


@pytest.mark.parametrize(("bad", "reason"), _TAIL_REASONS)
def test_reader_refuses_each_bad_line_with_its_former_message(
    tmp_path: Path, bad: bytes, reason: str
) -> None:
    good = lines(turn_events()[:3])
    log = read_session(raw_log(tmp_path / "tail", good + bad + b"\n"))
    assert len(log.events) == 3
    assert log.torn is not None and log.torn.reason.startswith(reason)

    with pytest.raises(SessionLogError) as refused:
        read_session(raw_log(tmp_path / "middle", good + bad + b"\n" + lines(turn_events(3, 2))))
    assert refused.value.reason.startswith(reason)
    assert "holds a turn/end written after it" in refused.value.reason


def test_reader_refuses_invalid_utf8_with_its_former_message(tmp_path: Path) -> None:
    path = raw_log(tmp_path, lines(turn_events()[:3]) + b'{"type":"x","data":"\xff"}\n')
    with pytest.raises(SessionLogError, match=r"line 5 is not valid UTF-8 \(byte 20 of the line\)"):
        read_session(path)
