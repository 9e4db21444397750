"""The Codex rollout reader on small hand-made rollouts: turns, lineage, injected context, bad input.

The shapes mirror what Codex 0.16x writes (see tests/harnesses for the real thing).
"""

from __future__ import annotations

from typing import Any

import pytest

from remem.daemon.sessions.formats.codex import Rollout, fork_point, read_rollout, turns_begun_before
from remem.daemon.sessions.formats.jsonl import end_of_line
from remem.daemon.sessions.formats.model import NotAForkPoint

from .codex_lines import TID, call, event, line, listed_as_read, message, meta, output, rollout, turn


def read(*records: dict[str, Any] | bytes) -> Rollout:
    """The full read of the rollout, checked against a listing's read of it on every case."""
    return listed_as_read(rollout(*records))


def test_turns_run_from_task_started_to_task_complete_or_turn_aborted() -> None:
    r = read(
        meta(),
        *turn(
            "t1",
            "read it",
            "done",
            call("c1"),
            output("c1"),
            event("exec_command_end", call_id="c1", exit_code=0),
        ),
        *turn("t2", "and then", "stopped", call("c2"), end="turn_aborted"),
    )
    assert [(t.index, t.prompt, t.status, t.forkable, t.key, t.answer) for t in r.turns] == [
        (1, "read it", "completed", True, "t1", "done"),
        (2, "and then", "aborted", False, "t2", "stopped"),
    ]
    assert (r.turns[0].start, r.turns[0].end) == (2, 9)  # task_started .. task_complete
    assert [(tool.name, tool.ok) for tool in r.turns[0].tools] == [("exec_command", True)]
    assert [(tool.name, tool.ok) for tool in r.turns[1].tools] == [("exec_command", None)]
    assert (r.session_id, r.cwd, r.title, r.error, r.problems) == (TID, "/w", "read it", None, ())


def test_a_command_the_user_interrupted_never_reads_ok() -> None:
    """Codex writes the interrupted command's output ("aborted by user"), then `turn_aborted`,
    then the command's `item_completed` (failed, exit -1): an outcome told after its turn."""
    interrupted = output("c1")
    interrupted["payload"]["output"] = "Wall time: 0.4 seconds\naborted by user"
    failed = {"type": "CommandExecution", "id": "c1", "status": "failed", "exit_code": -1}
    stopped = [call("c1"), interrupted]
    told = read(
        meta(), *turn("t1", "go", "", *stopped, end="turn_aborted"), event("item_completed", item=failed)
    )
    untold = read(meta(), *turn("t1", "go", "", *stopped, end="turn_aborted"), *turn("t2", "next", "ok"))
    assert [tool.ok for tool in told.turns[0].tools] == [False]
    assert [tool.ok for tool in untold.turns[0].tools] == [None]
    assert told.turns[0].end == untold.turns[0].end  # the late event does not extend the turn


def test_a_started_turn_without_its_end_is_open_and_not_forkable() -> None:
    r = read(meta(), event("task_started", turn_id="t1"), message("user", "go"), call("c1"))
    (only,) = r.turns
    assert (only.status, only.forkable) == ("open", False)


def test_identity_cwd_and_lineage_come_from_the_first_session_meta_only() -> None:
    copied_parent_meta = meta(
        "019c0000-0000-7000-8000-0000000000aa", cwd="/elsewhere", forked_from_id="older"
    )
    r = read(meta(forked_from_id="019c-parent"), copied_parent_meta, *turn("t1", "q", "a"))
    assert (r.session_id, r.cwd) == (TID, "/w")
    assert [(edge.kind, edge.parent) for edge in r.lineage] == [("fork", "019c-parent")]


def test_history_base_and_subagent_spawn_are_lineage_edges() -> None:
    spawn = {"subagent": {"thread_spawn": {"parent_thread_id": "019c-boss", "depth": 1}}}
    r = read(meta(history_base={"thread_id": "019c-base", "end_ordinal_exclusive": 33}, source=spawn))
    assert [(edge.kind, edge.parent, edge.upto) for edge in r.lineage] == [
        ("history", "019c-base", 33),
        ("subagent", "019c-boss", None),
    ]
    assert r.source == "subagent"


def test_thread_rolled_back_abandons_the_latest_surviving_turns() -> None:
    r = read(
        meta(),
        *turn("t1", "one", "a1"),
        *turn("t2", "two", "a2"),
        *turn("t3", "three", "a3"),
        event("thread_rolled_back", num_turns=2),
        *turn("t4", "four", "a4"),
    )
    assert [(t.prompt, t.status, t.forkable) for t in r.turns] == [
        ("one", "completed", True),
        ("two", "rolled-back", False),
        ("three", "rolled-back", False),
        ("four", "completed", True),
    ]


def test_without_task_events_turns_are_cut_at_each_user_message() -> None:
    r = read(
        meta(),
        message("user", "# AGENTS.md instructions for /w\n\nbe nice"),
        event("user_message", message="first ask"),
        message("assistant", "first answer"),
        event("user_message", message="second ask"),
        message("assistant", "second answer"),
    )
    assert [(t.prompt, t.answer, t.status, t.forkable) for t in r.turns] == [
        ("first ask", "first answer", "completed", True),
        ("second ask", "second answer", "completed", True),
    ]


