"""An outcome Codex writes after its turn ended (an interrupted command's `item_completed`,
after the `turn_aborted`) tells how the call went, never that it was answered: the whole read,
`sessions turns`, the fast fork point and the default fork turn agree on what can be forked."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.daemon.forks.harness_service import HarnessForkRequest, HarnessForks
from remem.daemon.home import Home
from remem.daemon.sessions.formats.codex import fork_point, read_rollout
from remem.daemon.sessions.formats.model import NotAForkPoint
from remem.daemon.sessions.harness_sources import turn_summaries

from .codex_lines import TID, call, event, listed_as_read, message, meta, output, rollout, turn

FAILED = {"type": "commandExecution", "id": "c9", "status": "failed", "exit_code": -1}


def unanswered() -> bytes:
    """Turn 2 aborted while its command ran, with no output for it (a crash mid-tool), and
    the command's late outcome after the `turn_aborted`."""
    return rollout(
        meta(),
        *turn("t1", "first", "a1"),
        event("task_started", turn_id="t2"),
        message("user", "run the long thing"),
        call("c9"),
        event("turn_aborted", turn_id="t2", reason="interrupted"),
        event("item_completed", item=FAILED),
    )


def test_a_late_outcome_does_not_answer_a_call_without_output() -> None:
    data = unanswered()
    whole = listed_as_read(data)
    assert [(t.status, t.forkable) for t in whole.turns] == [("completed", True), ("aborted", False)]
    assert [tool.ok for tool in whole.turns[1].tools] == [False]  # the outcome still counts
    assert [row.status for row in turn_summaries(whole.turns)] == ["completed", "open"]
    with pytest.raises(NotAForkPoint, match="turn 2 is aborted") as refused:
        fork_point(data, 2)
    assert refused.value.code == "open-turn"


def test_the_fork_point_reads_a_late_outcome_as_the_whole_read_does() -> None:
    interrupted = output("c9")
    interrupted["payload"]["output"] = "aborted by user"
    data = rollout(
        meta(),
        *turn("t1", "go", "", call("c9"), interrupted, end="turn_aborted"),
        event("item_completed", item=FAILED),
        *turn("t2", "next", "ok"),
    )
    whole = read_rollout(data)
    for index in (1, 2):
        assert fork_point(data, index).turn == whole.turns[index - 1]
    assert [tool.ok for tool in fork_point(data, 1).turn.tools] == [False]


def test_the_default_fork_is_the_last_turn_the_fork_point_takes(home: Home, tmp_path: Path) -> None:
    parent = (
        tmp_path / "codex" / "sessions" / "2026" / "05" / "01" / f"rollout-2026-05-01T00-00-00-{TID}.jsonl"
    )
    parent.parent.mkdir(parents=True)
    parent.write_bytes(unanswered())
    done = HarnessForks(home).fork(HarnessForkRequest(harness="codex", path=str(parent), operationId="op"))
    assert done.forkTurn == 1 and done.created
    assert [t.prompt for t in read_rollout(Path(done.path).read_bytes()).turns] == ["first"]
