"""The line helpers the format readers and fork writers share."""

from __future__ import annotations

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
