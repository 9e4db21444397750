"""What the history keeps of the entries it wrote is their labels, not their files.

To tell who made a state found where its own last entry of a scope is gone (a backup of the
history restored, decision 0442), the history keeps that entry per branch: its actor, the
revisions before and after and its time. It kept the whole composed entry, with the bytes of
every file of the scope, so a daemon held the memory of each workspace it ever committed to for
as long as it ran (up to megabytes each: a hand-made file is recorded up to 4 MiB).
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put

WORKSPACES = 10
RECORDS = 40  # each with a body of 7 KB: about 290 KB a workspace, 2.9 MB in all


def commit_to_a_new_workspace(store: MemoryStore, folder: Path) -> None:
    folder.mkdir()
    workspace = WorkspaceId.from_cwd(folder)
    body = ("x" * 70 + "\n") * 100
    changes = [put(f"r{n}", body) for n in range(RECORDS)]
    done = store.commit_workspace(workspace, store.read_workspace(workspace).revision, changes)
    assert done.status == "committed" and done.history is not None


def test_a_store_keeps_no_file_of_the_entries_it_wrote(store: MemoryStore, tmp_path: Path) -> None:
    commit_to_a_new_workspace(store, tmp_path / "first")  # what is made once, whatever the count
    # Two rounds, the smaller counted: a table of the interpreter's (interned strings) that earlier
    # tests filled to its brim grows once by megabytes in one of them, while what the store kept
    # of its entries grows in both.
    kept = min(_kept_over_new_workspaces(store, tmp_path, batch) for batch in ("a", "b"))
    assert kept < 500_000, f"{kept} bytes kept after committing to {WORKSPACES} workspaces"


def _kept_over_new_workspaces(store: MemoryStore, tmp_path: Path, batch: str) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(WORKSPACES):
            commit_to_a_new_workspace(store, tmp_path / f"project-{batch}{n}")
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
