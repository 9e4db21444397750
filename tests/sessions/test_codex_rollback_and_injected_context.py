"""Codex rollbacks count turns as Codex does (only those with a user message), and the user
messages Codex injects are never a prompt, whatever their case: the turn list, a listing that
grew (`listed_as_read`) and the fork point agree."""

from __future__ import annotations

import pytest

from remem.daemon.sessions.formats.codex import fork_point
from remem.daemon.sessions.formats.model import NotAForkPoint

from .codex_lines import event, line, listed_as_read, message, meta, rollout, turn

SHELL = "<user_shell_command>\n<command>ls</command>\n<result>README</result>\n</user_shell_command>"


def shell_task(turn_id: str) -> list:
    """A `!ls` the user ran: a standalone task whose only user item is Codex's fragment."""
    return [
        event("task_started", turn_id=turn_id),
        message("user", SHELL),
        event("task_complete", turn_id=turn_id),
    ]


def compact_task(turn_id: str) -> list:
    """A manual `/compact`: a task with no user message."""
    return [
        event("task_started", turn_id=turn_id),
        line("compacted", message="the gist"),
        event("task_complete", turn_id=turn_id),
    ]


def test_a_rollback_skips_a_shell_commands_turn_and_drops_it_with_the_user_turn_before_it() -> None:
    data = rollout(
        meta(),
        *turn("t1", "use tabs", "ok"),
        *turn("t2", "push straight to main", "ok"),
        *shell_task("t3"),
        *compact_task("t4"),
        event("thread_rolled_back", num_turns=1),
        *turn("t5", "use spaces", "ok"),
    )
    r = listed_as_read(data)
    assert [(t.prompt, t.status, t.forkable) for t in r.turns] == [
        ("use tabs", "completed", True),
        ("push straight to main", "rolled-back", False),
        ("", "rolled-back", False),
        ("/compact", "rolled-back", False),  # a compaction's turn reads as its command (decision 0366)
        ("use spaces", "completed", True),
    ]
    with pytest.raises(NotAForkPoint, match="rolled-back"):
        fork_point(data, 2)
    assert fork_point(data, 1).turn == r.turns[0] and fork_point(data, 5).turn == r.turns[4]


def test_a_second_rollback_counts_the_surviving_user_turns_only() -> None:
    data = rollout(
        meta(),
        *turn("t1", "one", "1"),
        *turn("t2", "two", "2"),
        *turn("t3", "three", "3"),
        event("thread_rolled_back", num_turns=1),
        *shell_task("t4"),
        event("thread_rolled_back", num_turns=1),
    )
    assert [t.status for t in listed_as_read(data).turns] == [
        "completed",
        "rolled-back",  # the latest user turn that survived the first rollback
        "rolled-back",
        "rolled-back",
    ]


def test_a_rollback_counts_a_turn_whose_user_message_is_an_image_only() -> None:
    image = line(
        "response_item", type="message", role="user", content=[{"type": "input_image", "image_url": "data:"}]
    )
    data = rollout(
        meta(),
        *turn("t1", "one", "1"),
        event("task_started", turn_id="t2"),
        image,
        event("user_message", message="", images=["data:"]),
        message("assistant", "a cat"),
        event("task_complete", turn_id="t2"),
        *shell_task("t3"),
        event("thread_rolled_back", num_turns=1),
    )
    assert [t.status for t in listed_as_read(data).turns] == ["completed", "rolled-back", "rolled-back"]


@pytest.mark.parametrize(
    "injected",
    [
        "<skill>\n<name>deploy</name>\n<path>/w/SKILL.md</path>\nbody\n</skill>",
        '<subagent_notification>\n{"agent_id":"a","status":"completed"}\n</subagent_notification>',
        "  \n<ENVIRONMENT_CONTEXT>\n  <cwd>/w</cwd>\n</ENVIRONMENT_CONTEXT>",
        "<Skill>\nbody\n</Skill>",
    ],
)
def test_context_codex_injects_is_never_the_prompt_in_any_case(injected: str) -> None:
    r = listed_as_read(
        rollout(
            meta(),
            event("task_started", turn_id="t1"),
            message("user", injected),
            event("user_message", message=injected),
            message("user", "real ask"),
            message("assistant", "a"),
            event("task_complete", turn_id="t1"),
        )
    )
    assert (r.title, [t.prompt for t in r.turns]) == ("real ask", ["real ask"])


def test_a_message_with_an_injected_item_is_not_the_users_as_codex_parses_it() -> None:
    mixed = line(
        "response_item",
        type="message",
        role="user",
        content=[
            {"type": "input_text", "text": "note this"},
            {"type": "input_text", "text": "<skill>\nx\n</skill>"},
        ],
    )
    r = listed_as_read(
        rollout(
            meta(),
            event("task_started", turn_id="t1"),
            mixed,
            message("user", "real ask"),
            message("assistant", "a"),
            event("task_complete", turn_id="t1"),
        )
    )
    assert (r.title, [t.text for t in r.turns]) == ("real ask", ["real ask"])
