"""`remem sessions fork` without `--op-id`: remem chooses one and prints it, so the fork can be
retried without a second child. Each test runs the real command line in a process of its own."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from remem.daemon.home import Home
from tests.sessions.factory import SessionSpec, build_session, write_session

CWD = "/home/dev/projects/demo"
RETRY = re.compile(
    r"operation id: ([0-9a-f]{32}) \(to retry after a crash, give --op-id \1: the same child is "
    r"returned, never a second\)"
)


def _remem(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "sessions", *args],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
    )


def _session(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "root"
    draft = build_session(SessionSpec(seed=5, turns=3, cwd=CWD))
    write_session(root, draft)
    return root, draft.header.id


def test_a_fork_without_an_op_id_prints_the_one_chosen_and_a_retry_with_it_is_the_same_child(
    home: Home, tmp_path: Path
) -> None:
    """It printed only "Missing option '--op-id'" (exit 2)."""
    root, session = _session(tmp_path)
    made = _remem(home, "fork", session, "--turn", "1", "--root", str(root))
    assert made.returncode == 0, made.stderr
    first, said = made.stdout.splitlines()
    assert first.startswith("created session-") and "(after turn 1," in first
    chosen = RETRY.fullmatch(said)
    assert chosen is not None, said
    child = first.split()[1]
    again = _remem(home, "fork", session, "--turn", "1", "--op-id", chosen[1], "--root", str(root))
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"already existed: {child} (after turn 1,")
    assert "operation id" not in again.stdout  # given, so not said back


def test_a_forks_json_carries_the_op_id_chosen_and_two_forks_are_two_children(
    home: Home, tmp_path: Path
) -> None:
    root, session = _session(tmp_path)
    answers = []
    for _ in range(2):
        done = _remem(home, "fork", session, "--turn", "2", "--root", str(root), "--json")
        assert done.returncode == 0, done.stderr
        answers.append(json.loads(done.stdout))
    assert all(re.fullmatch(r"[0-9a-f]{32}", answer["operationId"]) for answer in answers)
    assert answers[0]["operationId"] != answers[1]["operationId"]
    assert answers[0]["child"] != answers[1]["child"] and all(answer["created"] for answer in answers)
    given = _remem(home, "fork", session, "--turn", "2", "--op-id", answers[0]["operationId"], "--root",
                   str(root), "--json")  # fmt: skip
    answer = json.loads(given.stdout)
    assert (answer["child"], answer["created"]) == (answers[0]["child"], False)
    assert "operationId" not in answer  # given: the JSON stays what it always was


def test_the_demo_forks_after_the_turn_it_says() -> None:
    """It said "after turn 1" and forked with `--at 0`, a seq (turn 1's first event)."""
    demo = (Path(__file__).parent.parent / "scripts" / "demo").read_text()
    [said] = re.findall(r"Branching after turn (\d+)", demo)
    forks = re.findall(r'sessions fork "\$main" (.*)', demo)
    assert forks and all(f"--turn {said} " in f"{fork} " and "--at" not in fork for fork in forks), forks
