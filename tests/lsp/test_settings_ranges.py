"""Where a settings error is shown: on its line as the editor breaks lines, to its end in UTF-16."""

from __future__ import annotations

import pytest

from remem.lsp.features.diagnostics import settings_problems


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_a_settings_error_spans_its_whole_line_and_no_line_break(eol: str) -> None:
    text = eol.join(["# settings", "daemon:", "  idle_minutes: 🎉", ""])
    [problem] = settings_problems(text)
    assert (problem.range.start.line, problem.range.start.character) == (2, 0)
    assert (problem.range.end.line, problem.range.end.character) == (2, 18)  # the emoji is 2 units


def test_a_character_yaml_refuses_is_said_on_its_line_after_lone_crs() -> None:
    [problem] = settings_problems("daemon:\r  watch: polling\r  idle_minutes: \x1b[1m5\r")
    assert problem.range.start.line == 2 and "U+001B" in problem.message
