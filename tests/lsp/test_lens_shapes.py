"""Where a transcript's branch lenses sit, for any shape its text may take: never an error."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from remem.lsp.documents import lines_of
from remem.lsp.features.code_lens import _turn_ends

# Lines a transcript is made of, and lines that only look like them.
_LINES = st.one_of(
    st.sampled_from(
        [
            "# Title",
            "",
            "_No turns yet._",
            "## Turn 1 — completed — t",
            "## Turn 2 — interrupted — t",
            "## Turn 1 — completed — t",
            "## Turn ? — completed — t",
            "## Turn 0 — x",
            "## Turn 12 —",
            "## Abandoned branch after turn 1 (leaf `x`)",
            "### Abandoned turn 2 — completed",
            "##",
            "## ",
            "text",
            "\r",
        ]
    ),  # fmt: skip
    st.builds(lambda n: f"## Turn {n} — completed — t", st.integers(min_value=0, max_value=10**6)),
    st.text(max_size=12),
)


@given(st.lists(_LINES, max_size=12).map("\n".join))
def test_a_turn_ends_before_the_next_section_or_on_the_last_line(text: str) -> None:
    lines = lines_of(text)
    ends = _turn_ends(lines)
    headings = [n for n, line in enumerate(lines) if line.startswith("## Turn ")]
    assert len(ends) <= len(headings)
    for _, end in ends:
        assert 0 <= end < len(lines)
        assert end == len(lines) - 1 or lines[end].startswith("## ")
