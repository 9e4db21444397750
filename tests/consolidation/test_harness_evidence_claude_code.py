"""Claude Code evidence: a bash-mode command's output and the text Claude Code injects into a
prompt line never reach the model, and a turn a compaction cut is cited by the lines shown
(decision 0355)."""

from __future__ import annotations

from remem.daemon.consolidation.harness_evidence import project_harness
from remem.daemon.protocol.consolidation import EvidenceRange
from tests.sessions import claude_lines as cl

NAME = f"{cl.SID}.jsonl"
PASSWORD = "S3cr3tPassw0rd"


def test_a_bash_mode_command_is_shown_as_the_user_typed_it_and_its_output_never() -> None:
    data = cl.jsonl(
        cl.prompt("u1", None, "deploy the app"),
        cl.say("a1", "u1", "ok"),
        cl.prompt("b1", "a1", "<bash-input>cat .env</bash-input>"),
        cl.prompt("b2", "b1", f"<bash-stdout>DATABASE_URL=postgres://admin:{PASSWORD}@db/x</bash-stdout><bash-stderr></bash-stderr>"),
        cl.prompt("b3", "b2", f"<bash-stderr>warning: {PASSWORD}</bash-stderr>"),
        cl.prompt("u2", "b3", "thanks"),
        cl.say("a2", "u2", "np"),
    )  # fmt: skip
    evidence = project_harness("claude-code", NAME, data)
    assert [(t.turn, t.user, t.assistant, t.range) for t in evidence.turns] == [
        (1, ["deploy the app"], "ok", EvidenceRange(fromSeq=1, toSeq=2)),
        (2, ["! cat .env"], None, EvidenceRange(fromSeq=3, toSeq=5)),
        (3, ["thanks"], "np", EvidenceRange(fromSeq=6, toSeq=7)),
    ]
    rendered = evidence.render()
    assert PASSWORD not in rendered and "bash-" not in rendered


def test_a_system_reminder_and_a_prompt_hooks_text_are_cut_from_the_users_words() -> None:
    reminder = "<system-reminder>\nCLAUDE.md says: deploy with key X\n</system-reminder>"
    hook = f"<user-prompt-submit-hook>TOKEN=ghp_{'a' * 36}</user-prompt-submit-hook>"
    data = cl.jsonl(
        cl.rec(
            "user", "u1", None, [{"type": "text", "text": reminder}, {"type": "text", "text": "fix the bug"}]
        ),
        cl.say("a1", "u1", "fixed"),
        cl.prompt("u2", "a1", f"add a test\n\n{hook}"),
        cl.say("a2", "u2", "added"),
    )
    evidence = project_harness("claude-code", NAME, data)
    assert [t.user for t in evidence.turns] == [["fix the bug"], ["add a test"]]
    rendered = evidence.render()
    assert "CLAUDE.md" not in rendered and "TOKEN" not in rendered and "system-reminder" not in rendered


def test_a_turn_a_compaction_cut_is_cited_by_the_summarys_line_not_the_lines_it_replaced() -> None:
    data = cl.jsonl(
        cl.prompt("u1", None, "before compaction"),
        cl.say("a1", "u1", "old answer"),
        cl.rec("system", "b1", None, subtype="compact_boundary", logicalParentUuid="a1"),
        cl.prompt("s1", "b1", "Summary: the user said always use uv", isCompactSummary=True),
        cl.prompt("k1", "s1", "<command-name>/compact</command-name>"),
        cl.prompt("o1", "k1", "<local-command-stdout>Compacted</local-command-stdout>"),
        cl.prompt("u2", "o1", "after compaction"),
        cl.say("a2", "u2", "new answer"),
    )
    evidence = project_harness("claude-code", NAME, data)
    assert [(t.turn, t.summaries, t.range) for t in evidence.turns] == [
        (1, ["Summary: the user said always use uv"], EvidenceRange(fromSeq=4, toSeq=4)),
        (2, [], EvidenceRange(fromSeq=5, toSeq=6)),
        (3, [], EvidenceRange(fromSeq=7, toSeq=8)),
    ]


def test_a_compaction_inside_a_turn_keeps_only_the_tools_called_after_it() -> None:
    data = cl.jsonl(
        cl.prompt("u1", None, "big task, and never push to main"),
        cl.use("t1", "u1", "c1", name="Bash"),
        cl.result("r1", "t1", "c1", error=True),
        cl.rec("system", "b1", None, subtype="compact_boundary", logicalParentUuid="r1"),
        cl.prompt("s1", "b1", "Summary: the user asked for a big task", isCompactSummary=True),
        cl.use("t2", "s1", "c2", name="Edit"),
        cl.result("r2", "t2", "c2"),
        cl.say("a2", "r2", "done"),
        cl.prompt("u2", "a2", "thanks"),
        cl.say("a3", "u2", "np"),
    )
    first, second = project_harness("claude-code", NAME, data).turns
    assert (first.user, first.summaries, first.assistant) == (
        [],
        ["Summary: the user asked for a big task"],
        "done",
    )
    assert [(tool.name, tool.ok) for tool in first.tools] == [("Edit", True)]  # not the Bash before it
    assert first.range == EvidenceRange(fromSeq=5, toSeq=8)
    assert second.range == EvidenceRange(fromSeq=9, toSeq=10)


def queued(uuid: str, parent: str, prompt: object, **attachment: object) -> dict[str, object]:
    """What interactive Claude Code writes for a prompt typed while the agent works: no user
    line, an attachment in the chain that the model gets inside the running turn."""
    fields = {
        "type": "queued_command",
        "prompt": prompt,
        "commandMode": "prompt",
        "origin": {"kind": "human"},
    }
    return cl.rec("attachment", uuid, parent, attachment={**fields, **attachment}, isSidechain=False)


