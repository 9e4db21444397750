"""A small pack of the history that does not read never stops the merges nor unsays an entry.

Each entry is written as one small pack, unsynced, and about every PACK_EVERY entries the small
packs are merged. A power cut can leave a pack or its index empty (a new file renamed into place,
its bytes never written), or a disk can alter its bytes. Such a pack made every later merge fail:
each entry a merge followed was said not written (a command's answer named no entry, the daemon's
log said its changes could not be recorded) though its branch had moved, and the small packs
were never merged again. The pack that does not read is left as it is, out of the merge, and its
damage is said with what to do; the reads of its entries say it too. An altered pack was found
only as the merge was written (adding an object finds it, reading it finds its bytes altered), so
every merge after it failed and one more small pack stayed for each entry, for good.
"""

from __future__ import annotations

import json
import logging

import pytest

from remem.daemon.memory import history as history_module
from remem.daemon.memory.git_pack import pack_ids
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .history_packs import DAMAGES, MERGES, MERGING_COMMITS, NEVER, indexes, remem
from .test_crash_recovery import EMPTY


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_pack_that_does_not_read_is_left_out_of_the_merge_and_the_entry_is_written(
    damage: str, store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_module, "PACK_EVERY", NEVER)
    revision, ids = EMPTY, []
    for body in ("One.\n", "Two.\n", "Three.\n"):
        done = store.commit_workspace(workspace, revision, [put("alpha", body)])
        revision, ids = done.revision, [*ids, done.history]
    [victim] = [index for index in indexes(store) if ids[1] in pack_ids(index)]
    DAMAGES[damage](victim)

    changes = [json.dumps([put("alpha", f"Later {n}.\n").model_dump()]) for n in range(MERGES)]
    merging = remem(store, "-c", MERGING_COMMITS, str(store.home.root), workspace.cwd, revision, *changes)
    assert merging.returncode == 0, merging.stderr
    answers = [json.loads(line) for line in merging.stdout.splitlines()]
    assert len(answers) == MERGES and all(done["history"] for done in answers), merging.stderr  # written
    assert "could not write" not in merging.stderr
    assert "is damaged" in merging.stderr and "move history aside" in merging.stderr, merging.stderr
    assert victim.exists() and victim.with_suffix(".pack").exists(), "a damaged pack is left as it is"
    # Every merge took the sound packs: the merged one and the damaged one, not one more per entry.
    assert len(indexes(store)) == 2
    assert f"its pack {victim.stem} does not read" in merging.stderr, merging.stderr

    listed = remem(store, "-m", "remem.daemon", "--no-daemon", "memory", "log", "--cwd", workspace.cwd)
    assert listed.returncode == 1 and "is damaged" in listed.stderr, (listed.stdout, listed.stderr)
    assert "move history aside" in listed.stderr


def test_a_merge_of_sound_packs_says_nothing(
    store: MemoryStore,
    workspace: WorkspaceId,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    monkeypatch.setattr(history_module, "PACK_EVERY", NEVER)
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    monkeypatch.setattr(history_module, "PACK_EVERY", 1)
    assert store.commit_workspace(workspace, first.revision, [put("beta")]).history is not None
    assert len(indexes(store)) == 1 and not caplog.records
