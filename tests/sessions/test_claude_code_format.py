"""The Claude Code transcript reader on small hand-made files: graph rules and bad input.

The shapes mirror what Claude Code 2.1 writes (see tests/harnesses for the real thing); each
test builds the few lines a rule needs.
"""

from __future__ import annotations

from typing import Any

import pytest

from remem.daemon.sessions.formats import jsonl as decoding
from remem.daemon.sessions.formats.claude_code import Transcript, fork_selection, read_transcript

from .claude_lines import (
    CWD,
    SID,
    inline_subagents,
    jsonl,
    listed_as_read,
    prompt,
    rec,
    result,
    say,
    side,
    use,
)


def read(*records: dict[str, Any] | bytes) -> Transcript:
    return listed_as_read(jsonl(*records), f"{SID}.jsonl")


def codes(transcript) -> list[str]:
    return [problem.code for problem in transcript.problems]


def test_a_plain_conversation_has_one_turn_per_prompt() -> None:
    t = read(
        prompt("u1", None, "first question"),
        say("a1", "u1", "one"),
        prompt("u2", "a1", "next"),
        say("a2", "u2", "two"),
    )
    assert [(turn.prompt, turn.answer, turn.start, turn.end, turn.key) for turn in t.turns] == [
        ("first question", "one", 1, 2, "a1"),
        ("next", "two", 3, 4, "a2"),
    ]
    assert all(turn.status == "completed" and turn.forkable for turn in t.turns)
    assert (t.session_id, t.cwd, t.title, t.title_source, t.root) == (
        SID,
        CWD,
        "first question",
        "prompt",
        "u1",
    )
    assert t.problems == () and t.error is None and t.branches == ()


def test_the_workspace_is_the_records_cwd_never_the_folder_name() -> None:
    t = listed_as_read(
        jsonl(prompt("u1", None, "q"), say("a1", "u1", "a")), f"-x-truncated-abc123/{SID}.jsonl"
    )
    assert t.cwd == CWD and t.session_id == SID


def test_parallel_tool_results_hang_beside_the_path_but_are_not_branches() -> None:
    t = read(
        prompt("u1", None, "read both"),
        use("t1", "u1", "c1"),
        use("t2", "t1", "c2"),
        result("r1", "t1", "c1"),  # parented to its own tool_use line: a side leaf
        result("r2", "t2", "c2", error=True),
        say("a1", "r2", "done"),
    )
    (turn,) = t.turns
    assert t.branches == ()
    assert [(tool.name, tool.call_id, tool.ok) for tool in turn.tools] == [
        ("Read", "c1", True),
        ("Read", "c2", False),
    ]
    assert turn.forkable and turn.status == "completed"


def test_a_tool_use_without_its_result_leaves_the_turn_open() -> None:
    t = read(prompt("u1", None, "go"), use("t1", "u1", "c1"))
    (turn,) = t.turns
    assert (turn.status, turn.forkable, turn.answer, turn.end) == ("open", False, None, 2)


def test_a_new_prompt_under_a_node_with_a_conversation_below_is_a_branch() -> None:
    t = read(
        prompt("u1", None, "start"),
        say("a1", "u1", "one"),
        rec("system", "s1", "a1", subtype="stop_hook_summary"),
        prompt("u2", "s1", "abandoned"),
        say("a2", "u2", "two"),
        prompt("u3", "s1", "edited instead"),  # same parent: a rewind
        say("a3", "u3", "three"),
    )
    assert [turn.prompt for turn in t.turns] == ["start", "edited instead"]
    (branch,) = t.branches
    assert (branch.after, branch.after_turn, branch.leaf) == ("s1", 1, "a2")
    assert [(turn.index, turn.prompt, turn.answer) for turn in branch.turns] == [(2, "abandoned", "two")]


def test_progress_and_hook_lines_below_a_node_are_not_branches() -> None:
    t = read(
        prompt("u1", None, "start"),
        use("t1", "u1", "c1", name="Task"),
        rec("progress", "p1", "t1"),
        rec("progress", "p2", "p1"),
        result("r1", "t1", "c1"),
        say("a1", "r1", "done"),
    )
    assert t.branches == () and len(t.turns) == 1 and t.turns[0].forkable


def test_meta_tool_result_compaction_summary_and_command_output_are_not_prompts() -> None:
    t = read(
        prompt("u1", None, "real one"),
        prompt("m1", "u1", "caveat", isMeta=True),
        prompt("c1", "m1", "<local-command-stdout>ok</local-command-stdout>"),
        prompt("k1", "c1", "<command-name>/review</command-name>\n<command-args>main</command-args>"),
        say("a1", "k1", "reviewed"),
        prompt("x1", "a1", "[Request interrupted by user]"),
        prompt(
            "n1", "x1", "<task-notification>\n<task-id>a9</task-id>", origin={"kind": "task-notification"}
        ),
    )
    assert [(turn.prompt, turn.status, turn.end) for turn in t.turns] == [
        ("real one", "completed", 1),  # unanswered, but the next prompt ended it (decision 0353)
        # Stopped, it ends at its last line said: the notification after its marker (decision 0535).
        ("/review main", "aborted", 7),
    ]