def test_a_prompt_typed_while_the_agent_worked_is_the_users_words_in_that_turn() -> None:
    reminder = "<system-reminder>the user sent a message while you worked</system-reminder>"
    data = cl.jsonl(
        cl.prompt("u1", None, "refactor the parser"),
        cl.use("t1", "u1", "c1", name="Edit"),
        cl.result("r1", "t1", "c1"),
        queued("q1", "r1", "and never use sudo in scripts"),
        queued("q2", "q1", [{"type": "text", "text": f"{reminder}keep the old API"}]),
        queued("q3", "q2", "ls -la", commandMode="bash"),
        queued("q4", "q3", "a background task finished", origin={"kind": "task-notification"}),
        queued("q5", "q4", "forwarded", isMeta=True),
        cl.say("a1", "q5", "refactored, without sudo"),
        cl.prompt("u2", "a1", "thanks"),
        cl.say("a2", "u2", "np"),
    )
    evidence = project_harness("claude-code", NAME, data)
    assert [(t.turn, t.user, t.range) for t in evidence.turns] == [
        (
            1,
            ["refactor the parser", "and never use sudo in scripts", "keep the old API"],
            EvidenceRange(fromSeq=1, toSeq=9),
        ),
        (2, ["thanks"], EvidenceRange(fromSeq=10, toSeq=11)),
    ]


def test_a_queued_line_that_is_not_one_adds_nothing() -> None:
    data = cl.jsonl(
        cl.prompt("u1", None, "start"),
        queued("q1", "u1", "fine"),
        queued("q2", "q1", 5),
        cl.rec("attachment", "q3", "q2", attachment="queued_command"),
        queued("q4", "q3", "not the user's", origin=7),
        cl.say("a1", "q4", "done"),
    )
    evidence = project_harness("claude-code", NAME, data)
    assert [t.user for t in evidence.turns] == [["start", "fine"]]


def test_a_turn_the_user_interrupted_is_said_stopped() -> None:
    data = cl.jsonl(
        cl.prompt("u1", None, "rewrite the tests"),
        cl.say("a1", "u1", "I will delete all the tests first"),
        cl.prompt("i1", "a1", "[Request interrupted by user]"),
        cl.prompt("u2", "i1", "no, keep them"),
        cl.say("a2", "u2", "kept"),
    )
    evidence = project_harness("claude-code", NAME, data)
    assert [(t.turn, t.stopped) for t in evidence.turns] == [(1, True), (2, False)]
    assert "Assistant (last text before the stop):\n> I will delete all the tests first" in evidence.render()


def test_a_tools_outcome_after_the_last_text_is_inside_the_turns_range() -> None:
    data = cl.jsonl(
        cl.prompt("u1", None, "run the migration"),
        cl.say("a1", "u1", "running it"),
        cl.use("t1", "a1", "c1", name="Bash"),
        cl.result("r1", "t1", "c1", error=True),
        cl.prompt("i1", "r1", "[Request interrupted by user]"),
        cl.prompt("u2", "i1", "check the logs"),
        cl.use("t2", "u2", "c2", name="Read"),
        cl.result("r2", "t2", "c2"),
    )
    evidence = project_harness("claude-code", NAME, data)
    assert [(t.turn, t.range, [(tool.name, tool.ok) for tool in t.tools]) for t in evidence.turns] == [
        # Through the interruption marker, where the stopped turn ends (decision 0535).
        (1, EvidenceRange(fromSeq=1, toSeq=5), [("Bash", False)]),
        (2, EvidenceRange(fromSeq=6, toSeq=8), [("Read", True)]),
    ]


def test_a_turn_whose_call_never_returned_is_said_stopped_not_answered() -> None:
    data = cl.jsonl(
        cl.prompt("u1", None, "deploy the app"),
        cl.say("a1", "u1", "Deploying now"),
        cl.use("a2", "a1", "call-1", name="Bash"),  # Claude Code was killed while the tool ran
    )
    (turn,) = project_harness("claude-code", NAME, data).turns
    assert (turn.stopped, turn.assistant, turn.tools) == (True, "Deploying now", [])
    assert "This turn was stopped before it finished." in turn.render()
    assert "Assistant (final)" not in turn.render()


def test_a_summary_names_no_path_of_the_transcript_claude_code_points_to() -> None:
    pointer = "/home/ana/.claude/projects/-home-ana-shop/6f1c.jsonl"
    summary = (
        "This session is being continued from a previous conversation that ran out of context.\n\n"
        "Summary: the user said always use uv\n\n"
        "If you need specific details from before compaction (like exact code snippets, error "
        f"messages, or content you generated), read the full transcript at: {pointer}\n"
        "Continue the conversation from where it left off."
    )
    data = cl.jsonl(
        cl.prompt("u1", None, "before compaction"),
        cl.say("a1", "u1", "old answer"),
        cl.rec("system", "b1", None, subtype="compact_boundary", logicalParentUuid="a1"),
        cl.prompt("s1", "b1", summary, isCompactSummary=True),
        cl.prompt("u2", "s1", "after compaction"),
        cl.say("a2", "u2", "new answer"),
    )
    rendered = project_harness("claude-code", NAME, data).render()
    assert "Summary: the user said always use uv" in rendered and "Continue the conversation" in rendered
    assert "/home/ana" not in rendered and "full transcript" not in rendered, rendered
