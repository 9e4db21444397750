"""A pack file cut short in place while the process writes an entry is damage said, not a SIGBUS.

After its own write a process takes the history's new stamps as its own, so its write is no
reason to open the repository again. It took every pack file's new stamp, so an index another
program cut short in place during the write (a sync tool writing into it) was taken for the
process's own change: the repository stayed open with the old index mapped past its new end,
and the next read was killed by SIGBUS. Only the pack files that were not there before are the
process's own; one there before whose stamp changed has the repository opened afresh at the
next use, where libgit2 checks the index's size and the read says the history is damaged.

The other program acts once the entry's objects are written and found, before its branch is moved:
at the write's fault point `history.after-objects`, the process's seam for what comes between.
(Cut short before the process finds its new objects, the index is read in that same use, and
the process is killed: no process can catch that; decision 0483.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from remem.daemon.memory.git_pack import pack_ids
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .history_packs import indexes
from .test_crash_recovery import EMPTY, REPO

# Reads an entry (libgit2 maps its pack's index), then commits, the index being cut short in
# place once the commit's objects are written; then reads the entry again.
_CUT_DURING_A_WRITE = """
import os, sys
from pathlib import Path
from remem.daemon.home import Home
from remem.daemon.memory import history
from remem.daemon.memory.history import HistoryError
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.memory import PutChange, Record

home, cwd, revision, entry, index, merging = sys.argv[1:]
# The merge of the small packs that follows an entry one time in PACK_EVERY (by its id): always, or never.
history._is_pack_time = lambda oid: merging == "merging"
store = MemoryStore(Home(Path(home)))
print(sorted(store.history.files_at(entry)), flush=True)
faultpoint = history.faultpoint


def meanwhile(name):
    if name == "history.after-objects":
        os.truncate(index, 0)  # another program, in place
    faultpoint(name)


history.faultpoint = meanwhile
record = Record(name="gamma", description="About it", type="project", content="Three.\\n")
done = store.commit_workspace(WorkspaceId.from_cwd(cwd), revision, [PutChange(action="put", record=record)])
print("committed", done.history is not None, flush=True)
try:
    print(sorted(store.history.files_at(entry)), flush=True)
except HistoryError as exc:
    print(f"refused: {exc}", flush=True)
"""


@pytest.mark.parametrize("merging", ["merging", "no merge"])
def test_an_index_cut_short_while_the_process_writes_is_damage_said_at_its_next_read(
    store: MemoryStore, workspace: WorkspaceId, merging: str
) -> None:
    """Whether the entry's id makes it merge the small packs or not: the merge read every pack
    through the mappings of the write's use, the one cut short too, and was killed by SIGBUS
    (a CI run whose entry merged); after a write another program's change came with, the merge
    waits for an entry on the repository opened afresh."""
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    second = store.commit_workspace(workspace, first.revision, [put("beta")])
    assert first.history is not None and second.history is not None
    [index] = [index for index in indexes(store) if first.history in pack_ids(index)]
    args = [str(store.home.root), workspace.cwd, second.revision, first.history, str(index), merging]
    run = subprocess.run(
        [sys.executable, "-c", _CUT_DURING_A_WRITE, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "REMEM_HOME": str(store.home.root)},
    )
    assert run.returncode != -signal.SIGBUS, "killed by SIGBUS"
    assert run.returncode == 0, run.stderr
    read, committed, again = run.stdout.splitlines()
    assert "alpha.md" in read and committed == "committed True"
    assert again.startswith("refused:") and "is damaged" in again, (run.stdout, run.stderr)