def test_a_tool_result_is_no_prompt_but_an_interrupt_beside_it_stops_the_turn() -> None:
    """A user line of tool results alone says nothing of prompts or turns; the same line with
    Claude Code's interrupt marker beside its result ends the turn as the user stopped it."""
    interrupted = result("r1", "t1", "c1", error=True)
    interrupted["message"]["content"].append(
        {"type": "text", "text": "[Request interrupted by user for tool use]"}
    )
    t = read(prompt("u1", None, "run it"), use("t1", "u1", "c1"), interrupted)
    assert [(turn.prompt, turn.status) for turn in t.turns] == [("run it", "aborted")]
    answered = read(prompt("u1", None, "run it"), use("t1", "u1", "c1"), result("r1", "t1", "c1"))
    assert [(turn.prompt, turn.status) for turn in answered.turns] == [("run it", "open")]


def test_a_slash_command_is_a_turn_but_titles_only_a_session_of_commands() -> None:
    """As Claude Code's own listing (claude-agent-sdk's first prompt) titles a session."""
    clear = "<command-name>/clear</command-name>\n<command-message>clear</command-message>"
    t = read(
        prompt("k1", None, clear),
        prompt("o1", "k1", "<local-command-stdout></local-command-stdout>"),
        prompt("u1", "o1", "add a margin below the details element"),
        say("a1", "u1", "done"),
    )
    assert [turn.prompt for turn in t.turns] == ["/clear", "add a margin below the details element"]
    assert (t.title, t.title_source) == ("add a margin below the details element", "prompt")
    assert read(prompt("k1", None, clear)).title == "/clear"
    ticked = read(
        prompt("t1", None, "<tick>12:00</tick>"), say("a1", "t1", "idle"), prompt("u1", "a1", "go on")
    )
    assert [turn.prompt for turn in ticked.turns] == ["<tick>12:00</tick>", "go on"]
    assert ticked.title == "go on", "a loop's tick starts a turn but titles nothing"


def test_the_editors_context_blocks_are_not_the_users_words() -> None:
    opened = "<ide_opened_file>The user opened the file /home/u/proj/app.py in the IDE.</ide_opened_file>"
    selected = "<ide_selection>The user selected lines 3 to 9 of app.py:\ndef f(): ...</ide_selection>"
    ask = [
        {"type": "text", "text": opened},
        {"type": "text", "text": selected},
        {"type": "text", "text": "why?"},
    ]
    t = read(
        rec("user", "u1", None, ask),
        say("a1", "u1", "because"),
        rec("user", "u2", "a1", [{"type": "text", "text": opened}]),
        prompt("u3", "u2", "thanks"),
        say("a3", "u3", "you are welcome"),
    )
    assert [turn.prompt for turn in t.turns] == ["why?", "thanks"]
    assert t.title == "why?"


def test_compaction_segments_are_joined_through_the_logical_parent() -> None:
    t = read(
        prompt("u1", None, "before compaction"),
        say("a1", "u1", "old answer"),
        rec("system", "b1", None, subtype="compact_boundary", logicalParentUuid="a1"),
        prompt("s1", "b1", "This session is being continued... summary", isCompactSummary=True),
        prompt("u2", "s1", "after compaction"),
        say("a2", "u2", "new answer"),
    )
    assert [turn.prompt for turn in t.turns] == ["before compaction", "after compaction"]
    assert t.segments == 1 and t.root == "u1" and t.problems == ()


def test_titles_prefer_custom_then_ai_then_own_summary_then_first_prompt() -> None:
    base = (prompt("u1", None, "the prompt"), say("a1", "u1", "x"))
    foreign = {"type": "summary", "summary": "other file", "leafUuid": "elsewhere"}
    own = {"type": "summary", "summary": "own summary", "leafUuid": "a1"}
    ai = {"type": "ai-title", "aiTitle": "ai named", "sessionId": SID}
    custom = {"type": "custom-title", "customTitle": "user named", "sessionId": SID}
    assert (read(*base, foreign).title, read(*base, foreign).foreign_summaries) == (
        "the prompt",
        (("elsewhere", "other file"),),
    )
    assert read(*base, own).title_source == "summary" and read(*base, own).title == "own summary"
    assert read(*base, own, ai).title == "ai named"
    assert read(*base, custom, own, ai).title == "user named"


