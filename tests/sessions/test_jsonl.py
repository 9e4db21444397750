"""The line helpers the format readers and fork writers share."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from remem.daemon.sessions.formats import jsonl
from remem.daemon.sessions.formats.jsonl import end_of_line


@given(
    st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=40),
    st.booleans(),
    st.data(),
)
def test_end_of_line_is_the_offset_after_that_many_newlines(
    lines: list[bytes], torn: bool, data: st.DataObject
) -> None:
    blob = b"\n".join(lines) + (b"" if torn else b"\n")
    number = data.draw(st.integers(min_value=0, max_value=len(lines) + 2))
    ends = [i + 1 for i, byte in enumerate(blob) if byte == ord("\n")]
    expected = 0 if number == 0 else ends[number - 1] if number <= len(ends) else len(blob)
    assert end_of_line(blob, number) == expected


def test_end_of_line_skips_whole_blocks(monkeypatch) -> None:
    monkeypatch.setattr(jsonl, "_BLOCK", 7)  # many blocks, lines across their edges
    blob = b"".join(b"x" * (n % 11) + b"\n" for n in range(200))
    offsets = [i + 1 for i, byte in enumerate(blob) if byte == ord("\n")]
    assert [end_of_line(blob, n) for n in range(1, 201)] == offsets and end_of_line(blob, 500) == len(blob)


class _Shape(msgspec.Struct):
    type: str = ""
    n: int = 0


_FRAGMENTS = st.sampled_from(
    [
        b'{"type":"a","n":1}',
        b'{"type":"b","x":{"y":[1,"}"]}}',
        b'{"type":"a"} {"type":"b"}',  # two values on one line
        b'{"type":',  # a value split over two lines ...
        b'"a"}',
        b'{"n":"not an int"}',
        b'{"type":"\xff"}',
        b'{"type":"ok","skipped":"\xff"}',
        b"[1,2]",
        b"",
        b"  ",
        b'{"type":"c"}\r',
        b'{"type":"torn',
        b'{"x":' + b"[" * 5000 + b"]" * 5000 + b"}",  # deeper than the decoder goes
    ]
)


@given(st.lists(_FRAGMENTS, max_size=12), st.booleans())
def test_one_call_decoding_gives_what_line_by_line_decoding_gives(lines: list[bytes], torn: bool) -> None:
    data = b"\n".join(lines) + (b"" if torn else b"\n")
    fast_problems: list[jsonl.Problem] = []
    slow_problems: list[jsonl.Problem] = []
    fast = jsonl.records(data, _Shape, fast_problems)
    slow, _ = jsonl._each_line(data, msgspec.json.Decoder(_Shape), slow_problems, 0)
    assert (fast.lines, fast_problems) == (slow, slow_problems)
    assert fast.newlines == data.count(b"\n")  # counted on the way, by either path


def test_a_file_of_whole_object_lines_is_decoded_in_one_call(monkeypatch) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError("decoded line by line")

    monkeypatch.setattr(jsonl, "_each_line", refuse)
    data = b'{"type":"a","n":1}\n{"type":"b","x":{"y":"}"}}\n{"type":"c","n":3}'
    assert jsonl.records(data, _Shape, []).lines == [
        jsonl.Line(1, _Shape("a", 1)),
        jsonl.Line(2, _Shape("b")),
        jsonl.Line(3, _Shape("c", 3)),
    ]


def test_a_line_nested_too_deep_is_a_problem_of_its_line() -> None:
    problems: list[jsonl.Problem] = []
    deep = b'{"x":' + b"[" * 5000 + b"]" * 5000 + b"}"
    assert jsonl.records(b'{"type":"a"}\n' + deep + b'\n{"type":"b"}\n', _Shape, problems).lines == [
        jsonl.Line(1, _Shape("a")),
        jsonl.Line(3, _Shape("b")),
    ]
    assert [(p.line, p.code) for p in problems] == [(2, "not-json")] and "recursion" in problems[0].reason
