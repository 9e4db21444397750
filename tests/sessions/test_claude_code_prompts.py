"""Which Claude Code user lines are prompts, where an abandoned path's branch begins, and what
titles a session whose conversation lost its prompts: the shapes interactive Claude Code 2.1
writes, read whole and as a listing that grew (`listed_as_read`)."""

from __future__ import annotations

from typing import Any

from remem.daemon.sessions.formats.claude_code import Transcript, fork_selection

from .claude_lines import (
    SID,
    attachment,
    jsonl,
    listed_as_read,
    local_command,
    prompt,
    rec,
    say,
    turn_duration,
    typed,
)

NAME = f"{SID}.jsonl"


def read(*records: dict[str, Any] | bytes) -> Transcript:
    return listed_as_read(jsonl(*records), NAME)


def test_prompts_typed_in_the_terminal_are_turns_that_title_and_fork_the_session() -> None:
    """Interactive Claude Code marks what the user typed `"origin": {"kind": "human"}`; the
    turn is the prompt, the attachments Claude Code hangs below it, the answer, then its
    bookkeeping, as the real CLI wrote them in a pty."""
    data = jsonl(
        typed("u1", None, "hi there"),
        attachment("e1", "u1", "environment"),
        attachment("e2", "e1", "model"),
        say("a1", "e2", "hello back"),
        attachment("p1", "a1"),
        turn_duration("d1", "p1"),
        typed("u2", "d1", "and now?", turnPosition={"promptIndex": 2, "turnIndex": 2}),
        say("a2", "u2", "now this"),
    )
    t = listed_as_read(data, NAME)
    assert (t.title, t.title_source, t.turn_count) == ("hi there", "prompt", 2)
    assert [(turn.prompt, turn.answer, turn.status, turn.forkable, turn.key) for turn in t.turns] == [
        ("hi there", "hello back", "completed", True, "a1"),
        ("and now?", "now this", "completed", True, "a2"),
    ]
    assert t.branches == ()
    assert fork_selection(data, NAME, 1).turn == t.turns[0]


def test_lines_the_harness_writes_are_no_prompts_but_what_it_submits_for_the_user_is() -> None:
    """A background task's notification, a peer agent's or a plugin's message belong to the
    turn they arrive in; an accepted plan Claude Code submits ("auto-continuation") starts one."""
    t = read(
        typed("u1", None, "start the build in the background"),
        say("a1", "u1", "started"),
        prompt(
            "n1",
            "a1",
            "<task-notification>\n<task-id>b7</task-id>\n<status>completed</status>",
            origin={"kind": "task-notification", "producer": "session-task"},
        ),
        say("a2", "n1", "the build finished"),
        prompt("m1", "a2", "alice says: tests pass", origin={"kind": "peer", "from": "alice"}),
        prompt("g1", "m1", "lint it too", origin={"kind": "plugin", "name": "linter"}),
        say("a3", "g1", "noted"),
        prompt(
            "k1",
            "a3",
            "Implement the following plan:\n\n# Plan\n1. add the flag",
            origin={"kind": "auto-continuation"},
            planContent="# Plan\n1. add the flag",
        ),
        say("a4", "k1", "implemented"),
    )
    assert [(turn.prompt, turn.answer) for turn in t.turns] == [
        ("start the build in the background", "noted"),
        ("Implement the following plan:", "implemented"),
    ]
    assert t.title == "start the build in the background"


def test_an_abandoned_path_that_opens_with_a_local_commands_caveat_is_a_branch() -> None:
    """Claude Code writes an isMeta caveat before a local slash command: a rewind past such a
    command leaves a path whose first line is that caveat, and its turns are still a branch."""
    t = read(
        prompt("u1", None, "start"),
        say("a1", "u1", "one"),
        *local_command("m1", "k1", "o1", "a1", "model"),
        prompt("u3", "o1", "then fix it"),
        say("a3", "u3", "fixed"),
        prompt("u4", "a1", "instead do this", timestamp="2026-01-01T00:01:00Z"),  # the rewind
        say("a4", "u4", "done instead", timestamp="2026-01-01T00:01:01Z"),
    )
    assert [turn.prompt for turn in t.turns] == ["start", "instead do this"]
    (branch,) = t.branches
    assert (branch.after, branch.after_turn, branch.leaf) == ("a1", 1, "a3")
    assert [(turn.index, turn.prompt, turn.status) for turn in branch.turns] == [
        (2, "/model", "completed"),
        (3, "then fix it", "completed"),
    ]


def test_a_rewind_past_a_compaction_keeps_the_compacted_path_as_a_branch() -> None:
    """The abandoned path then opens with the compaction's boundary and summary, no turn's lines."""
    t = read(
        prompt("u1", None, "start"),
        say("a1", "u1", "one"),
        rec("system", "b1", None, subtype="compact_boundary", logicalParentUuid="a1"),
        prompt("s1", "b1", "This session is being continued: start, one", isCompactSummary=True),
        prompt("u2", "s1", "after the compaction"),
        say("a2", "u2", "two"),
        prompt("u3", "a1", "back before it", timestamp="2026-01-01T00:01:00Z"),
        say("a3", "u3", "three", timestamp="2026-01-01T00:01:01Z"),
    )
    assert [turn.prompt for turn in t.turns] == ["start", "back before it"] and t.segments == 0
    (branch,) = t.branches
    assert (branch.after, branch.after_turn, branch.leaf) == ("a1", 1, "a2")
    assert [(turn.index, turn.prompt, turn.answer) for turn in branch.turns] == [
        (2, "after the compaction", "two")
    ]


def test_a_torn_line_that_took_the_only_prompt_of_the_conversation_titles_it_from_the_branch() -> None:
    """A crash tore a line and a resume appended after it, joining the next prompt to the torn
    bytes: the conversation after the cut has no prompt, the one before it is a branch
    (decision 0302), and the session is titled by that branch's first prompt."""
    t = read(
        prompt("u1", None, "first question"),
        say("a1", "u1", "first answer"),
        b'{"type":"user","uu' + jsonl(prompt("u2", "a1", "second question")),
        say("a2", "u2", "second answer"),
    )
    assert [(p.line, p.code) for p in t.problems] == [(3, "not-json"), (4, "missing-parent")]
    assert (t.turn_count, t.title, t.title_source) == (0, "first question", "prompt")
    (branch,) = t.branches
    assert (branch.after, branch.after_turn, [turn.prompt for turn in branch.turns]) == (
        "",
        0,
        ["first question"],
    )