def test_the_turns_a_paginated_fork_inherits_are_those_begun_in_its_lines_of_the_parent() -> None:
    parent = rollout(meta(), *turn("t1", "one", "1"), *turn("t2", "two", "2"), *turn("t3", "three", "3"))
    per_turn = len(turn("t", "p", "a"))
    # Codex's `history_base.end_ordinal_exclusive`: the parent's first N lines, its meta included.
    assert [turns_begun_before(parent, n) for n in (0, 1, 1 + per_turn, 2 + per_turn)] == [0, 0, 1, 2]
    assert turns_begun_before(parent, 10_000) == 3  # the whole parent, and no more
    untasked = rollout(
        meta(),
        event("user_message", message="first ask"),
        message("assistant", "first answer"),
        event("user_message", message="second ask"),
        message("assistant", "second answer"),
    )
    assert [turns_begun_before(untasked, n) for n in (3, 5)] == [1, 2]


def test_injected_context_is_never_the_prompt() -> None:
    r = read(
        meta(),
        event("task_started", turn_id="t1"),
        message("user", "<permissions instructions>\nsandbox</permissions instructions>"),
        message("user", "<user_instructions>\nAGENTS</user_instructions>"),
        message("user", "the real ask"),
        message("assistant", "a"),
        event("task_complete", turn_id="t1"),
    )
    assert [t.prompt for t in r.turns] == ["the real ask"]


def test_an_editors_attached_context_is_not_the_title() -> None:
    """Codex's IDE extension and desktop app send the files they attach, then the request after
    a marker; Codex titles the thread by the request, and so does remem."""
    attached = "\n# Files mentioned by the user:\n\n## notes.md: /w/notes.md\n\n## My request for Codex:\n"
    r = read(
        meta(),
        *turn("t1", f"{attached}summarise the notes\nthen list the action items", "a1"),
        *turn("t2", "# Context from my IDE setup:\n\n## My request for Codex:", "a2"),
    )
    assert r.title == "summarise the notes"
    assert [t.prompt for t in r.turns] == ["summarise the notes", "# Context from my IDE setup:"]


def test_a_compaction_marks_the_turn_it_precedes() -> None:
    r = read(meta(), *turn("t1", "q1", "a1"), line("compacted", message="summary"), *turn("t2", "q2", "a2"))
    assert [t.compacted for t in r.turns] == [False, True] and r.compactions == 1


def test_bad_lines_become_problems_and_a_missing_session_meta_an_error() -> None:
    r = read(
        meta(), b"{torn\n", b'{"type":"event_msg","payload":[1]}\n', *turn("t1", "q", "a"), b'{"type":"resp'
    )
    assert [(p.line, p.code) for p in r.problems] == [(2, "not-json"), (3, "bad-record"), (9, "torn-tail")]
    assert [t.prompt for t in r.turns] == ["q"]
    assert "no session_meta" in (read(*turn("t1", "q", "a")).error or "")
    assert "no cwd" in (read(line("session_meta", id=TID)).error or "")


def test_a_fork_point_finds_the_turn_by_its_events_and_agrees_with_the_full_read() -> None:
    decoy = line("response_item", type="message", role="user", content=[{"type": "task_complete"}])
    data = rollout(
        meta(),
        *turn("t1", "first ask", "one", call("c1"), output("c1")),
        line("event_msg", type="token_count", info={"note": '"task_started" and "turn_aborted"'}),
        b'not json, yet it says "task_started"\n',  # the candidates are then decoded one by one
        *turn("t2", "second ask", "two", decoy, message("assistant", 'quoting "task_complete"')),
        *turn("t3", "third ask", "three", end="turn_aborted"),
    )
    full = read_rollout(data)
    for index in (1, 2, 3):
        point = fork_point(data, index)
        rollout_, found = point.rollout, point.turn
        assert point.cut == end_of_line(data, found.end)
        assert found == full.turns[index - 1] and rollout_.title == "first ask" == full.title
    assert (full.turns[1].start, full.turns[1].end) == (11, 17)


def test_a_fork_point_refuses_what_the_full_read_refuses() -> None:
    data = rollout(meta(), *turn("t1", "q", "a"), event("task_started", turn_id="t2"), call("c9"))
    with pytest.raises(NotAForkPoint, match="turn 2 is open") as open_turn:
        fork_point(data, 2)
    with pytest.raises(NotAForkPoint, match="turn 3 does not exist: the rollout has 2") as missing:
        fork_point(data, 3)
    assert (open_turn.value.code, missing.value.code) == ("open-turn", "no-such-turn")
    with pytest.raises(NotAForkPoint, match="no session_meta") as damaged:
        fork_point(rollout(*turn("t1", "q", "a")), 1)
    assert damaged.value.code == "no-conversation"


def test_after_a_rollback_the_fork_point_comes_from_the_full_read() -> None:
    data = rollout(
        meta(), *turn("t1", "q1", "a1"), *turn("t2", "q2", "a2"), event("thread_rolled_back", num_turns=1)
    )
    assert fork_point(data, 1).turn == read_rollout(data).turns[0]
    with pytest.raises(NotAForkPoint, match="rolled-back"):
        fork_point(data, 2)
