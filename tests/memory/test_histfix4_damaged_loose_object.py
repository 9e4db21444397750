"""A loose object of the history that does not read is left out of the merges; the rest merge.

Only an older remem wrote loose objects (one file each); a merge takes them with the small packs.
A loose object whose bytes a disk altered was found only as the merge was written: that merge,
and every later one, failed, so one more small pack stayed for each entry, without bound. Each
loose object is now read whole before it is added, as a small pack's objects are: one that does
not read is left as it is, named in the warning, and the rest merge.
"""

from __future__ import annotations

import json
from pathlib import Path

import pygit2
import pytest

from remem.daemon.memory import history as history_module
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .history_packs import MERGES, MERGING_COMMITS, NEVER, indexes, remem, replaced
from .test_crash_recovery import EMPTY


def planted_loose_object(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, Path]:
    """Three entries in small packs, none merged, and a loose object as an older remem wrote an
    entry's (libgit2's own write, one file each): the revision the entries reached, and the
    object's file."""
    monkeypatch.setattr(history_module, "PACK_EVERY", NEVER)
    revision = EMPTY
    for body in ("One.\n", "Two.\n", "Three.\n"):
        revision = store.commit_workspace(workspace, revision, [put("alpha", body)]).revision
    repository = store.home.root / "history"
    planted = str(pygit2.Repository(str(repository)).create_blob(b"An older remem's record.\n"))
    return revision, repository / "objects" / planted[:2] / planted[2:]


def test_a_loose_object_that_does_not_read_is_left_out_and_the_small_packs_merge(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    revision, loose = planted_loose_object(store, workspace, monkeypatch)
    planted = loose.parent.name + loose.name
    data = bytearray(loose.read_bytes())
    data[len(data) // 2] ^= 0xFF  # as a disk fault would
    replaced(loose, bytes(data))

    changes = [json.dumps([put("alpha", f"Later {n}.\n").model_dump()]) for n in range(MERGES)]
    merging = remem(store, "-c", MERGING_COMMITS, str(store.home.root), workspace.cwd, revision, *changes)
    assert merging.returncode == 0, merging.stderr
    answers = [json.loads(line) for line in merging.stdout.splitlines()]
    assert len(answers) == MERGES and all(done["history"] for done in answers), merging.stderr
    assert f"its loose object {planted} does not read" in merging.stderr, merging.stderr
    assert "is damaged" in merging.stderr and "move history aside" in merging.stderr, merging.stderr
    assert loose.exists(), "a damaged loose object is left as it is"
    # Every merge took the small packs: one merged pack, not one more per entry.
    assert len(indexes(store)) == 1, merging.stderr
