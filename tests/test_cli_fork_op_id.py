"""`remem sessions fork` without `--op-id`: remem chooses one and prints it, so the fork can be
retried without a second child. Each test runs the real command line in a process of its own."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from tests.other_version import no_daemon_started
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


def test_a_fork_that_sent_nothing_says_no_operation_id_to_retry_with(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The retry line came after any failure, also when no request was sent: there is no child to
    find again, and the error is what to act on."""
    root, session = _session(tmp_path)
    # No daemon could be started: the command says so, and nothing was sent.
    monkeypatch.delenv(NO_DAEMON_ENV)
    no_daemon_started(monkeypatch)
    result = CliRunner().invoke(cli, ["--home", str(home.root), "sessions", "fork", session, "--turn", "1"])
    assert result.exit_code == 1 and "no daemon is started in this test" in result.stderr, result.stderr
    assert "operation id" not in result.stderr
    # A home that cannot be used (a file where its state folder must be), in this process.
    unusable = Home(tmp_path / "unusable")
    unusable.root.mkdir()
    (unusable.root / "state").write_text("not a folder\n")
    refused = _remem(unusable, "fork", session, "--turn", "1", "--root", str(root))
    assert refused.returncode != 0 and "state" in refused.stderr, refused.stderr
    assert "operation id" not in refused.stderr


def test_a_fork_whose_request_may_have_left_still_says_the_operation_id() -> None:
    """Ctrl-C, or a connection lost once the request left (said as the daemon's death, then the
    command's exit): the child may have been made, so the retry line stays."""
    from remem.daemon.cli.sessions import _may_have_reached
    from remem.daemon.client import ConnectionLost, DaemonUnavailable

    def said_after(lost: BaseException) -> BaseException:
        try:
            try:
                raise lost
            except BaseException:
                try:
                    raise DaemonUnavailable("the daemon died while answering") from None
                except DaemonUnavailable:
                    raise SystemExit(1) from None
        except SystemExit as exc:
            return exc

    assert _may_have_reached(KeyboardInterrupt(), in_process=False)
    assert _may_have_reached(said_after(ConnectionLost()), in_process=False)
    assert not _may_have_reached(said_after(DaemonUnavailable("cannot start")), in_process=False)


def test_the_next_command_in_the_same_process_does_not_say_a_forks_operation_id(
    home: Home, tmp_path: Path
) -> None:
    """A fork's id is put in its own failures only: a command run after it in one process (an
    embedding, a test's runner) said it in its unrelated refusal."""
    root, session = _session(tmp_path)
    rooted = ["--root", str(root), "--json"]
    made = CliRunner().invoke(
        cli, ["--home", str(home.root), "sessions", "fork", session, "--turn", "1", *rooted]
    )
    assert made.exit_code == 0, made.output
    refused = CliRunner().invoke(cli, ["--home", str(home.root), "sessions", "show", "nope", *rooted])
    assert refused.exit_code == 1
    assert "operationId" not in json.loads(refused.stdout)["error"]
