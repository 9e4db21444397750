"""Claude Code's bash mode (`! cmd`) and the text it injects into a prompt line: the command is
a prompt no model answers, like a local slash command's; the shell's output is no prompt, turn
or anything said; a system reminder or a prompt-submit hook's addition is not the user's words
(decision 0355). Read whole and as a listing that grew (`listed_as_read`)."""

from __future__ import annotations

from typing import Any

from remem.daemon.sessions.formats.claude_code import Transcript, fork_selection

from .claude_lines import CAVEAT, SID, jsonl, listed_as_read, prompt, rec, result, say, use

NAME = f"{SID}.jsonl"
SHELL_OUTPUT = "<bash-stdout>DB_PASSWORD=hunter2secret</bash-stdout><bash-stderr></bash-stderr>"


def read(*records: dict[str, Any] | bytes) -> Transcript:
    return listed_as_read(jsonl(*records), NAME)


def test_a_bash_mode_command_is_a_turn_of_its_own_and_its_output_is_none() -> None:
    data = jsonl(
        prompt("u1", None, "deploy the app"),
        say("a1", "u1", "ok"),
        prompt("c1", "a1", CAVEAT, isMeta=True),
        prompt("b1", "c1", "<bash-input>cat .env</bash-input>"),
        prompt("b2", "b1", SHELL_OUTPUT),
        prompt("b3", "b2", "<bash-stderr>cat: nope: No such file</bash-stderr>"),
        prompt("u2", "b3", "thanks"),
        say("a2", "u2", "np"),
    )
    t = listed_as_read(data, NAME)
    assert [(turn.prompt, turn.start, turn.end, turn.status, turn.forkable) for turn in t.turns] == [
        ("deploy the app", 1, 2, "completed", True),
        ("! cat .env", 4, 6, "completed", True),  # no model answers it: ended, as a local command
        ("thanks", 7, 8, "completed", True),
    ]
    assert t.turn_count == 3 and t.title == "deploy the app"
    assert all("hunter2secret" not in turn.text for turn in t.turns)
    assert fork_selection(data, NAME, 2).turn == t.turns[1]


def test_the_last_turn_a_bash_mode_command_has_ended_and_titles_the_session_as_claude_code_does() -> None:
    """Claude Code's own listing titles a session by its first prompt, `! cmd` for a bash-mode
    command (a slash command only when there is nothing else)."""
    t = read(
        prompt("b1", None, "<bash-input>  git status  </bash-input>"),
        prompt("b2", "b1", "<bash-stdout>clean</bash-stdout><bash-stderr></bash-stderr>"),
    )
    assert (t.title, t.turn_count) == ("! git status", 1)
    (only,) = t.turns
    assert (only.prompt, only.status, only.forkable, only.end) == ("! git status", "completed", True, 2)


def test_an_abandoned_path_past_a_shell_commands_output_is_a_branch() -> None:
    t = read(
        prompt("u1", None, "first"),
        say("a1", "u1", "one"),
        prompt("b1", "a1", "<bash-input>ls</bash-input>"),
        prompt("b2", "b1", "<bash-stdout>README</bash-stdout><bash-stderr></bash-stderr>"),
        prompt("u2", "b2", "abandoned ask"),
        say("a2", "u2", "abandoned answer"),
        prompt("u3", "b2", "instead this"),
        say("a3", "u3", "kept"),
    )
    assert [turn.prompt for turn in t.turns] == ["first", "! ls", "instead this"]
    (branch,) = t.branches
    assert (branch.after, branch.after_turn, [turn.prompt for turn in branch.turns]) == (
        "b2",
        2,
        ["abandoned ask"],
    )


def test_injected_blocks_are_cut_from_a_prompt_and_a_line_of_them_alone_is_none() -> None:
    reminder = "<system-reminder>\nAs you answer, CLAUDE.md says: token=abc\n</system-reminder>"
    hook = "<user-prompt-submit-hook>hook context TOKEN=xyz</user-prompt-submit-hook>"
    t = read(
        rec(
            "user", "u1", None, [{"type": "text", "text": reminder}, {"type": "text", "text": "fix the bug"}]
        ),
        say("a1", "u1", "fixed"),
        prompt("u2", "a1", f"and the test\n\n{hook}"),
        say("a2", "u2", "done"),
        prompt("u3", "a2", f"{reminder}then {hook}ship it"),
        use("t3", "u3", "c3", name="Bash"),
        result("r3", "t3", "c3"),
        prompt("r1", "r3", reminder),  # written by the harness, not marked isMeta
        prompt("u4", "r1", "next"),
        say("a4", "u4", "ok"),
    )
    assert [(turn.prompt, turn.text, turn.status) for turn in t.turns] == [
        ("fix the bug", "fix the bug", "completed"),
        ("and the test", "and the test", "completed"),
        ("then ship it", "then ship it", "completed"),
        ("next", "next", "completed"),
    ]
    # The reminder alone starts no turn and is nothing said: the unanswered turn before it ends
    # at its tool result (decision 0353), not at the reminder.
    assert [(turn.start, turn.end) for turn in t.turns] == [(1, 2), (3, 4), (5, 7), (9, 10)]
