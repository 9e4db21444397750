"""A review whose memory history holds a pack remem's user may not read commits, and is said
committed: the history link of its receipt is optional (as with the history off), and a warning
in the home's log names the pack, once for the review.

The history's reads said that pack HOME_UNUSABLE, which the commit barrier did not take for a
history it may go without: after Global and the workspace were committed, the run ended exit 2,
its receipt left `committing` and its mark in `memory/reviews/committing`.

Permissions bind root too here (tests/permissions): skipped, saying why, only where root may not
give up its way past them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.consolidation import Status
from remem.daemon.server.runtime import DaemonPaths
from tests.fake_openai import FakeOpenAI, tool_call
from tests.memory.factory import put
from tests.permissions import daemon_bound, modes, remem_bound

from .conftest import Source, both_scopes
from .test_receiptsfix_unreadable_memory import unreadable_to_user


@pytest.fixture(params=[False, True], ids=["no-daemon", "daemon"])
def daemon(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.fixture
def packed(home: Home) -> Iterator[str]:
    """One history entry, stored as a pack, which remem's user may not read during the test:
    the pack's path."""
    store = MemoryStore(home)
    store.replace_global(store.read_global().revision, "# Global\n\n- Kept.\n")
    [pack] = (home.root / "history" / "objects" / "pack").glob("*.pack")
    with modes((pack, 0)):
        unreadable_to_user(pack)
        yield str(pack)


def test_a_review_commits_past_an_unreadable_history_pack(
    home: Home, fake: FakeOpenAI, source: Source, packed: str, daemon: bool
) -> None:
    fake.reply(tool_call(both_scopes(source)))
    if daemon:
        with daemon_bound(home):
            done = remem_bound(home, "consolidate", source.id, "--json", daemon=True)
    else:
        done = remem_bound(home, "consolidate", source.id, "--json")

    assert done.returncode == 0, done
    assert json.loads(done.stdout)["status"] == "committed", done.stdout
    [receipt] = ReceiptStore(home).all()
    assert receipt.status is Status.COMMITTED, receipt
    assert home.global_file.read_text() == "Prefers terse answers.\n"
    assert not any((home.reviews / "committing").iterdir()), "the review's mark is left"
    said = "consolidation: the review's history entries are not linked: remem's home"
    lines = [line for line in DaemonPaths(home).log.read_text().splitlines() if said in line]
    assert len(lines) == 1 and f"{packed} cannot be read (Permission denied)" in lines[0], lines


def test_a_review_whose_entries_cannot_be_recorded_nor_found_says_so_once(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    """Both scopes' history unreadable: neither entry recorded, and each scope's log looked in
    for it failed; the warning was said once per scope."""
    store = MemoryStore(home)
    store.replace_global(store.read_global().revision, "# Global\n\n- Kept.\n")
    workspace = WorkspaceId.from_cwd(source.cwd)
    store.commit_workspace(workspace, store.read_workspace(workspace).revision, [put("kept")])
    packs = list((home.root / "history" / "objects" / "pack").glob("*.pack"))
    fake.reply(tool_call(both_scopes(source)))
    with modes(*[(pack, 0) for pack in packs]):
        unreadable_to_user(packs[0])
        done = remem_bound(home, "consolidate", source.id, "--json")

    assert done.returncode == 0 and json.loads(done.stdout)["status"] == "committed", done
    said = "consolidation: the review's history entries are not linked: remem's home"
    lines = [line for line in DaemonPaths(home).log.read_text().splitlines() if said in line]
    assert len(lines) == 1, lines