def test_forked_from_is_a_lineage_edge() -> None:
    marker = {"sessionId": "parent-session", "messageUuid": "a1"}
    t = read(prompt("u1", None, "q", forkedFrom=marker), say("a1", "u1", "a", forkedFrom=marker))
    assert [(edge.kind, edge.parent) for edge in t.lineage] == [("fork", "parent-session")]


def test_a_subagent_file_names_its_agent_and_parent_session() -> None:
    t = listed_as_read(
        jsonl(
            prompt("u1", None, "task for agent", isSidechain=True, agentId="a77"),
            say("a1", "u1", "agent done", isSidechain=True, agentId="a77"),
        ),
        "agent-a77.jsonl",
    )
    assert (t.subagent, t.agent_id, t.parent_session, t.session_id) == (True, "a77", SID, "agent-a77")
    assert [turn.answer for turn in t.turns] == ["agent done"]


def test_a_torn_last_line_is_a_write_in_progress_not_an_error() -> None:
    t = read(prompt("u1", None, "q"), say("a1", "u1", "a"), b'{"type":"assistant","uuid":"a2","par')
    assert codes(t) == ["torn-tail"] and len(t.turns) == 1 and t.error is None


def test_bad_lines_are_skipped_with_their_line_number_and_reason() -> None:
    t = read(
        prompt("u1", None, "q"),
        b"not json at all\n",
        b'{"type":"user","uuid":"\xff\xfe","parentUuid":null}\n',
        b"[1, 2]\n",
        b'{"type":"user","uuid":"u9","parentUuid":7}\n',
        {"type": "a-type-from-the-future", "whatever": [1]},
        say("a1", "u1", "a"),
    )
    # The line that is not UTF-8 is read with U+FFFD for its bad bytes, as Claude Code reads it,
    # and flagged (decision 0415).
    assert codes(t) == ["not-json", "replaced-utf8", "bad-record", "bad-record"]
    assert [problem.line for problem in t.problems] == [2, 3, 4, 5]
    assert "not UTF-8" in t.problems[1].reason and "parentUuid" in t.problems[3].reason
    assert [turn.answer for turn in t.turns] == ["a"]


def test_duplicate_uuids_cycles_and_missing_parents_are_flagged_not_raised() -> None:
    t = read(
        prompt("u1", "gone", "orphaned start"),
        say("a1", "u1", "a"),
        say("a1", "u1", "a again"),
        # A minute later: nothing is stamped in the 5 s before the loop, which is cut there.
        prompt("c1", "c2", "loop", timestamp="2026-01-01T00:01:00Z"),
        say("c2", "c1", "loop", timestamp="2026-01-01T00:01:01Z"),
    )
    assert sorted(set(codes(t))) == ["cycle", "duplicate-uuid", "missing-parent"]
    assert [turn.answer for turn in t.turns] == ["loop"]  # the latest leaf, its cycle cut
    looped = read(prompt("c1", "c2", "loop"), say("c2", "c1", "loop back"))
    assert "cycle" in codes(looped) and looped.turns[0].answer == "loop back"


@pytest.mark.parametrize(("asked", "turns"), [("00:07", ["first", "second"]), ("00:08", ["second"])])
def test_a_cycle_is_read_on_from_where_claude_code_goes_on(asked: str, turns: list[str]) -> None:
    """Claude Code's walk back from the leaf, at a parent it has seen already, goes on from the
    latest record stamped at most 5 s before the record it stands at (decision 0416): the
    prompt whose parent is its own answer follows what was said before it, or begins the
    conversation when nothing was said in those 5 s."""
    stamp = "2026-01-01T00:{}Z".format
    data = jsonl(
        prompt("u1", None, "first", timestamp=stamp("00:01")),
        say("a1", "u1", "one", timestamp=stamp("00:02")),
        prompt("u2", "a2", "second", timestamp=stamp(asked)),
        say("a2", "u2", "two", timestamp=stamp("00:09")),
    )
    t = read_transcript(data, f"{SID}.jsonl")
    assert [turn.prompt for turn in t.turns] == turns
    ((line, code, reason),) = [(p.line, p.code, p.reason) for p in t.problems]
    assert (line, code) == (3, "cycle") and ("read on from line 2" in reason) == (len(turns) == 2)
    assert fork_selection(data, f"{SID}.jsonl", len(turns)).parents["u2"] == (
        "a1" if len(turns) == 2 else None
    )


def test_a_file_without_conversation_is_an_error_for_that_session_only() -> None:
    t = read({"type": "summary", "summary": "s", "leafUuid": "x"}, b"garbage\n")
    assert t.error is not None and "no conversation" in t.error and t.turns == ()
    assert read_transcript(b"", f"{SID}.jsonl").error is not None


