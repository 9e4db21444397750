"""A DSH child already at the path an operation id names is adopted only when it is that
fork's: the same parent, cut and title (decision 0371)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.faults import EXIT_CODE
from remem.daemon.forks.journal import ForkJournal
from remem.daemon.home import Home
from tests.sessions.factory import SessionSpec, build_session, write_session

from .cli_fork import CWD, conflict, fork


def test_a_dsh_child_of_another_title_is_not_adopted(home: Home, tmp_path: Path) -> None:
    """The same operation id in another remem home, with another title: the child at its path
    is not this fork's, and no entry binds the id to it (recovery would adopt it)."""
    root = tmp_path / "root"
    draft = build_session(SessionSpec(seed=14, turns=3, cwd=CWD))
    write_session(root, draft)
    parent = draft.header.id
    other = Home(tmp_path / "other-home")
    code, made = fork(home, parent, "--op-id", "Z", "--turn", "1", "--title", "Foo", root=root)
    assert code == 0 and made["created"], made

    refused = fork(other, parent, "--op-id", "Z", "--turn", "1", "--title", "Bar", root=root)
    assert conflict(refused), refused
    assert "'Foo'" in refused[1]["error"]["message"], "it says what the child there holds"
    assert ForkJournal(other).get("Z") is None, "refused before the journal records anything"
    code, unrelated = fork(other, parent, "--op-id", "Y", "--turn", "2", root=root)  # recovers first
    assert code == 0 and unrelated["created"], unrelated
    assert conflict(fork(other, parent, "--op-id", "Z", "--turn", "1", "--title", "Bar", root=root))
    assert conflict(fork(other, parent, "--op-id", "Z", "--turn", "1", root=root)), (
        "untitled is another title"
    )

    # The very same fork (its title too) is adopted, as an earlier attempt's child is.
    adopted = fork(other, parent, "--op-id", "Z", "--turn", "1", "--title", "Foo", root=root)
    assert adopted == (0, {**made, "created": False})


@pytest.mark.slow
def test_recovery_never_takes_another_homes_child_for_its_own(home: Home, tmp_path: Path) -> None:
    """A fork that crashed once its entry was prepared, then the same operation id used in
    another home that shares the root: recovery found a file at the child's path and committed
    the entry to it, so the retry answered the other home's turn-4 child as its turn-2 fork."""
    root = tmp_path / "root"
    draft = build_session(SessionSpec(seed=15, turns=5, cwd=CWD))
    write_session(root, draft)
    parent = draft.header.id
    crashed = _crash_at("fork.after-prepare", home, parent, root, "--op-id", "Y", "--turn", "2")
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    code, theirs = fork(Home(tmp_path / "other-home"), parent, "--op-id", "Y", "--turn", "4", root=root)
    assert code == 0 and theirs["created"] and theirs["forkTurn"] == 4, theirs
    assert conflict(fork(home, parent, "--op-id", "Y", "--turn", "2", root=root))
    entry = ForkJournal(home).get("Y")
    assert entry is not None and entry.status == "prepared", "bound to no child"


@pytest.mark.slow
def test_a_child_published_before_a_crash_is_answered_after_its_parent_is_gone(
    home: Home, tmp_path: Path
) -> None:
    """The retry of a fork that crashed once its child was out answers that child, even when the
    parent can no longer be read: recovery knows the child for this home's by its record."""
    root = tmp_path / "root"
    draft = build_session(SessionSpec(seed=16, turns=4, cwd=CWD))
    parent_log = write_session(root, draft)
    parent = draft.header.id
    crashed = _crash_at("fork.after-publish", home, parent, root, "--op-id", "W", "--turn", "2")
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    parent_log.unlink()
    code, answered = fork(home, parent, "--op-id", "W", "--turn", "2", root=root)
    assert code == 0 and answered["created"] is False and answered["forkTurn"] == 2, answered


def _crash_at(
    point: str, home: Home, parent: str, root: Path, *args: str
) -> subprocess.CompletedProcess[bytes]:
    """`remem sessions fork` in a process of its own, killed at the crash point `point`."""
    return subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "--no-daemon", "sessions", "fork",
         parent, *args, "--root", str(root), "--json"],
        env={**os.environ, "REMEM_FAULTPOINT": point}, capture_output=True, timeout=60,
    )  # fmt: skip
