"""What a merge killed in libgit2's pack writer left is removed at a later merge, once stale.

libgit2 writes a merged pack as `pack_git2_<hex>` and its index as `pack_git2_<hex>idx.lock`
in `objects/pack`, then renames them into place; a daemon killed in between (a merge of up to
2 000-object packs takes a while) left both there for good, since only the temps remem's own
pack writer names (`tmp_pack_`) were ever removed. A young one may be a merge at work (another
program's, git's own), and is left.
"""

from __future__ import annotations

import os
import time

import pytest

from remem.daemon.memory import history
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .test_crash_recovery import EMPTY


def test_the_temps_of_a_killed_libgit2_merge_are_removed_once_stale(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    revision = store.commit_workspace(workspace, EMPTY, [put("alpha")]).revision
    pack_dir = store.home.root / "history" / "objects" / "pack"
    stale = [pack_dir / "pack_git2_0123456789abcdef", pack_dir / "pack_git2_0123456789abidx.lock"]
    fresh = [pack_dir / "pack_git2_fedcba9876543210", pack_dir / "pack_git2_fedcba987654idx.lock"]
    for temp in stale + fresh:
        temp.write_bytes(b"PACK\0\0\0\2")
    hour_ago = time.time() - 3600
    for temp in stale:
        os.utime(temp, (hour_ago, hour_ago))

    monkeypatch.setattr(history, "PACK_EVERY", 1)  # a merge after this entry
    assert store.commit_workspace(workspace, revision, [put("beta")]).history is not None
    assert sorted(name for name in os.listdir(pack_dir) if name.startswith("pack_git2_")) == sorted(
        temp.name for temp in fresh
    )
    assert len([name for name in os.listdir(pack_dir) if name.endswith(".idx")]) == 1  # merged
