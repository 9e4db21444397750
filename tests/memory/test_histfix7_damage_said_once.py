"""The damage a merge of the small packs leaves out is said once, not at every merge.

A small pack or a loose object that does not read is left out of each merge of the small packs
(decision 0472), and each merge said so again: a daemon's log carried the same warning about
every 32 entries until the user moved the history aside. It is said once by a process for each
state of the damaged file: the same damage is not said again; the file damaged anew (replaced,
rewritten) is news, and said.
"""

from __future__ import annotations

import logging

import pytest

from remem.daemon.memory import history as history_module
from remem.daemon.memory.git_pack import pack_ids
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .history_packs import DAMAGES, NEVER, indexes, replaced
from .test_crash_recovery import EMPTY


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_pack_is_said_once_for_each_state_of_it(
    damage: str,
    store: MemoryStore,
    workspace: WorkspaceId,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    monkeypatch.setattr(history_module, "PACK_EVERY", NEVER)
    revision, ids = EMPTY, []
    for body in ("One.\n", "Two.\n"):
        done = store.commit_workspace(workspace, revision, [put("alpha", body)])
        revision, ids = done.revision, [*ids, done.history]
    [victim] = [index for index in indexes(store) if ids[0] in pack_ids(index)]
    DAMAGES[damage](victim)
    said = f"its pack {victim.stem} does not read"

    def merged(times: int) -> int:
        """Commits each followed by a merge; how many lines said the damaged pack."""
        nonlocal revision
        for n in range(times):
            done = store.commit_workspace(workspace, revision, [put("beta", f"Merge {n} {revision}.\n")])
            assert done.history is not None
            revision = done.revision
        return sum(said in record.getMessage() for record in caplog.records)

    monkeypatch.setattr(history_module, "PACK_EVERY", 1)
    assert merged(3) == 1, caplog.text
    assert len(indexes(store)) == 2, "the sound packs merged, the damaged one left as it is"
    pack = victim.with_suffix(".pack")
    replaced(pack, pack.read_bytes())  # written anew, as damaged: another state of its files
    assert merged(2) == 2, caplog.text
