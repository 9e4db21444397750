"""A review's lock file, and its workspace's turn lock, are removed as their run lets them go:
one file per review ever run stayed in `state/locks` for good (decision 0539). Removing a lock
file a taker has opened and waits on could make two holders, so every taker checks, once it
holds the lock, that the file is still at its path, and takes the path again when it is not."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.home import Home
from remem.daemon.locks import try_file_lock
from remem.daemon.protocol.consolidation import Status
from tests.daemon.helpers import crash_at, remem, wait_until, waiting_for
from tests.fake_openai import FakeOpenAI, tool_call

from .conftest import Source, both_scopes

pytestmark = pytest.mark.slow


def _review_locks(home: Home) -> list[str]:
    return sorted(p.name for p in home.locks.iterdir() if p.name.startswith("review"))


@pytest.mark.parametrize("daemon", [True, False], ids=["daemon", "no-daemon"])
def test_a_finished_review_leaves_no_lock_file(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch, daemon: bool
) -> None:
    if daemon:
        monkeypatch.delenv(NO_DAEMON_ENV)
    fake.reply(tool_call(both_scopes(source)))
    try:
        done = remem(home, "consolidate", source.id, "--json")
        again = remem(home, "consolidate", source.id, "--json")  # answered by its receipt
    finally:
        if daemon:
            remem(home, "daemon", "stop")
    assert done.returncode == again.returncode == 0, done.stderr + again.stderr
    assert json.loads(done.stdout)["status"] == json.loads(again.stdout)["status"] == "committed"
    assert _review_locks(home) == [], "neither the review's lock nor its workspace's turn stays"


def test_a_settle_woken_by_a_removed_lock_file_takes_the_review_at_its_path_again(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.reply(tool_call(both_scopes(source)))
    crash_at("consolidation.after-committing-receipt", home, monkeypatch, "consolidate", source.id)
    store = ReceiptStore(home)
    [left] = store.all()
    assert left.status is Status.COMMITTING
    path = store.lock_path(left.review)

    ended = try_file_lock(path)  # a run of the review, which removes its file as it ends
    assert ended is not None
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "receipts", "--json"]
    reader = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: waiting_for(path) == reader.pid)  # settling, on the file to be removed
        commit = try_file_lock(home.locks / "global.lock")  # holds the settle in its commit
        assert commit is not None
        try:
            ended.release_removing(path)
            wait_until(lambda: waiting_for(home.locks / "global.lock") == reader.pid)
            second = try_file_lock(path)
            assert second is None, "a second holder of the review the settle holds"
        finally:
            commit.release()
        out, err = reader.communicate(timeout=60)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    assert reader.returncode == 0, err
    assert [r["status"] for r in json.loads(out)["receipts"]] == ["committed"]
    assert not path.exists(), "the settle removed the review's lock file as it let go"
