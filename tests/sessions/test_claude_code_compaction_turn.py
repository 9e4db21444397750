"""A Claude Code compaction's note sits on the turn that ran on its summary, as Codex's does: a
summary written between two turns (after the first one's end, before the next prompt) is the
next turn's; one written while a turn went on is that turn's."""

from __future__ import annotations

from remem.daemon.sessions.formats.claude_code import read_transcript
from remem.daemon.sessions.harness_sources import claude_view
from remem.daemon.sessions.harness_transcript import render_harness_transcript

from . import codex_lines as cx
from .claude_lines import jsonl, prompt, rec, result, say, use

NOTE = "_Earlier context was replaced by a compaction summary in this turn._"


def boundary(uuid: str, logical_parent: str) -> dict[str, object]:
    return rec("system", uuid, None, subtype="compact_boundary", logicalParentUuid=logical_parent)


def summary(uuid: str, parent: str) -> dict[str, object]:
    return prompt(uuid, parent, "This session is being continued ... summary", isCompactSummary=True)


def compacted(data: bytes) -> list[tuple[int, str, bool]]:
    return [(t.index, t.prompt, t.compacted) for t in read_transcript(data, "x.jsonl").turns]


def test_a_compaction_between_turns_is_noted_on_the_next_turn_as_in_codex() -> None:
    between = jsonl(
        prompt("u1", None, "before"),
        say("a1", "u1", "old answer"),
        boundary("b1", "a1"),
        summary("s1", "b1"),
        prompt("u2", "s1", "after"),
        say("a2", "u2", "new answer"),
    )
    assert compacted(between) == [(1, "before", False), (2, "after", True)]
    codex = cx.rollout(
        cx.meta(),
        *cx.turn("t1", "before", "1"),
        cx.line("compacted", message="s"),
        *cx.turn("t2", "after", "2"),
    )
    assert [(t.index, t.prompt, t.compacted) for t in cx.read_rollout(codex).turns] == compacted(between)
    shown = render_harness_transcript(claude_view(between, "x.jsonl"), between).split("## Turn ")
    assert [NOTE in section for section in shown[1:]] == [False, True]


def test_a_compaction_within_a_turn_is_that_turns_and_the_last_turns_trailing_one_no_ones() -> None:
    within = jsonl(
        prompt("u1", None, "long task"),
        use("t1", "u1", "c1"),
        result("r1", "t1", "c1"),
        boundary("b1", "r1"),
        summary("s1", "b1"),
        say("a1", "s1", "done after compacting"),
        prompt("u2", "a1", "next"),
        say("a2", "u2", "answer"),
        boundary("b2", "a2"),
        summary("s2", "b2"),  # /compact after the last turn: no turn has run on it yet
    )
    assert compacted(within) == [(1, "long task", True), (2, "next", False)]


def test_a_compaction_in_a_turn_still_going_on_or_after_an_interrupted_one() -> None:
    going_on = jsonl(
        prompt("u1", None, "long task"), use("t1", "u1", "c1"), boundary("b1", "t1"), summary("s1", "b1")
    )
    assert compacted(going_on) == [(1, "long task", True)]
    stopped = jsonl(
        prompt("u1", None, "stop me"),
        prompt("i1", "u1", "[Request interrupted by user]"),
        boundary("b1", "i1"),
        summary("s1", "b1"),
        prompt("u2", "s1", "then this"),
        say("a2", "u2", "ok"),
    )
    assert compacted(stopped) == [(1, "stop me", False), (2, "then this", True)]
