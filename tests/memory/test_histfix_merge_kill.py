"""A process killed at each step of a merge of the history's small packs loses no entry, and
the next merge leaves no pack or index without its other half: a kill between removing a merged
pack's two files left a `.pack` without its `.idx` that no reader saw and no merge took, for
good."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from remem.daemon.faults import EXIT_CODE
from remem.daemon.memory import history as history_module
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .test_crash_recovery import EMPTY, REPO

MERGE_POINTS = ["history.merge.after-write", "history.merge.mid-removal", "history.merge.after-pack-removal"]
ENTRIES = 5

# One commit whose entry is followed by a merge (decided here, not by its id), in a process the
# fault point kills.
_COMMIT_AND_MERGE = """
import sys
from pathlib import Path
from remem.daemon.home import Home
from remem.daemon.memory import history
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.memory import PutChange, Record

history._is_pack_time = lambda oid: True
store = MemoryStore(Home(Path(sys.argv[1])))
workspace = WorkspaceId.from_cwd(sys.argv[2])
record = Record(name="killed", description="About it", type="project", content="Merged.\\n")
store.commit_workspace(workspace, sys.argv[3], [PutChange(action="put", record=record)])
"""


def halves(pack_dir: Path) -> tuple[set[str], set[str]]:
    """The names of the packs (`pack-<hash>`) with a `.pack` file, and with a `.idx` file."""
    names = os.listdir(pack_dir)
    return {n[:-5] for n in names if n.endswith(".pack")}, {n[:-4] for n in names if n.endswith(".idx")}


def loose(objects: Path) -> list[str]:
    return [
        f"{d.name}{n}" for d in objects.iterdir() if len(d.name) == 2 and d.is_dir() for n in os.listdir(d)
    ]


def every_entry_reads(store: MemoryStore, workspace: WorkspaceId, count: int) -> None:
    entries = store.history.log(workspace.key)
    assert len(entries) == count
    for entry in entries:
        store.history.files_at(entry.id)


@pytest.mark.slow
@pytest.mark.parametrize("point", MERGE_POINTS)
def test_a_merge_killed_at_each_step_loses_nothing_and_the_next_merge_leaves_no_half_pack(
    point: str, store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_module, "_is_pack_time", lambda oid: False)
    revision = EMPTY
    for n in range(ENTRIES):
        revision = store.commit_workspace(workspace, revision, [put(f"r{n}")]).revision
    git_dir = store.home.root / "history"
    # objects an earlier remem wrote loose, which a merge takes into its pack too
    kept = [str(pygit2.Repository(str(git_dir)).create_blob(f"loose {n}\n".encode())) for n in range(2)]

    env = {**os.environ, "REMEM_FAULTPOINT": point}
    args = [str(store.home.root), workspace.cwd, revision]
    killed = subprocess.run(
        [sys.executable, "-c", _COMMIT_AND_MERGE, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert killed.returncode == EXIT_CODE, killed.stderr

    fresh = MemoryStore(store.home)  # the next process
    every_entry_reads(fresh, workspace, ENTRIES + 1)  # the killed merge's entry was written first
    revision = fresh.read_workspace(workspace).revision
    monkeypatch.setattr(history_module, "_is_pack_time", lambda oid: True)
    assert fresh.commit_workspace(workspace, revision, [put("later")]).history is not None

    pack_dir = git_dir / "objects" / "pack"
    packs, indexes = halves(pack_dir)
    assert packs == indexes, "a pack or an index without its other half"
    assert len(packs) == 1, "every small pack is merged"
    assert loose(git_dir / "objects") == []
    every_entry_reads(MemoryStore(store.home), workspace, ENTRIES + 2)
    repo = pygit2.Repository(str(git_dir))
    assert [repo[oid].data for oid in kept] == [b"loose 0\n", b"loose 1\n"]
    checked = subprocess.run(
        ["git", "--git-dir", str(git_dir), "fsck", "--strict", "--no-dangling"],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
