"""The line helpers the format readers and fork writers share."""

from __future__ import annotations

import tracemalloc

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from remem.daemon.sessions.formats import jsonl, model
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


def test_end_of_line_counts_on_from_an_earlier_line(monkeypatch) -> None:
    """From the end of any earlier line, as from the start: what a caller after many lines
    in file order passes, each line counted on from the one before."""
    monkeypatch.setattr(jsonl, "_FIRST_BLOCK", 3)
    monkeypatch.setattr(jsonl, "_BLOCK", 50)  # blocks from 3 bytes, doubling up to 50
    blob = b"".join(b"x" * (n % 11) + b"\n" for n in range(200)) + b"torn"
    ends = [0, *(i + 1 for i, byte in enumerate(blob) if byte == ord("\n"))]
    ends += [len(blob)] * 5  # lines 201 (torn) to 205 end at the end
    for line in range(0, 205, 3):
        at = end_of_line(blob, line)
        assert [end_of_line(blob, number, line, at) for number in range(line, 206)] == ends[line:]


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


def test_a_line_not_utf8_in_a_field_the_shape_skips_is_a_problem_on_either_path() -> None:
    """msgspec checks only the bytes it decodes: bad bytes in a skipped field (or key) once read
    as a record, which a fork copying the line whole then failed to decode."""
    good = b'{"type":"a"}\n'
    for bad in (b'{"type":"b","skipped":{"k":"\xff\xfe"}}', b'{"type":"b","k\xff":1}'):
        for data in (good + bad + b"\n" + good, good + b"not json\n" + bad + b"\n" + good):
            problems: list[jsonl.Problem] = []
            read = jsonl.records(data, _Shape, problems)
            number = data.split(b"\n").index(bad) + 1
            assert [line.number for line in read.lines] == [1, number + 1]
            assert [(p.line, p.code) for p in problems][-1] == (number, "not-utf8")
            byte = bad.index(b"\xff")
            assert problems[-1].reason == f"line {number} is not UTF-8 text (byte {byte})"
    # A last line cut in the middle of a character is a write in progress, as any torn line.
    torn: list[jsonl.Problem] = []
    jsonl.records(good + '{"type":"é"}'.encode()[:-3], _Shape, torn)
    assert [p.code for p in torn] == ["torn-tail"]


@given(st.text(min_size=1, max_size=30), st.integers(min_value=0, max_value=200))
def test_utf8_is_checked_a_window_at_a_time_and_found_where_python_finds_it(text: str, at: int) -> None:
    data = (text * 5).encode("utf-8", "surrogatepass")
    at %= len(data) + 1
    broken = data[:at] + b"\xff" + data[at:]
    for window in (1, 2, 3, 5, 1 << 20):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(jsonl, "_UTF8_WINDOW", window)
            for blob in (data, broken):
                try:
                    blob.decode("utf-8")
                    expected = None
                except UnicodeDecodeError as exc:
                    expected = exc.start
                assert jsonl.utf8_error(blob) == expected, window


def test_past_the_first_problems_of_a_kind_the_rest_are_only_counted() -> None:
    data = b'{"type":"a"}\n' + b"x\n" * 1000 + b'{"n":"s"}\n' * 3 + b"\xff\n"
    problems: list[jsonl.Problem] = []
    assert len(jsonl.records(data, _Shape, problems).lines) == 1
    kept = [p for p in problems if p.code == "not-json"]
    assert len(kept) == model.KEPT_PER_CODE and [p.line for p in kept] == list(
        range(2, 2 + model.KEPT_PER_CODE)
    )
    assert kept[-1].count == 1000 - model.KEPT_PER_CODE + 1 and kept[-1].reason.startswith(
        f"line {model.KEPT_PER_CODE + 1} "
    )
    assert model.problem_counts(problems) == {"not-json": 1000, "bad-record": 3, "not-utf8": 1}
    # A read that goes on from an earlier one (an append) keeps counting on the same problems.
    jsonl.records(b"y\n" * 10, _Shape, problems, first=1006)
    assert len(problems) == model.KEPT_PER_CODE + 4 and model.problem_counts(problems)["not-json"] == 1010


def test_a_million_bad_lines_cost_their_bytes_not_a_problem_each() -> None:
    data = b'{"type":"a"}\n' + b"x\n" * 1_000_000
    tracemalloc.start()
    try:
        problems: list[jsonl.Problem] = []
        jsonl.records(data, _Shape, problems)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert model.problem_counts(problems) == {"not-json": 1_000_000}
    assert peak < 1 << 20  # a Problem and its reason each were ~150 MB
