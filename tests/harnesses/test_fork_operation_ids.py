"""An operation id names one Claude Code fork, whatever happened to its parent since, and
never a fork it did not make.

Sessions written by the real Claude Code CLI, forked with `remem sessions fork` by session id:
a retry of the same request takes the cut its journal entry records, even once the parent was
rewound (the `--at` line then lies in an abandoned branch) or deleted; a child already at the
path an operation id names, made with that id in another remem home, is adopted only when it is
this very fork (decision 0371).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.faults import EXIT_CODE
from remem.daemon.home import Home

from .claude import ClaudeCode, ClaudeRun
from .conftest import _assistant_uuid
from .fake_anthropic import FakeAnthropic, text
from .requests import same_conversation

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def remem(home: Home, *args: str) -> tuple[int, dict[str, Any]]:
    """`remem --home HOME ARGS --json`, in this process: its exit code and what it printed."""
    done = CliRunner().invoke(cli, ["--home", str(home.root), *args, "--json"])
    return done.exit_code, json.loads(done.stdout)


def crash(home: Home, *args: str, point: str) -> None:
    """`remem ARGS` in a process that dies at the fault point `point`."""
    env = {**os.environ, "REMEM_FAULTPOINT": point}
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_CODE, done.stdout + done.stderr


def three_turns(cc: ClaudeCode, fake: FakeAnthropic) -> tuple[ClaudeRun, list[Any]]:
    """A three-turn Claude Code session, and what it sent the model for its third turn."""
    fake.reply(text("first answer"))
    parent = cc.run("first question")
    fake.reply(text("second answer"))
    cc.run("second question", resume=parent.session_id)
    fake.reply(text("third answer"))
    cc.run("third question", resume=parent.session_id)
    return parent, fake.requests[-1]["messages"]


def turn_ends(home: Home, cc: ClaudeCode, session: str) -> list[str]:
    """The line each turn of `session` ends at, as `sessions turns` shows it."""
    code, listed = remem(home, "sessions", "turns", session, "--root", str(cc.projects))
    assert code == 0, listed
    return [str(turn["endSeq"]) for turn in listed["turns"]]


def rewind(cc: ClaudeCode, fake: FakeAnthropic, parent: ClaudeRun) -> None:
    """The user goes back to the first answer (`--resume-session-at`) and asks again: turns 2
    and 3 become an abandoned branch of the file."""
    fake.reply(text("rewound answer"))
    at = _assistant_uuid(parent.transcript, "first answer")
    cc.run("rewound question", resume=parent.session_id, resume_at=at)


def test_a_fork_that_crashed_once_prepared_is_finished_after_its_parent_was_rewound(
    home: Home, tmp_path: Path
) -> None:
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path, fake)
        parent, before_third = three_turns(cc, fake)
        after_second = turn_ends(home, cc, parent.session_id)[1]
        fork = ["sessions", "fork", parent.session_id, "--at", after_second, "--root", str(cc.projects)]
        crash(home, *fork, "--op-id", "op-x", point="fork.after-prepare")
        rewind(cc, fake, parent)
        code, fresh = remem(home, *fork, "--op-id", "op-new")
        assert code == 2 and fresh["error"]["code"] == "INVALID_ANCHOR", fresh  # the line is abandoned now

        code, done = remem(home, *fork, "--op-id", "op-x")
        assert code == 0, done
        assert (done["created"], done["forkTurn"]) == (True, 2)
        code, again = remem(home, *fork, "--op-id", "op-x")
        assert (code, again["child"], again["created"]) == (0, done["child"], False)
        code, other = remem(
            home, "sessions", "fork", parent.session_id, "--op-id", "op-x", "--root", str(cc.projects)
        )
        assert code == 3 and other["error"]["code"] == "OP_CONFLICT", other

        fake.reply(text("child answer"))
        child = cc.run("child question", resume=done["child"])
        sent = fake.requests[-1]["messages"]
    assert child.session_id == done["child"] and child.result["result"] == "child answer"
    assert same_conversation(sent, before_third)  # exactly the inherited prefix, then the prompt
    assert "rewound" not in str(sent) and "third" not in str(sent)


def test_a_committed_fork_answers_its_child_after_its_parent_was_rewound(home: Home, tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path, fake)
        parent, _ = three_turns(cc, fake)
        after_second = turn_ends(home, cc, parent.session_id)[1]
        fork = ["sessions", "fork", parent.session_id, "--at", after_second, "--op-id", "op-done"]
        fork += ["--root", str(cc.projects)]
        code, done = remem(home, *fork)
        assert (code, done["created"], done["forkTurn"]) == (0, True, 2), done
        rewind(cc, fake, parent)
    code, rewound = remem(home, *fork)
    assert code == 0, rewound
    assert rewound == {**done, "created": False}


def test_a_committed_fork_answers_its_child_once_its_parent_is_deleted(home: Home, tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path, fake)
        fake.reply(text("first answer"))
        parent = cc.run("first question")
    fork = ["sessions", "fork", parent.session_id, "--op-id", "op-done", "--root", str(cc.projects)]
    code, done = remem(home, *fork)
    assert (code, done["created"], done["forkTurn"]) == (0, True, 1), done

    parent.transcript.unlink()
    code, orphaned = remem(home, *fork)
    assert code == 0, orphaned
    assert orphaned == {**done, "created": False}  # the same command resumes it, from the same folder
    code, other = remem(home, *fork, "--title", "another")
    assert code == 3 and other["error"]["code"] == "OP_CONFLICT", other

    cc.transcript(done["child"]).unlink()
    code, gone = remem(home, *fork)
    assert code == 1 and gone["error"]["code"] == "NOT_FOUND", gone


def test_an_operation_id_used_in_another_home_adopts_only_the_fork_it_made_there(tmp_path: Path) -> None:
    first, second = Home(tmp_path / "home-a"), Home(tmp_path / "home-b")
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path, fake)
        parent, _ = three_turns(cc, fake)
    ends = turn_ends(first, cc, parent.session_id)
    base = ["sessions", "fork", parent.session_id, "--root", str(cc.projects)]

    def fork(home: Home, op: str, turn: int, *more: str) -> tuple[int, dict[str, Any]]:
        return remem(home, *base, "--op-id", op, "--at", ends[turn - 1], *more)

    code, made = fork(first, "shared", 1)
    assert (code, made["created"]) == (0, True), made
    child = cc.transcript(made["child"])
    held = child.read_bytes()

    # Another cut, another title, a longer or a shorter one: not this home's fork to adopt.
    for op, turn, more in (("shared", 2, ("--title", "B's title")), ("shared", 1, ("--title", "B's title"))):
        code, refused = fork(second, op, turn, *more)
        assert code == 3 and refused["error"]["code"] == "OP_CONFLICT", refused
        assert str(child) in refused["error"]["message"]
    code, longer = fork(first, "shared-2", 2)
    assert code == 0, longer
    code, refused = fork(second, "shared-2", 1)
    assert code == 3 and refused["error"]["code"] == "OP_CONFLICT", refused
    assert child.read_bytes() == held

    # Nothing of the refused requests is left for recovery to take the file for their child.
    code, elsewhere = fork(second, "op-b", 3)
    assert code == 0, elsewhere
    code, refused = fork(second, "shared", 2, "--title", "B's title")
    assert code == 3 and refused["error"]["code"] == "OP_CONFLICT", refused

    # The very fork the other home made is this one's too.
    code, adopted = fork(second, "shared", 1)
    assert code == 0, adopted
    assert adopted == {**made, "created": False}
    assert child.read_bytes() == held
