"""`remem consolidate` and `remem receipts` as a user runs them, after a review committed: the
history entries it made and the reverts that undo it, and a receipt returned again said as an
earlier review's, whose memory has moved since (decision 0510)."""

from __future__ import annotations

import pytest

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.cli_process import remem
from tests.fake_openai import FakeOpenAI, tool_call
from tests.memory.factory import put as user_put
from tests.unwritable import unwritable

from .conftest import Source, both_scopes, proposal, put


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

    # Undone, it was offered `revert --before` again, which changed nothing (no-change).
    assert again.returncode == 0 and fake.count == 1, again.stderr
    store, key = MemoryStore(home), WorkspaceId.from_cwd(source.cwd)
    reverts = [store.history.log(scope)[0].id[:12] for scope in (key.key, None)]
    moved = [
        f"Workspace memory: undone by {reverts[0]} (`remem memory log --cwd {source.cwd}` lists how)",
        f"Global memory: undone by {reverts[1]} (`remem memory log --global` lists how)",
    ]
    assert again.stdout.splitlines()[-4:] == [
        history,
        *moved,
        f"This is the receipt of an earlier review (completed {receipt.completedAt}): nothing was "
        f"reviewed again; memory has changed since (see `remem memory log --cwd {source.cwd}`, "
        "`remem memory log --global`).",
    ], again.stdout
    listed = remem(home, "receipts")
    assert (
        listed.returncode == 0 and "".join(f"\n    {line}" for line in [history, *moved]) in listed.stdout
    ), listed.stdout

    # Changed again after the undo: `revert --before` would take back only that change.
    store.commit_workspace(key, store.read_workspace(key).revision, [user_put("user-a")])
    listed = remem(home, "receipts")
    changed = (
        f"    Workspace memory: undone by {reverts[0]}, and changed after that "
        f"(`remem memory log --cwd {source.cwd}` lists how)"
    )
    assert listed.returncode == 0 and changed in listed.stdout.splitlines(), listed.stdout


def test_a_review_followed_by_other_changes_is_not_offered_an_undo_that_takes_them_too(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    """`To undo it: remem memory revert --before ENTRY` was printed for every committed review:
    run after the user's own changes, it removed them with the review's record."""
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    assert remem(home, "consolidate", source.id).returncode == 0
    [receipt] = ReceiptStore(home).all()
    assert receipt.history is not None and receipt.history.workspaceEntry is not None
    entry = receipt.history.workspaceEntry[:12]
    store = MemoryStore(home)
    workspace = WorkspaceId.from_cwd(source.cwd)
    now = store.read_workspace(workspace).revision
    store.commit_workspace(workspace, now, [user_put("user-a"), user_put("user-b"), user_put("user-c")])

    listed = remem(home, "receipts")

    assert listed.returncode == 0, listed.stderr
    assert "To undo it" not in listed.stdout, listed.stdout
    assert listed.stdout.splitlines()[2:4] == [
        f"    History: workspace {entry} (`remem memory diff ENTRY` shows one)",
        f"    Workspace memory changed after it (`remem memory log --cwd {source.cwd}` lists how): "
        f"`remem memory revert --before {entry}` would take those changes back too",
    ], listed.stdout

    # Its history is the newest again once the user's changes are undone: the undo is offered.
    newest = store.history.log(workspace.key)[0].id
    assert remem(home, "memory", "revert", "--before", newest).returncode == 0
    assert remem(home, "memory", "revert", "--before", receipt.history.workspaceEntry).returncode == 0
    assert [r.name for r in store.read_workspace(workspace).records] == []
    redone = remem(home, "memory", "revert", "--before", store.history.log(workspace.key)[0].id)
    assert redone.returncode == 0, redone.stderr
    assert [r.name for r in store.read_workspace(workspace).records] == ["prefer-uv"]


def test_a_change_the_history_could_not_record_is_not_offered_as_undone_by_the_review_alone(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    """A hand edit made after the review, which the history could not record (its pack folder
    refused the write, as a full disk does), left the review's entry the newest: `receipts`
    offered `revert --before ENTRY` as its undo, and that revert took the edit back too."""
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    assert remem(home, "consolidate", source.id).returncode == 0
    [receipt] = ReceiptStore(home).all()
    assert receipt.history is not None and receipt.history.workspaceEntry is not None
    entry = receipt.history.workspaceEntry[:12]
    record = home.workspaces / WorkspaceId.from_cwd(source.cwd).key / "prefer-uv.md"
    record.write_text(record.read_text().replace("Use uv for everything.", "Use uv, and ruff too."))

    with unwritable(home.root / "history" / "objects" / "pack"):
        listed = remem(home, "receipts")

    assert listed.returncode == 0, listed.stderr
    assert "To undo it" not in listed.stdout, listed.stdout
    assert listed.stdout.splitlines()[3] == (
        f"    Workspace memory: `remem memory revert --before {entry}` undoes it and any change made "
        f"there after it (`remem memory log --cwd {source.cwd}` lists them)"
    ), listed.stdout


@pytest.mark.parametrize(("held", "verb"), [("", "added"), ("Works in UTC.\n", "rewrote")])
def test_global_written_where_it_was_empty_is_said_added_as_memory_log_says(
    home: Home, fake: FakeOpenAI, source: Source, held: str, verb: str
) -> None:
    """The receipt said `rewrote GLOBAL.md` where `memory log --global` said `added GLOBAL.md`."""
    store = MemoryStore(home)
    store.replace_global(store.read_global().revision, held)
    fake.reply(tool_call(both_scopes(source)))

    done = remem(home, "consolidate", source.id)
    listed = remem(home, "receipts")

    assert done.returncode == 0 and listed.returncode == 0, done.stderr + listed.stderr
    for said, indent in ((done.stdout, "  "), (listed.stdout, "    ")):
        [line] = [line for line in said.splitlines() if "GLOBAL.md" in line]
        assert line.startswith(f"{indent}{verb} GLOBAL.md ← turn"), said
    logged = remem(home, "memory", "log", "--global").stdout.splitlines()[0]
    assert ("added GLOBAL.md" in logged) == (verb == "added"), logged
