"""A `.pack` left without its index is removed at a later merge, once stale.

An older remem's merge removed each merged small pack's index before its `.pack`: a process
killed in between left a `.pack` no reader sees (a pack is found by its index) and no merge
takes, for good, with the temps of a killed writer (removed once stale since). It is removed
as they are, its objects being in the merged pack; a young one (by its mtime or its ctime, which
no copy tool sets back) may be a pack whose index is being written or copied now, and is left.
"""

from __future__ import annotations

import os
import time

import pytest

from remem.daemon.memory import git_pack, history
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .test_crash_recovery import EMPTY
from .test_histaud_damaged_packs import NEVER, indexes
from .test_histfix_merge_kill import every_entry_reads, halves


def test_a_pack_left_without_its_index_is_removed_once_stale(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history, "PACK_EVERY", NEVER)
    revision = EMPTY
    for name in ("alpha", "beta"):
        revision = store.commit_workspace(workspace, revision, [put(name)]).revision
    small = {index.with_suffix(".pack"): index.with_suffix(".pack").read_bytes() for index in indexes(store)}
    monkeypatch.setattr(history, "PACK_EVERY", 1)
    revision = store.commit_workspace(workspace, revision, [put("gamma")]).revision
    # the small packs' `.pack` files as an older remem's merge, killed after it removed their
    # indexes, left them (their objects in the merged pack it wrote first)
    for pack, data in small.items():
        pack.write_bytes(data)
    hour_ago = time.time() - 3600
    for pack in small:
        os.utime(pack, (hour_ago, hour_ago))  # its mtime set back: changed just now all the same

    done = store.commit_workspace(workspace, revision, [put("delta")])
    assert done.history is not None
    packs, with_index = halves(next(iter(small)).parent)
    assert set(small) <= {pack.with_name(f"{name}.pack") for name in packs}, "a young pack was removed"

    monkeypatch.setattr(git_pack, "LEFTOVER_SECONDS", -1)  # the ten minutes past
    assert store.commit_workspace(workspace, done.revision, [put("epsilon")]).history is not None
    packs, with_index = halves(next(iter(small)).parent)
    assert packs == with_index and len(with_index) == 1, "a stale pack without its index stays for good"
    every_entry_reads(MemoryStore(store.home), workspace, 5)
