"""A refused Claude Code or Codex fork says why the place asked for is no fork point and where one
is: a line of an abandoned in-file branch is said to be one (Claude Code resumes none of it), an
open turn says what it lacks and names the nearest turns to branch after, and a subagent's file
names the session that ran it (decision 0361)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home

from ..sessions.claude_lines import CWD, SID, jsonl, prompt, result, say, use
from ..sessions.codex_lines import TID, call, event, message, meta, rollout, turn
from ..sessions.harness_roots import build_roots, claude_project, write

AGENT = "agent-a1b2"  # the Claude Code 2.1 subagent `build_roots` writes under SID


def fork(home: Home, root: Path, session: str, *args: str) -> tuple[int, dict[str, str]]:
    """`remem sessions fork SESSION ARGS` over `root`: its exit code and its refusal."""
    command = [f"--home={home.root}", "sessions", "fork", session, "--op-id", "op", *args, f"--root={root}"]
    result = CliRunner().invoke(cli, [*command, "--json"])
    return result.exit_code, json.loads(result.stdout)["error"]


def test_a_line_of_an_abandoned_branch_is_said_to_be_one(home: Home, tmp_path: Path) -> None:
    """`build_roots`'s session was rewound after turn 1: `and again` (lines 5-6) was left for
    `instead this` (7-8). Claude Code resumes only the active conversation (`--resume-session-at`
    a message of the branch fails: "No message found"), so nothing there can be forked."""
    root = build_roots(tmp_path)["claude-code"]
    code, refused = fork(home, root, SID, "--at", "5")
    assert (code, refused["code"]) == (2, "INVALID_ANCHOR")
    assert refused["message"] == (
        f"line 5 of {SID} is in an abandoned branch of the session (a rewind or an edit after turn 1, "
        f"{SID}@a3 in the tree); Claude Code resumes only the session's active conversation (even "
        "`--resume-session-at` finds no message of another branch), so no fork can start there: "
        f"branch after a turn of its conversation (`remem sessions turns {SID}`)"
    )


def test_a_codex_turn_still_running_says_what_it_lacks_and_where_to_branch(
    home: Home, tmp_path: Path
) -> None:
    lines = [
        meta(cwd=CWD),
        *turn("t1", "one", "1"),
        *turn("t2", "two", "2"),
        event("task_started", turn_id="t3"),
        message("user", "three"),
        call("c1", "exec_command"),
    ]
    root = tmp_path / "sessions"
    write(root / "2026" / "05" / "01" / f"rollout-2026-05-01T00-00-00-{TID}.jsonl", rollout(*lines))
    code, refused = fork(home, root, TID, "--at", str(len(lines)))
    assert (code, refused["code"]) == (1, "OPEN_TURN")
    assert refused["message"].endswith(
        ": turn 3 has not ended: the rollout has no task_complete for it (Codex is still running it, "
        "or stopped), and its call to exec_command has no output; branch after turn 2"
    )


@pytest.mark.parametrize(
    ("answered", "why"),
    [
        ((), "its call to Read has no result"),
        (
            (result("u3", "a2", "call-1"),),  # the model is asked again, and has not said yet
            "the model has not answered its last tool result yet "
            "(Claude Code is still running it, or stopped)",
        ),
    ],
    ids=["waiting-for-its-tool", "waiting-for-the-model"],
)
def test_an_open_claude_code_turn_says_what_it_waits_for(
    home: Home, tmp_path: Path, answered: tuple[dict[str, object], ...], why: str
) -> None:
    root = tmp_path / "projects"
    lines = [
        prompt("u1", None, "first"),
        say("a1", "u1", "first answer"),
        prompt("u2", "a1", "read it"),
        use("a2", "u2", "call-1", name="Read"),
        *answered,
    ]
    write(claude_project(root) / f"{SID}.jsonl", jsonl(*lines))
    code, refused = fork(home, root, SID, "--turn", "2")
    assert (code, refused["code"]) == (1, "OPEN_TURN")
    assert refused["message"].endswith(f": turn 2 is open: {why}; branch after turn 1"), refused["message"]


def test_a_claude_code_subagents_file_names_the_session_to_branch(home: Home, tmp_path: Path) -> None:
    root = build_roots(tmp_path)["claude-code"]
    for args in ((), ("--at", "2")):
        code, refused = fork(home, root, AGENT, *args)
        assert (code, refused["code"]) == (2, "INVALID")
        assert refused["message"].endswith(
            "a subagent's transcript: Claude Code resumes sessions, not subagents; branch the session "
            f"that ran it instead, {SID} (`remem sessions turns {SID}`)"
        ), refused["message"]


@pytest.mark.parametrize("harness", ["claude-code", "codex"])
def test_a_turn_the_session_does_not_have_is_said_as_for_dsh(
    home: Home, tmp_path: Path, harness: str
) -> None:
    """Which turns the session has and where to see them, naming the session, not its file."""
    root = build_roots(tmp_path)[harness]
    listed = CliRunner().invoke(cli, [f"--home={home.root}", "sessions", "list", f"--root={root}", "--json"])
    session = next(s for s in json.loads(listed.stdout)["sessions"] if s["kind"] != "subagent" and s["turns"])
    code, refused = fork(home, root, session["id"], "--turn", "99")
    assert (code, refused["code"]) == (2, "INVALID_ANCHOR")
    assert refused["message"] == (
        f"{session['id']} has no turn 99: its turns are 1-{session['turns']} (remem sessions turns)"
    )
