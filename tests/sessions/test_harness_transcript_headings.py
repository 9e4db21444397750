"""Each turn heading of a long Claude Code or Codex transcript carries the time of that turn's
own first line, or "no time" when that line holds none: the lines are found in one pass over
the file, in file order, whatever order the turns' lines are in, across the blocks
`end_of_line` counts newlines in (shrunk here so that many lie between two turns)."""

from __future__ import annotations

from typing import Any

import pytest

from remem.daemon.sessions import harness_sources
from remem.daemon.sessions.formats import jsonl as jsonl_format
from remem.daemon.sessions.harness_transcript import render_harness_transcript

from . import codex_lines as cx
from .claude_lines import jsonl, prompt, result, say, use

TURNS = 120
OTHER = "2026-02-02T00:00:00Z"  # the time of every line that begins no turn


def stamp(n: int) -> str:
    """What turn `n`'s heading shows: its time, or "no time" (every 7th's is not a time,
    every 11th's first line has none)."""
    return "no time" if n % 11 == 0 or n % 7 == 0 else f"2026-01-01T{n // 60:02d}:{n % 60:02d}:00Z"


def stamped(record: dict[str, Any], n: int) -> dict[str, Any]:
    """`record` as turn `n`'s first line, its time as `stamp` reads it."""
    if n % 11 == 0:
        return {key: value for key, value in record.items() if key != "timestamp"}
    return {**record, "timestamp": "not a time" if n % 7 == 0 else stamp(n)}


def headings(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("## Turn ") or line.startswith("### ")]


@pytest.fixture(params=["default blocks", "small blocks"])
def blocks(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.param == "small blocks":
        monkeypatch.setattr(jsonl_format, "_FIRST_BLOCK", 8)
        monkeypatch.setattr(jsonl_format, "_BLOCK", 256)


def claude_turn(n: int) -> list[dict[str, Any]]:
    parent = f"a{n - 1}" if n > 1 else None
    rest = [
        use(f"c{n}", f"u{n}", f"call-{n}"),
        result(f"r{n}", f"c{n}", f"call-{n}"),
        say(f"a{n}", f"r{n}", f"answer {n} " + "y" * (n * 37 % 500)),
    ]
    return [
        stamped(prompt(f"u{n}", parent, f"prompt {n}"), n),
        *({**line, "timestamp": OTHER} for line in rest),
    ]


def test_a_long_claude_code_transcript_heads_each_turn_with_its_prompts_time(blocks: None) -> None:
    turns = [claude_turn(n) for n in range(1, TURNS + 1)]
    # The later half written first: the turns' first lines are not in file order.
    data = jsonl(*(line for turn in turns[TURNS // 2 :] + turns[: TURNS // 2] for line in turn))
    view = harness_sources.claude_view(data, "x.jsonl")
    assert [t.start for t in view.turns[:2]] == [TURNS * 2 + 1, TURNS * 2 + 5]
    shown = headings(render_harness_transcript(view, data))
    assert shown == [f"## Turn {n} — completed — {stamp(n)}" for n in range(1, TURNS + 1)]


def codex_turn(n: int) -> list[dict[str, Any]]:
    answer = f"answer {n} " + "y" * (n * 37 % 500)
    lines = cx.turn(f"t{n}", f"prompt {n}", answer, cx.call(f"c{n}"), cx.output(f"c{n}"))
    return [stamped(lines[0], n), *({**line, "timestamp": OTHER} for line in lines[1:])]


def test_a_long_codex_transcript_heads_each_turn_and_inherited_turn_with_its_start_time(blocks: None) -> None:
    first = [
        {**cx.meta(), "timestamp": OTHER},
        *(line for n in range(1, TURNS + 1) for line in codex_turn(n)),
    ]
    data = cx.rollout(*first)
    view = harness_sources.codex_view(data)
    assert view.turns[0].start == 2
    shown = headings(render_harness_transcript(view, data))
    assert shown == [f"## Turn {n} — completed — {stamp(n)}" for n in range(1, TURNS + 1)]

    # A fork by reference after turn 100 opens with the turns it inherits, read from this file.
    inherited = 1 + 100 * len(codex_turn(1))
    base = {"thread_id": cx.TID, "end_ordinal_exclusive": inherited}
    own = [line for n in range(1, 31) for line in codex_turn(n)]
    fork = cx.rollout({**cx.meta("019c-fork", history_base=base), "timestamp": OTHER}, *own)
    fork_view = harness_sources.codex_view(fork)
    parts = harness_sources.inherited_history(fork_view, cx.first_rollouts({cx.TID: data}))
    shown = headings(render_harness_transcript(fork_view, fork, None, parts))
    assert shown == [
        *(f"### Inherited turn {n} — completed — {stamp(n)}" for n in range(1, 101)),
        *(f"## Turn {n} — completed — {stamp(n)}" for n in range(1, 31)),
    ]
