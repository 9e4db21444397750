"""A review killed under way leaves its receipt saying `running`, which only its next run
rewrites. While no run holds the review's lock, readers say it was interrupted (stopped
without finishing; consolidate again), writing nothing: `remem sessions list`, `remem receipts`
and the editor's Memory view, through the daemon (which looks again at each listing: a kill
changes no receipt) and without it. While a run holds it, it is pending as before."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.home import Home
from remem.daemon.locks import try_file_lock
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.protocol.consolidation import Status
from tests.daemon.helpers import calls, crash_at, remem
from tests.fake_openai import FakeOpenAI, tool_call
from tests.waiting import wait_until

from .conftest import Source, proposal, put

pytestmark = pytest.mark.slow


def _json(home: Home, *args: str) -> Any:
    done = remem(home, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _said(home: Home, source: Source, review: str) -> tuple[dict[str, Any], list[str]]:
    """The session's review state as `remem sessions list` has it, and the reviews `remem
    receipts` says were interrupted."""
    [row] = _json(home, "sessions", "list", "--cwd", source.cwd)["sessions"]
    found = _json(home, "receipts")
    assert [r["review"] for r in found["receipts"]] == [review]
    return row["review"], found["interrupted"]


@contextmanager
def _run_holding(path: Path) -> Iterator[None]:
    """The lock at `path` held, as a run holds its review's from start to end, and its
    workspace's turn while it reviews."""
    held = try_file_lock(path)
    assert held is not None
    try:
        yield
    finally:
        held.release()


@pytest.mark.parametrize("daemon", [True, False], ids=["daemon", "no-daemon"])
def test_a_review_killed_under_way_is_said_interrupted_while_no_run_holds_it(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch, daemon: bool
) -> None:
    if daemon:
        monkeypatch.delenv(NO_DAEMON_ENV)
    crash_at("consolidation.after-attempt-receipt", home, monkeypatch, "consolidate", source.id)
    store = ReceiptStore(home)
    [left] = store.all()
    assert left.status is Status.RUNNING
    written = store.path(left.review).read_bytes()
    try:
        with _run_holding(store.lock_path(left.review)):
            running = _said(home, source, left.review)
        stopped = _said(home, source, left.review)
        listing = remem(home, "sessions", "list", "--cwd", source.cwd)
        receipts = remem(home, "receipts")
        if daemon:
            [overview] = calls(home, [("memory/overview", {"cwd": source.cwd})])
            assert [r["status"] for r in overview["receipts"]] == ["interrupted"]
    finally:
        if daemon:
            remem(home, "daemon", "stop")

    assert running == ({"state": "pending", "status": "running"}, [])
    assert stopped == ({"state": "interrupted", "status": "running"}, [left.review])
    assert "[interrupted]" in listing.stdout and "remem consolidate SESSION" in listing.stdout
    assert "interrupted" in receipts.stdout and f"remem consolidate {source.id}" in receipts.stdout
    assert store.path(left.review).read_bytes() == written, "a reader writes nothing"
    assert fake.count == 0


def test_a_rerun_waiting_for_its_workspaces_turn_is_not_said_interrupted(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rerun of a killed review took its workspace's turn before its review's lock: waiting
    for the turn, it held nothing readers look at, and was said interrupted, Consolidate offered."""
    crash_at("consolidation.after-attempt-receipt", home, monkeypatch, "consolidate", source.id)
    store = ReceiptStore(home)
    [left] = store.all()
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    turn = store.turn_path(WorkspaceId.from_cwd(Path(source.cwd)).key)
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "consolidate", source.id]
    with _run_holding(turn):
        rerun = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert rerun.stderr is not None
        wait_until(lambda: "waiting for another consolidation" in rerun.stderr.readline(), what="the wait")
        waiting = _said(home, source, left.review)
    out, err = rerun.communicate(timeout=120)  # a hang guard, not a speed assertion

    assert waiting == ({"state": "pending", "status": "running"}, [])
    assert rerun.returncode == 0 and out.startswith("committed"), out + err
