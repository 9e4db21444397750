"""A fork that crashed once its journal entry was prepared is finished by the retry from the
bytes it recorded, even when the parent grew meanwhile in a way that moves its conversation
off the forked turn: a Codex rollback, a Claude Code rewind. The turn was judged on those
bytes; only a change to them refuses the retry (`STALE_SOURCE`). The Claude Code case lives
here too, beside the Codex one it mirrors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.faults import EXIT_CODE
from remem.daemon.forks.harness_service import HarnessForkRequest, HarnessForks
from remem.daemon.home import Home
from remem.daemon.sessions.errors import OperationError
from remem.daemon.sessions.formats.claude_code import read_transcript
from remem.daemon.sessions.formats.codex import read_rollout

from ..sessions.claude_lines import jsonl, prompt, say
from ..sessions.codex_lines import event, rollout, turn
from .test_harness_forks import claude_parent, codex_parent, run_driver

pytestmark = pytest.mark.slow


def crash_after_prepare(home: Home, harness: str, parent: Path, op: str) -> bytes:
    """The parent's bytes once a fork after turn 2 crashed with its entry prepared."""
    before = parent.read_bytes()
    crashed = run_driver(home, harness, parent, op, "fork.after-prepare")
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    return before


def retry(home: Home, harness: str, parent: Path, op: str) -> dict[str, object]:
    retried = run_driver(home, harness, parent, op)
    assert retried.returncode == 0, retried.stdout + retried.stderr
    return json.loads(retried.stdout)


def test_a_codex_retry_finishes_the_child_after_the_parent_rolled_the_turn_back(
    home: Home, tmp_path: Path
) -> None:
    parent = codex_parent(tmp_path)
    before = crash_after_prepare(home, "codex", parent, "op")
    with parent.open("ab") as grown:  # Codex: the user rolls turn 2 back and asks again
        grown.write(rollout(event("thread_rolled_back", num_turns=1), *turn("t4", "second, again", "other")))
    assert [t.status for t in read_rollout(parent.read_bytes()).turns][1] == "rolled-back"
    done = retry(home, "codex", parent, "op")
    assert (done["created"], done["forkTurn"]) == (True, 2)
    child = Path(str(done["path"])).read_bytes()
    rest = child.split(b"\n", 1)[1]
    assert before.startswith(rest) and rest.endswith(b'"task_complete", "turn_id": "t2"}}\n')
    read = read_rollout(child)
    assert (read.session_id, [t.prompt for t in read.turns]) == (
        done["child"],
        ["first question", "second question"],
    )
    again = HarnessForks(home).fork(
        HarnessForkRequest(harness="codex", path=str(parent), operationId="op", afterTurn=2)
    )
    assert (again.created, again.path) == (False, done["path"])

    # Bytes the prepared fork copies that changed are still refused.
    other = codex_parent(tmp_path / "other")
    crash_after_prepare(home, "codex", other, "op-changed")
    other.write_bytes(other.read_bytes().replace(b"second answer", b"second ANSWER"))
    with pytest.raises(OperationError) as stale:
        HarnessForks(home).fork(
            HarnessForkRequest(harness="codex", path=str(other), operationId="op-changed", afterTurn=2)
        )
    assert stale.value.code == "STALE_SOURCE"


def test_a_claude_code_retry_finishes_the_child_after_a_rewind_past_the_cut(
    home: Home, tmp_path: Path
) -> None:
    parent = claude_parent(tmp_path)
    crash_after_prepare(home, "claude-code", parent, "op")
    with parent.open("ab") as grown:  # Claude Code: the user rewinds to turn 1 and asks anew
        grown.write(jsonl(prompt("u4", "a1", "second question, edited"), say("a4", "u4", "edited answer")))
    active = read_transcript(parent.read_bytes(), parent.name).turns
    assert [t.prompt for t in active] == ["first question", "second question, edited"]
    done = retry(home, "claude-code", parent, "op")
    assert (done["created"], done["forkTurn"], done["seedLength"]) == (True, 2, 8)
    child = Path(str(done["path"]))
    records = [json.loads(line) for line in child.read_text().splitlines()]
    assert [r["forkedFrom"]["messageUuid"] for r in records if r.get("forkedFrom")] == [
        "u1",
        "t1",
        "t2",
        "r1",
        "r2",
        "a1",
        "u2",
        "a2",
    ]
    assert [r["type"] for r in records[-2:]] == ["content-replacement", "custom-title"]
    read = read_transcript(child.read_bytes(), child.name)
    assert [(t.prompt, t.answer) for t in read.turns] == [
        ("first question", "first answer"),
        ("second question", "second answer"),
    ]
