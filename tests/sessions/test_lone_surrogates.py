"""A lone UTF-16 surrogate escape (`"\\ud83d"`: half an emoji, as JavaScript's `JSON.stringify`
writes a string cut in two) is valid JSON that no UTF-8 text can hold. Every reader takes it as
U+FFFD: the line is kept, the listing is stored and answered, the transcript encodes."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from remem.daemon.cli import cli
from remem.daemon.home import Home
from remem.daemon.sessions.decode import mend_surrogates, parse_json
from remem.daemon.sessions.formats.claude_code import read_transcript

from .claude_lines import SID, jsonl, prompt, say
from .logs import lines, raw_log, turn_events

_LONE = re.compile("[\ud800-\udfff]")


_PIECES = st.one_of(
    st.characters(), st.integers(0xD800, 0xDFFF).map(chr), st.sampled_from(["\\", "u", "d83d", "\\u"])
)


@given(st.lists(_PIECES, max_size=12).map("".join), st.booleans())
def test_only_lone_surrogates_change_and_they_become_the_replacement_character(text: str, pad: bool) -> None:
    # An escaped backslash before "u" must never be taken for an escape: `\\ud800` is text.
    value = ("\\" if pad else "") + text
    line = json.dumps({"a": value}).encode()  # ASCII: every surrogate escaped
    expected = _LONE.sub("\ufffd", json.loads(line)["a"])  # pairs joined by the decoder first
    assert parse_json(mend_surrogates(line))["a"] == expected
    if not _LONE.search(json.loads(line)["a"]):
        assert mend_surrogates(line) == line


def _run(home: Home, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--home", str(home.root), "sessions", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_dsh_log_with_a_lone_surrogate_lists_and_shows(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "root"
    body = lines(turn_events())
    raw_log(root, body.replace(b'"text":"hi"', b'"text":"\\ud83dhi"'), session_id="broken")
    raw_log(root, body, session_id="fine")
    for _ in range(2):  # indexed, then read back from the index
        listed = json.loads(_run(home, "list", "--root", str(root), "--json"))
        assert listed["errors"] == []
        assert sorted(s["id"] for s in listed["sessions"]) == ["broken", "fine"]
    assert "\ufffdhi" in _run(home, "show", "broken", "--root", str(root))
    shown = json.loads(_run(home, "show", "broken", "--root", str(root), "--json"))
    assert "\ufffdhi" in json.dumps(shown, ensure_ascii=False)


def test_a_claude_code_line_with_a_lone_surrogate_keeps_its_turn() -> None:
    data = jsonl(
        prompt("u1", None, "first"),
        say("a1", "u1", "one"),
        prompt("u2", "a1", "PONG"),
        say("a2", "u2", "two"),
    )
    read = read_transcript(data.replace(b'"PONG"', b'"\\ud83dPONG"'), f"{SID}.jsonl")
    assert not read.problems
    assert [t.prompt for t in read.turns] == ["first", "\ufffdPONG"]