def test_an_overlong_line_is_skipped_without_being_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decoding, "MAX_LINE", 400)
    huge = prompt("u2", "a1", "x" * 1000)
    t = read(prompt("u1", None, "q"), say("a1", "u1", "a"), huge)
    assert codes(t) == ["too-long"] and "over 400" in t.problems[0].reason
    assert [turn.prompt for turn in t.turns] == ["q"]


def test_inline_sidechains_are_subagents_of_their_own_not_turns_or_branches() -> None:
    t = read(*inline_subagents())
    assert [(turn.prompt, turn.answer, turn.forkable) for turn in t.turns] == [
        ("survey the repo", "the repo has three modules", True),
        ("and the tests?", "tests are in tests/", True),
    ]
    assert (t.branches, t.subagent, t.problems) == ((), False, ())
    assert [(c.root, c.created_at, [(x.prompt, x.answer) for x in c.turns]) for c in t.sidechains] == [
        ("s1", "2026-01-01T00:00:10Z", [("list the modules", "three modules")]),
        ("t1", "2026-01-01T00:00:20Z", [("find the tests", "tests live in tests/")]),
    ]
    assert [tool.name for tool in t.sidechains[0].turns[0].tools] == ["Glob"]
    assert [tool.name for tool in t.turns[0].tools] == ["Task"], "the subagent's tools are its own"


def test_an_inline_sidechain_rewound_keeps_its_latest_leaf_and_no_agent_file_has_any() -> None:
    rewound = read(
        prompt("u1", None, "go"),
        use("a1", "u1", "task-1", name="Task"),
        side(prompt("s1", None, "look")),
        side(say("s2", "s1", "first try")),
        side(say("s3", "s1", "second try")),
        result("r1", "a1", "task-1"),
        say("a2", "r1", "done"),
    )
    [chain] = rewound.sidechains
    assert (chain.root, chain.turns[0].answer) == ("s1", "second try")
    agent = read(side(prompt("s1", None, "look")), side(say("s2", "s1", "seen")))
    assert (agent.subagent, agent.sidechains) == (True, ())


def test_a_fork_session_copy_is_dated_by_its_own_first_line_not_its_parents_records() -> None:
    """`claude --resume P --fork-session` writes the prompt's queue lines, then P's records
    with P's times, then its own prompt: the copy was made at its first line, a minute on."""
    made = "2026-01-01T00:01:05.049Z"
    t = read(
        {"type": "queue-operation", "operation": "enqueue", "sessionId": SID, "timestamp": made},
        prompt("u1", None, "first question", timestamp="2026-01-01T00:00:00.293Z"),
        say("a1", "u1", "first answer", timestamp="2026-01-01T00:00:01.355Z"),
        prompt("u2", "a1", "forked question", timestamp="2026-01-01T00:01:05.172Z"),
        say("a2", "u2", "forked answer", timestamp="2026-01-01T00:01:06.319Z"),
    )
    assert (t.created_at, t.updated_at) == (made, "2026-01-01T00:01:06.319Z")


def test_stamps_are_compared_as_times_whatever_their_precision_or_offset() -> None:
    t = read(
        prompt("u1", None, "q", timestamp="not a time"),
        say("a1", "u1", "a", timestamp="2026-01-01T00:00:06Z"),
        prompt("u2", "a1", "q2", timestamp="2026-01-01T00:00:06.500Z"),
        say("a2", "u2", "a2", timestamp="2026-01-01T01:00:00+02:00"),  # 23:00 the day before
    )
    assert (t.created_at, t.updated_at) == ("2026-01-01T00:00:06Z", "2026-01-01T00:00:06.500Z")
    as_wide = read(  # all 24 characters wide, one with an offset: text order would say 02:00
        prompt("u1", None, "q", timestamp="2026-01-01T00:00:06.500Z"),
        say("a1", "u1", "a", timestamp="2026-01-01T02:00:00+0200"),  # 00:00:00 UTC
    )
    assert as_wide.updated_at == "2026-01-01T00:00:06.500Z"


def test_turns_before_a_lost_line_stay_as_a_branch_before_the_first_turn() -> None:
    """A line that does not decode cuts the chain: Claude Code resumes from the latest leaf
    back to the cut, and what was said before it is still shown, not dropped."""
    t = read(
        prompt("u1", None, "first question"),
        say("a1", "u1", "first answer"),
        b'{"type":"user","uuid":"u2","parentUuid":"a1","message":{"role":"user","content":"\x00"}}\n',
        say("a2", "u2", "second answer"),
        prompt("u3", "a2", "third question"),
        say("a3", "u3", "third answer"),
    )
    assert codes(t) == ["not-json", "missing-parent"]
    assert [turn.prompt for turn in t.turns] == ["third question"]
    (branch,) = t.branches
    assert (branch.after, branch.after_turn, branch.leaf) == ("", 0, "a1")
    assert [(turn.index, turn.prompt, turn.answer) for turn in branch.turns] == [
        (1, "first question", "first answer")
    ]
