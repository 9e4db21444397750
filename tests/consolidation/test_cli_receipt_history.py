"""`remem consolidate` and `remem receipts` as a user runs them, after a review committed: the
history entries it made and the reverts that undo it, and a receipt returned again said as an
earlier review's, whose memory has moved since (decision 0510)."""

from __future__ import annotations

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.home import Home
from tests.cli_process import remem
from tests.fake_openai import FakeOpenAI, tool_call

from .conftest import Source, both_scopes


def test_a_committed_review_says_its_history_and_how_to_undo_it(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    """Only `--json` and the receipt file named the history entries; after the review was
    undone, `consolidate` answered its receipt again as if it had just committed."""
    fake.reply(tool_call(both_scopes(source)))

    done = remem(home, "consolidate", source.id)

    assert done.returncode == 0, done.stderr
    [receipt] = ReceiptStore(home).all()
    assert receipt.history is not None and receipt.history.workspaceEntry and receipt.history.globalEntry
    workspace, glob = receipt.history.workspaceEntry[:12], receipt.history.globalEntry[:12]
    history = f"History: workspace {workspace}, Global {glob} (`remem memory diff ENTRY` shows one)"
    undo = f"To undo it: remem memory revert --before {workspace}; remem memory revert --before {glob}"
    assert done.stdout.splitlines()[-2:] == [history, undo], done.stdout

    for entry in (workspace, glob):
        assert remem(home, "memory", "revert", "--before", entry).returncode == 0
    again = remem(home, "consolidate", source.id)

    assert again.returncode == 0 and fake.count == 1, again.stderr
    assert again.stdout.splitlines()[-3:] == [
        history,
        undo,
        f"This is the receipt of an earlier review (completed {receipt.completedAt}): nothing was "
        f"reviewed again; memory has changed since (see `remem memory log --cwd {source.cwd}`, "
        "`remem memory log --global`).",
    ], again.stdout
    listed = remem(home, "receipts")
    assert listed.returncode == 0 and f"\n    {history}\n    {undo}\n" in listed.stdout, listed.stdout
