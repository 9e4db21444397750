"""`claude --resume <remem fork> --fork-session`, with the real CLI, in `remem sessions tree`.

The copy Claude Code writes keeps the fork's lines whole, `forkedFrom` naming the fork's parent
included, and adds no marker of its own: it records the fork's parent, not the fork. The tree
must place it under the fork it copies, flagged `inferred`, after the turns it shares with that
fork, as it places a copy of a session without a recorded parent (decisions 0122, 0461, 0517);
two remem forks of one turn stay forks of their parent.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli

from .claude import ClaudeCode
from .fake_anthropic import FakeAnthropic, text

pytestmark = pytest.mark.slow


def remem(home: Path, cc: ClaudeCode, *args: str) -> dict[str, Any]:
    command = ["--home", str(home), "sessions", *args, "--root", str(cc.projects), "--json"]
    done = CliRunner().invoke(cli, command)
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_a_fork_session_copy_of_a_remem_fork_sits_under_that_fork(tmp_path: Path) -> None:
    home = tmp_path / "remem-home"
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path / "claude", fake)

        def ask(prompt: str, **how: Any) -> str:
            fake.reply(text(f"answer to {prompt}"))
            return cc.run(prompt, **how).session_id

        parent = ask("first question")
        ask("second question", resume=parent)
        after_first = str(remem(home, cc, "turns", parent)["turns"][0]["endSeq"])
        fork, twin = (
            remem(home, cc, "fork", parent, "--op-id", op, "--at", after_first)["child"]
            for op in ("op-fork", "op-twin")
        )
        before = int(time.time() * 1000)
        copy = ask("copy question", resume=fork, fork=True)
        copy_of_copy = ask("copy again", resume=copy, fork=True)
        copy_of_parent = ask("parent copy", resume=parent, fork=True)

    nodes = {n["id"]: n for n in remem(home, cc, "tree", "--cwd", str(cc.cwd))["nodes"]}
    placed = {i: (n["parent"], n["kind"], n["forkTurn"], n["flags"]) for i, n in nodes.items()}
    assert placed == {
        parent: (None, "root", None, []),
        fork: (parent, "fork", 1, []),
        twin: (parent, "fork", 1, []),
        copy: (fork, "fork", 1, ["inferred"]),
        # Under the earliest of the sessions it shares its first record with (0461), after the
        # turns it shares with that one: its second turn is the copy's it copied.
        copy_of_copy: (fork, "fork", 1, ["inferred"]),
        copy_of_parent: (parent, "fork", 2, ["inferred"]),
    }
    # Made when it was copied, not when the fork it copies was: its own lines come first.
    assert nodes[copy]["createdAt"] >= before and nodes[copy]["createdAt"] > nodes[fork]["createdAt"]
