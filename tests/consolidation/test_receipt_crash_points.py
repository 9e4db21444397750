"""A receipt write killed between its synced temp and the rename (`consolidation.receipt.after-
temp-write`, at each receipt write of a committed review) leaves the receipt as it was, whole, and
the whole new one in the temp; a listing reads on, and the next consolidation commits the review
and removes the temp (decision 0411). `tests/daemon/test_crash_recovery.py` kills the same writes
through the daemon too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.consolidation.receipts import AFTER_TEMP_WRITE, ReceiptStore, parse_receipt
from remem.daemon.fsutil import is_temp_name, locked_temp_path_for
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Status
from tests.daemon.helpers import crash_at, remem
from tests.fake_openai import FakeOpenAI, tool_call

from .conftest import Source, both_scopes

pytestmark = pytest.mark.slow

# Each receipt write of a committed review, by its hit of the point: the receipt a kill there
# leaves (None: none yet), and the one its temp holds.
WRITES = {
    1: (None, Status.RUNNING),
    2: (Status.RUNNING, Status.COMMITTING),
    3: (Status.COMMITTING, Status.COMMITTED),
}


def _temps(home: Home) -> list[Path]:
    return [p for p in home.reviews.iterdir() if is_temp_name(p.name)]


def _listed(home: Home) -> list[tuple[str, str]]:
    """`remem receipts --json`, as (review, status); it must read every receipt."""
    done = remem(home, "receipts", "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["errors"] == []
    return [(r["review"], r["status"]) for r in found["receipts"]]


@pytest.mark.parametrize("hit", sorted(WRITES))
def test_a_receipt_write_killed_before_its_rename_keeps_the_old_receipt_and_is_recovered(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch, hit: int
) -> None:
    monkeypatch.setenv(NO_DAEMON_ENV, "1")
    fake.reply(tool_call(both_scopes(source)), tool_call(both_scopes(source)))
    crash_at(f"{AFTER_TEMP_WRITE}@{hit}", home, monkeypatch, "consolidate", source.id, "--json")

    stood, written = WRITES[hit]
    [temp] = _temps(home)
    new = parse_receipt(temp.read_text())  # synced whole before the kill
    store = ReceiptStore(home)
    assert new.status is written and temp == locked_temp_path_for(store.path(new.review))
    old = store.read(new.review)
    assert (None if old is None else old.status) is stood, "the receipt is the old one, whole"
    assert [review for review, _ in _listed(home)] == ([] if stood is None else [new.review])

    done = remem(home, "consolidate", source.id, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "committed"
    assert _temps(home) == [], "the next write removed the temp"
    assert _listed(home) == [(new.review, "committed")]
    assert fake.count == 1, "the model was asked once, crash or not"
