"""A `.pack` an older remem's killed merge left without its index is kept, and said once.

An older remem's merge removed each merged small pack's index before its `.pack`: a process
killed in between left a `.pack` no reader sees (a pack is found by its index) and no merge
takes. Its objects are in the merged pack, yet remem never removes it (decision 0483): proving
that from the pack's own bytes cost a parser open to delta bombs, a read at every merge under
the writing lock, and an answer libgit2 could give from the pack's own index still mapped. It
costs disk alone; a merge says it once for each state of its files, with what to do.
"""

from __future__ import annotations

import logging
import os
import time

import pytest

from remem.daemon.memory import git_pack, history
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .history_packs import NEVER, indexes
from .test_crash_recovery import EMPTY
from .test_histfix_merge_kill import every_entry_reads, halves


def test_a_pack_an_older_merge_left_without_its_index_is_kept_and_said_once(
    store: MemoryStore,
    workspace: WorkspaceId,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    monkeypatch.setattr(git_pack, "LEFTOVER_SECONDS", -1)  # every leftover stale, long ago
    monkeypatch.setattr(history, "PACK_EVERY", NEVER)
    revision = EMPTY
    for name in ("alpha", "beta"):
        revision = store.commit_workspace(workspace, revision, [put(name)]).revision
    small = {index.with_suffix(".pack"): index.with_suffix(".pack").read_bytes() for index in indexes(store)}
    monkeypatch.setattr(history, "PACK_EVERY", 1)
    revision = store.commit_workspace(workspace, revision, [put("gamma")]).revision
    # the small packs' `.pack` files as an older remem's merge, killed after it removed their
    # indexes, left them an hour ago (their objects in the merged pack it wrote first)
    hour_ago = time.time() - 3600
    for pack, data in small.items():
        pack.write_bytes(data)
        os.utime(pack, (hour_ago, hour_ago))

    for n in range(3):
        done = store.commit_workspace(workspace, revision, [put("delta", f"Merge {n}.\n")])
        assert done.history is not None
        revision = done.revision
    packs, with_index = halves(next(iter(small)).parent)
    assert {pack.stem for pack in small} == packs - with_index, "a pack without its index was removed"
    for pack in small:
        said = [record for record in caplog.records if pack.stem in record.getMessage()]
        assert len(said) == 1, caplog.text
        assert said[0].levelno == logging.WARNING
        assert "has no index: libgit2 does not read it" in said[0].getMessage()
        assert "`git index-pack` can rebuild the index, or remove the file" in said[0].getMessage()
        assert "damaged" not in said[0].getMessage() and "aside" not in said[0].getMessage()
    every_entry_reads(MemoryStore(store.home), workspace, 6)
