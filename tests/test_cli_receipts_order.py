"""`remem receipts` lists newest first, as `remem memory log` does (decision 0445), in the
text and the JSON alike, through the real `remem` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Receipt, ScopeRevisions, Source, Status, Target


def reviewed(home: Home, session: str, review: str, at: str) -> None:
    source = Source(session=session, digest="sha256:" + "0" * 64, coveredSeq=1)
    revisions = ScopeRevisions(before="sha256:" + "1" * 64)
    target = Target(workspace="ws", workspaceRevisions=revisions, globalRevisions=revisions)
    receipt = Receipt(
        review=review * 64,
        consolidator=1,
        status=Status.NO_CHANGE,
        source=source,
        target=target,
        createdAt=at,
    )
    ReceiptStore(home.ensure_layout()).write(receipt)


def receipts(home: Home, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "receipts", *args],
        capture_output=True, text=True, env=os.environ, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_receipts_are_listed_newest_first(home: Home) -> None:
    reviewed(home, "session-old", "a", "2026-01-01T00:00:00Z")
    reviewed(home, "session-new", "b", "2026-03-01T00:00:00Z")
    reviewed(home, "session-mid", "c", "2026-02-01T00:00:00Z")
    lines = receipts(home).splitlines()
    assert [line.split()[2] for line in lines[:-1]] == ["session-new", "session-mid", "session-old"], lines
    listed = json.loads(receipts(home, "--json"))["receipts"]
    assert [r["source"]["session"] for r in listed] == ["session-new", "session-mid", "session-old"]
