"""`remem consolidate` and `remem receipts` name each change a review made, with the turns of the
session its evidence lies in, as the editor's receipt view words them; `--json` is unchanged.
Each runs the real command line in a process of its own."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from remem.daemon.cli import consolidate as consolidate_cli
from remem.daemon.cli.backend import Backend
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.home import Home
from remem.daemon.protocol.rpc import RpcError
from tests.fake_openai import FakeOpenAI, tool_call

from .conftest import Source, proposal, put


def _remem(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
    )


def test_each_change_is_named_with_the_turns_of_its_evidence(
    home: Home,
    fake: FakeOpenAI,
    source: Source,
) -> None:
    """It said only "committed, 2 change(s) — review …", and `receipts` only the names."""
    both = [*source.evidence(0), *source.evidence(2)]
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence(1)), put("run-ci", both))))
    done = _remem(home, "consolidate", source.id)
    assert done.returncode == 0, done.stderr
    head, *changes = done.stdout.splitlines()
    assert re.fullmatch(r"committed, 2 change\(s\) — review [0-9a-f]{64}, attempt 1", head), head
    [receipt] = ReceiptStore(home).all()
    assert receipt.history is not None and receipt.history.workspaceEntry is not None
    entry = receipt.history.workspaceEntry[:12]
    history = [  # below the changes since decision 0510
        f"History: workspace {entry} (`remem memory diff ENTRY` shows one)",
        f"To undo it: remem memory revert --before {entry}",
    ]
    assert changes == [
        "  added prefer-uv (feedback) ← turn 2",
        "  added run-ci (feedback) ← turns 1, 3",
        *history,
    ]

    listed = _remem(home, "receipts")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert "  changes: prefer-uv, run-ci  " in lines[0]
    assert lines[1:] == [
        "    added prefer-uv (feedback) ← turn 2",
        "    added run-ci (feedback) ← turns 1, 3",
        *(f"    {line}" for line in history),
        "1 receipt(s)",
    ]
    as_json = json.loads(_remem(home, "receipts", "--json").stdout)
    assert [c["name"] for c in as_json["receipts"][0]["changes"]] == ["prefer-uv", "run-ci"]

    # The session gone: its turns cannot be said, its evidence's events can.
    source.path.unlink()
    first = source.ranges[1]
    gone = _remem(home, "receipts").stdout.splitlines()
    assert gone[1] == f"    added prefer-uv (feedback) ← events {first.fromSeq}–{first.toSeq}", gone


def _committed(home: Home, fake: FakeOpenAI, source: Source) -> str:
    """A review that committed one change, in this process; its id."""
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence(1)))))
    done = _remem(home, "consolidate", source.id)
    assert done.returncode == 0, done.stderr
    found = re.search(r"review ([0-9a-f]{64})", done.stdout)
    assert found is not None, done.stdout
    return found.group(1)


def test_a_run_whose_daemon_is_gone_after_it_says_its_changes_without_turns(
    home: Home,
    fake: FakeOpenAI,
    source: Source,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After the commit `remem consolidate` reads the receipt again for its turns: a daemon gone by
    then (stopped, died) turned a committed run into exit 1 (or, while one was started, 130)."""
    from tests.other_version import no_daemon_started

    review = _committed(home, fake, source)
    no_daemon_started(monkeypatch)  # no daemon runs, and none is started for this read
    first = source.ranges[1]
    said = consolidate_cli._changes_said(Backend(home, use_daemon=True), review, {})
    assert said == [f"added prefer-uv (feedback) ← events {first.fromSeq}–{first.toSeq}"]


def test_receipts_ask_once_for_a_session_whose_receipt_is_refused(
    home: Home,
    fake: FakeOpenAI,
    source: Source,
) -> None:
    receipt = ReceiptStore(home).read(_committed(home, fake, source))
    assert receipt is not None
    asked: list[str] = []

    class Refusing:
        def receipt(self, params: object) -> object:
            asked.append(str(params))
            raise RpcError(-32000, "refused", {"code": "UNREADABLE"})

    class Api(Backend):
        def api(self, *args: object, **kwargs: object) -> Refusing:  # type: ignore[override]
            return Refusing()

    backend = Api(home, use_daemon=False)
    turns: dict[str, list[object]] = {}
    other = receipt.model_copy(update={"review": "f" * 64})
    for each in (receipt, other):
        consolidate_cli._changes_said(backend, each, turns)  # type: ignore[arg-type]
    assert len(asked) == 1, asked
