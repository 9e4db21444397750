"""A fork's cut of a Claude Code turn whose end is on neither the active path nor below its end
(Claude Code's `--max-turns` note, decision 0535) is a bug's, refused: it was taken as the
path's end, and the fork silently copied the whole conversation after any turn."""

from __future__ import annotations

import msgspec
import pytest

from remem.daemon.sessions.formats import claude_code
from remem.daemon.sessions.formats.claude_code import fork_selection

from .claude_lines import SID, jsonl, prompt, say

NAME = f"{SID}.jsonl"
DATA = jsonl(
    prompt("u1", None, "first question"),
    say("a1", "u1", "first answer"),
    prompt("u2", "a1", "second question"),
    say("a2", "u2", "second answer"),
)


@pytest.mark.parametrize("turn", [1, 2], ids=["followed", "last"])
def test_a_turn_ending_off_the_path_is_no_cut_of_the_whole_path(
    monkeypatch: pytest.MonkeyPatch, turn: int
) -> None:
    assert fork_selection(DATA, NAME, turn).lines == ((1, 2) if turn == 1 else (1, 2, 3, 4))
    found = claude_code._turn

    def ending_nowhere(*args: object, **kwargs: object) -> claude_code.Turn:
        return msgspec.structs.replace(found(*args, **kwargs), key="nowhere")  # type: ignore[arg-type]

    monkeypatch.setattr(claude_code, "_turn", ending_nowhere)
    with pytest.raises(LookupError, match="neither on the path nor below its end"):
        fork_selection(DATA, NAME, turn)
