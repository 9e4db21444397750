"""Codex evidence: the turn a rollback undid stays out even when a shell command's turn came
after it, injected context (skills, subagent notifications, the IDE extension's context) is not
the user's words, and a turn a compaction stands in is cited from the ``compacted`` line with
the tools called after it (decision 0355)."""

from __future__ import annotations

from remem.daemon.consolidation.harness_evidence import project_harness
from remem.daemon.protocol.consolidation import EvidenceRange
from tests.sessions import codex_lines as cx

NAME = "rollout.jsonl"


def test_a_rollback_after_a_shell_command_undoes_the_users_last_turn() -> None:
    data = cx.rollout(
        cx.meta(),
        *cx.turn("t1", "use tabs in this repo", "ok"),
        *cx.turn("t2", "actually ALWAYS push straight to main", "ok"),
        cx.event("task_started", turn_id="t3"),
        cx.message("user", "<user_shell_command>\n<command>ls</command>\n</user_shell_command>"),
        cx.event("task_complete", turn_id="t3"),
        cx.event("thread_rolled_back", num_turns=1),
    )
    evidence = project_harness("codex", NAME, data)
    assert [(t.turn, t.user) for t in evidence.turns] == [(1, ["use tabs in this repo"])]
    assert "push straight to main" not in evidence.render()


def test_skills_subagent_notifications_and_the_ide_context_are_not_the_users_words() -> None:
    ide = (
        "# Context from my IDE setup:\n\n## Active file: src/config.py\n\n## Active selection of the file:\n"
        "PASSWORD = 'correct-horse-battery'\n\n## Open tabs:\n- config.py: src/config.py\n\n"
        "## My request for Codex:\nmove this to env vars"
    )
    data = cx.rollout(
        cx.meta(),
        *cx.turn(
            "t1",
            ide,
            "moved",
            cx.message("user", "<skill>\n<name>deploy</name>\nrun ./deploy.sh --token T0KEN\n</skill>"),
            cx.message("user", '<SUBAGENT_NOTIFICATION>{"agent_id":"a"}</SUBAGENT_NOTIFICATION>'),
            cx.event("user_message", message=ide),
        ),
    )
    evidence = project_harness("codex", NAME, data)
    assert [t.user for t in evidence.turns] == [["move this to env vars"]]
    rendered = evidence.render()
    for leaked in ("correct-horse", "Open tabs", "T0KEN", "deploy.sh", "agent_id"):
        assert leaked not in rendered


def test_an_ide_context_item_of_its_own_is_left_out_and_the_request_after_it_kept() -> None:
    context = (
        "# Context from my IDE setup:\n\n## Active file: a.py\n\n## Active selection of the file:\nKEY = 1"
    )
    both = cx.line(
        "response_item",
        type="message",
        role="user",
        content=[{"type": "input_text", "text": context}, {"type": "input_text", "text": "rename KEY"}],
    )
    data = cx.rollout(
        cx.meta(),
        cx.event("task_started", turn_id="t1"),
        both,
        cx.message("assistant", "renamed"),
        cx.event("task_complete", turn_id="t1"),
    )
    (only,) = project_harness("codex", NAME, data).turns
    assert only.user == ["rename KEY"]


def test_a_compaction_between_turns_is_in_the_range_of_the_turn_it_stands_in() -> None:
    data = cx.rollout(
        cx.meta(),
        *cx.turn("t1", "old ask", "old answer"),
        cx.line("compacted", message="summary of the old ask"),
        *cx.turn("t2", "new ask", "new answer"),
    )
    (only,) = project_harness("codex", NAME, data).turns
    assert (only.turn, only.summaries, only.user) == (2, ["summary of the old ask"], ["new ask"])
    assert only.range == EvidenceRange(fromSeq=7, toSeq=12)  # the compacted line .. task_complete


def test_a_compaction_inside_a_turn_keeps_only_the_tools_called_after_it() -> None:
    data = cx.rollout(
        cx.meta(),
        *cx.turn(
            "t1",
            "long ask",
            "final answer",
            cx.call("c1"),
            cx.output("c1"),
            cx.event("exec_command_end", call_id="c1", exit_code=1),
            cx.line("compacted", message="gist"),
            cx.call("c2", name="apply_patch"),
            cx.output("c2"),
        ),
    )
    (only,) = project_harness("codex", NAME, data).turns
    assert (only.user, only.summaries, only.assistant) == ([], ["gist"], "final answer")
    assert [(tool.name, tool.ok) for tool in only.tools] == [("apply_patch", True)]
    assert only.range == EvidenceRange(fromSeq=8, toSeq=12)  # the compacted line .. task_complete


def test_a_turn_the_user_stopped_is_said_stopped_and_its_text_is_no_final_answer() -> None:
    data = cx.rollout(
        cx.meta(),
        *cx.turn("t1", "clean up the build folder", "Deleting everything under /", end="turn_aborted"),
        *cx.turn("t2", "only the build folder", "removed build/"),
    )
    evidence = project_harness("codex", NAME, data)
    assert [(t.turn, t.stopped, t.assistant) for t in evidence.turns] == [
        (1, True, "Deleting everything under /"),
        (2, False, "removed build/"),
    ]
    first, second = (turn.render() for turn in evidence.turns)
    assert "This turn was stopped before it finished." in first and "Assistant (final)" not in first
    assert "Assistant (last text before the stop):\n> Deleting everything under /" in first
    assert "Assistant (final):\n> removed build/" in second and "stopped" not in second


def test_a_turn_the_rollout_ends_in_is_said_stopped_its_unanswered_call_left_out() -> None:
    data = cx.rollout(
        cx.meta(),
        *cx.turn("t1", "run the tests", "all green"),
        *cx.turn("t2", "deploy to production", "Deploying now", cx.call("c1"))[:-1],  # Codex was killed
    )
    first, second = project_harness("codex", NAME, data).turns
    assert (first.stopped, second.stopped, second.tools) == (False, True, [])
    assert "This turn was stopped before it finished." in second.render()
    assert "Assistant (last text before the stop):\n> Deploying now" in second.render()
    assert "Assistant (final)" not in second.render()
