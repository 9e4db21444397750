"""Property tests: the parser never crashes, and canonical form is a fixed point."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from remem.daemon.memory.canonical import canonical_bytes, canonicalize
from remem.daemon.memory.diagnostics import TextPositions
from remem.daemon.memory.record import render_record
from remem.daemon.memory.validation import _over_budget, parse_record, validate_global, validate_index
from remem.daemon.protocol.memory import Record

# Front-matter-shaped text finds far more parser paths than uniform noise does.
_PIECES = st.sampled_from(
    [
        "---",
        "\n",
        "\r\n",
        "\r",
        "name:",
        " description: ",
        "type: project",
        "\t",
        " ",
        "- a",
        "[",
        "{",
        "'",
        '"',
        ":",
        "#",
        "|",
        ">",
        "\ufeff",
        "\x00",
        "😀",
        "é",
        "memory",
        "x" * 70,
    ]
)
_TEXTY = st.one_of(st.text(), st.lists(_PIECES | st.text(max_size=5)).map("".join))


def _within(text: str, position_line: int, character: int) -> bool:
    lines = TextPositions(text).line_starts
    return 0 <= position_line < len(lines) and character >= 0


@settings(max_examples=400)
@given(_TEXTY, st.one_of(st.none(), st.sampled_from(["a.md", "memory.md", "x-y.md"])))
def test_record_parser_never_crashes_and_ranges_are_in_the_text(text: str, file_name: str | None) -> None:
    for d in parse_record(text, file_name).diagnostics:
        assert _within(text, d.range.start.line, d.range.start.character)
        assert _within(text, d.range.end.line, d.range.end.character)
        assert (d.range.start.line, d.range.start.character) <= (d.range.end.line, d.range.end.character)


@given(_TEXTY)
def test_global_and_index_validators_never_crash(text: str) -> None:
    validate_global(text)
    validate_index(text, "expected\n")


@given(_TEXTY)
def test_canonicalize_is_idempotent_and_matches_bytes(text: str) -> None:
    once = canonicalize(text)
    assert canonicalize(once) == once
    left = {d.code for d in validate_global(once)}
    assert left <= {"remem/control-character", "remem/global-too-large"}, "only what it must not fix"
    assert canonical_bytes(text.encode("utf-8", "surrogatepass")) == once.encode("utf-8", "surrogatepass")


@given(st.binary())
def test_canonical_bytes_is_idempotent(raw: bytes) -> None:
    assert canonical_bytes(canonical_bytes(raw)) == canonical_bytes(raw)


_NAMES = st.from_regex(r"[a-z0-9](?:[a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True).filter(
    lambda n: n != "memory"
)
_LINE = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=60).filter(
    lambda s: s.strip() != "" and s.strip() == s
)


@given(_NAMES, _LINE, st.sampled_from(["feedback", "project", "reference"]), _LINE)
def test_rendered_records_parse_back_to_themselves(
    name: str, description: str, type_: str, body: str
) -> None:
    record = Record(name=name, description=description, type=type_, content=body + "\n")
    parsed = parse_record(render_record(record), f"{name}.md")
    assert parsed.diagnostics == []
    assert parsed.record == record


def test_repeated_byte_order_marks_canonicalize_in_one_step() -> None:
    # Found by hypothesis: stripping a single BOM left a second one for the next pass.
    assert canonicalize("\ufeff\ufeffa") == canonicalize(canonicalize("\ufeff\ufeffa")) == "a\n"
    assert canonical_bytes("\ufeff\ufeff".encode()) == b""


@given(st.text(st.sampled_from(["a", "\n", "é", "€", "😀", "\ud800", "\ufeff"]), max_size=80), st.data())
def test_the_over_budget_cut_is_the_first_character_past_the_limit(text: str, data: st.DataObject) -> None:
    """Where `_over_budget` cuts a part (found with one encoding when it holds no U+FEFF, by
    bisection otherwise): after the last character whose bytes, U+FEFF not counted, still fit."""
    start = data.draw(st.integers(0, len(text)))
    limit = data.draw(st.integers(1, 40))
    part = text[start:]
    found = _over_budget(text, limit, len(part.encode("utf-8", "surrogatepass")), start)
    if found is None:
        return
    used, fits = 0, start
    for offset, character in enumerate(part, start):
        used += 0 if character == "\ufeff" else len(character.encode("utf-8", "surrogatepass"))
        if used > limit:
            break
        fits = offset + 1
    assert found[0] == (len(text) if used <= limit else fits)
