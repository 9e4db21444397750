"""A fork asked for by turn (`--turn N`) is answered from its operation's journal entry, as one
asked for by `--at` is, whatever became of the parent since (decision 0393)."""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from tests.sessions.factory import SessionSpec, build_session, write_session

from .cli_fork import CWD, conflict, fork


def test_a_turn_fork_is_answered_from_its_journal_whatever_became_of_its_parent(
    home: Home, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    draft = build_session(SessionSpec(seed=11, turns=3, cwd=CWD))
    log = write_session(root, draft)
    parent = draft.header.id

    def again(*args: str) -> tuple[int, dict[str, Any]]:
        return fork(home, parent, *args, root=root)

    code, made = again("--op-id", "op", "--turn", "1")
    assert code == 0 and made["created"] and made["forkTurn"] == 1, made

    log.write_bytes(log.read_bytes()[:20] + b"not a log\n")  # the parent can no longer be read
    code, refused = again("--op-id", "new", "--turn", "1")
    assert code == 1 and refused["error"]["code"] == "UNREADABLE", refused
    assert again("--op-id", "op", "--turn", "1") == (0, {**made, "created": False})

    shutil.rmtree(log.parent)  # the parent is gone
    assert again("--op-id", "op", "--turn", "1") == (0, {**made, "created": False})
    assert conflict(again("--op-id", "op", "--turn", "2"))
    assert conflict(again("--op-id", "op", "--turn", "1", "--title", "Another"))
    code, refused = again("--op-id", "new", "--turn", "1")
    assert code == 1 and refused["error"]["code"] == "NOT_FOUND", refused


def test_another_request_by_turn_is_refused_before_its_turn_is_looked_for(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "root"
    draft = build_session(SessionSpec(seed=15, turns=3, cwd=CWD))
    write_session(root, draft)
    parent = draft.header.id
    code, made = fork(home, parent, "--op-id", "op", "--turn", "1", root=root)
    assert code == 0 and made["created"], made
    code, refused = fork(home, parent, "--op-id", "op", "--turn", "9", root=root)
    assert code == 3 and refused["error"]["code"] == "OP_CONFLICT", (
        "turn 9 is no turn, but the id made turn 1"
    )
    assert (
        f"already made the fork {made['child']} of {parent} after its turn 1" in refused["error"]["message"]
    )
    assert conflict(fork(home, parent, "--op-id", "op", "--turn", "2", root=root))
    assert conflict(fork(home, parent, "--op-id", "op", "--turn", "1", "--title", "Another", root=root))
    code, refused = fork(home, parent, "--op-id", "new", "--turn", "9", root=root)
    assert code == 2 and refused["error"]["code"] == "INVALID_ANCHOR", "a new id's turn is looked for"


def test_a_fork_journalled_by_its_turns_end_is_retried_by_turn_and_not_the_other_way(
    home: Home, tmp_path: Path
) -> None:
    """A remem before protocol 25 journalled `--turn 2` as the turn's end (`--at`): a retry by
    `--turn 2` after the upgrade is that fork, while the session can be read. A fork by turn
    is not answered to `--at`: matching that would judge the session again (0393)."""
    root = tmp_path / "root"
    draft = build_session(SessionSpec(seed=12, turns=3, cwd=CWD))
    log = write_session(root, draft)
    parent = draft.header.id
    turns = json.loads(
        CliRunner()
        .invoke(cli, ["--home", str(home.root), "sessions", "turns", parent, "--root", str(root), "--json"])
        .stdout
    )["turns"]
    end = str(turns[1]["endSeq"])
    code, old = fork(home, parent, "--op-id", "old", "--at", end, root=root)  # as `--turn 2` was sent
    assert code == 0 and old["created"] and old["forkTurn"] == 2, old
    assert fork(home, parent, "--op-id", "old", "--turn", "2", root=root) == (0, {**old, "created": False})
    assert conflict(fork(home, parent, "--op-id", "old", "--turn", "1", root=root))
    assert conflict(fork(home, parent, "--op-id", "old", "--turn", "2", "--title", "T", root=root))
    code, by_turn = fork(home, parent, "--op-id", "new", "--turn", "2", root=root)
    assert code == 0 and (by_turn["forkTurn"], by_turn["seedLength"]) == (2, old["seedLength"]), by_turn
    assert conflict(fork(home, parent, "--op-id", "new", "--at", end, root=root))
    shutil.rmtree(log.parent)  # nothing to find the turn's end in: that retry cannot be told
    assert conflict(fork(home, parent, "--op-id", "old", "--turn", "2", root=root))
    assert fork(home, parent, "--op-id", "new", "--turn", "2", root=root) == (
        0,
        {**by_turn, "created": False},
    )


@pytest.fixture
def through_daemon(home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A DSH root the daemon reads (configured, not `--root`); the daemon stopped afterwards."""
    monkeypatch.delenv(NO_DAEMON_ENV)
    root = tmp_path / "dsh-sessions"
    root.mkdir()
    home.ensure_layout()
    home.settings_file.write_text(f"daemon:\n  idle_minutes: 2\nsessions:\n  roots: [{str(root)!r}]\n")
    yield root
    info = DaemonPaths(home).read_status()
    if info is not None and DaemonPaths(home).running():
        CliRunner().invoke(cli, ["--home", str(home.root), "daemon", "stop"])
        if DaemonPaths(home).running():
            os.kill(info.pid, signal.SIGKILL)


@pytest.mark.slow
def test_a_turn_fork_is_answered_from_its_journal_through_the_daemon(
    home: Home, through_daemon: Path
) -> None:
    draft = build_session(SessionSpec(seed=13, turns=3, cwd=CWD))
    log = write_session(through_daemon, draft)
    parent = draft.header.id
    code, made = fork(home, parent, "--op-id", "op", "--turn", "1", daemon=True)
    assert code == 0 and made["created"], made
    assert DaemonPaths(home).running(), "the fork went through the daemon"
    shutil.rmtree(log.parent)
    assert fork(home, parent, "--op-id", "op", "--turn", "1", daemon=True) == (0, {**made, "created": False})
    assert fork(home, parent, "--op-id", "op", "--turn", "1", daemon=False) == (0, {**made, "created": False})
    assert conflict(fork(home, parent, "--op-id", "op", "--turn", "9", daemon=True))
    assert conflict(fork(home, parent, "--op-id", "op", "--turn", "1", "--title", "T", daemon=True))
