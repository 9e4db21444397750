"""A fork after a Codex turn that `thread_rolled_back` abandoned is refused for what it is: the
message says the turn was rolled back and names the nearest turns that can be branched, never
that it has not finished."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.forks.harness_service import HarnessForkRequest, HarnessForks
from remem.daemon.home import Home
from remem.daemon.sessions.errors import OperationError

from ..sessions.codex_lines import TID, event, message, meta, rollout, turn

ROLLED_BACK_THIRD = [
    meta(),
    *turn("t1", "one", "1"),
    *turn("t2", "two", "2"),
    *turn("t3", "three", "3"),
    event("thread_rolled_back", num_turns=1),
    *turn("t4", "four", "4"),
    event("task_started", turn_id="t5"),
    message("user", "five, still running"),
]


def parent(tmp_path: Path, lines: list[dict[str, object]]) -> Path:
    path = tmp_path / "sessions" / "2026" / "05" / "01" / f"rollout-2026-05-01T00-00-00-{TID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(rollout(*lines))
    return path


def refusal(home: Home, path: Path, after: int) -> OperationError:
    request = HarnessForkRequest(harness="codex", path=str(path), operationId=f"op-{after}", afterTurn=after)
    with pytest.raises(OperationError) as caught:
        HarnessForks(home).fork(request)
    return caught.value


def test_a_rolled_back_turn_is_refused_as_rolled_back(home: Home, tmp_path: Path) -> None:
    path = parent(tmp_path, ROLLED_BACK_THIRD)
    before = path.read_bytes()
    refused = refusal(home, path, 3)
    assert refused.code == "OPEN_TURN"
    assert refused.message == (
        f"{path}: turn 3 was rolled back (Codex dropped it from the conversation); "
        "branch after turn 2 or turn 4"
    )
    # A turn still running is refused for that, naming the turn to branch after; neither
    # refusal wrote anything.
    assert refusal(home, path, 5).message == (
        f"{path}: turn 5 has not ended: the rollout has no task_complete for it (Codex is still "
        "running it, or stopped); branch after turn 4"
    )
    assert path.read_bytes() == before and sorted(path.parent.iterdir()) == [path]


def test_a_rolled_back_turn_with_nothing_to_branch_around_it_says_so(home: Home, tmp_path: Path) -> None:
    path = parent(tmp_path, [meta(), *turn("t1", "one", "1"), event("thread_rolled_back", num_turns=1)])
    assert refusal(home, path, 1).message.endswith(
        ": turn 1 was rolled back (Codex dropped it from the conversation); no turn can be branched from yet"
    )


def test_sessions_fork_at_a_line_of_a_rolled_back_turn_says_it_was_rolled_back(
    home: Home, tmp_path: Path
) -> None:
    path = parent(tmp_path, ROLLED_BACK_THIRD)

    def sessions(*args: str) -> dict:
        extra = [f"--root={path.parents[3]}", "--json"]
        return json.loads(CliRunner().invoke(cli, [f"--home={home.root}", "sessions", *args, *extra]).output)

    third = sessions("turns", TID)["turns"][2]
    assert (third["turn"], third["status"], third["forkable"]) == (3, "rolled-back", False)
    refused = sessions("fork", TID, "--op-id", "x", "--at", str(third["endSeq"]))["error"]
    assert refused["code"] == "OPEN_TURN"
    assert refused["message"].endswith(
        ": turn 3 was rolled back (Codex dropped it from the conversation); branch after turn 2 or turn 4"
    )
