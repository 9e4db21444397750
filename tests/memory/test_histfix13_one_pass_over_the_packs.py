"""Each use of the history goes over objects/pack once, and a commit's steps do not again.

A process checks before each use of the history that none of its pack files changed under it
(decision 0483): a pass over objects/pack and a stamp a pack file. Merged packs of `MERGED_MAX`
objects are not merged again, so their number grows with the history, and so does this cost: a
read listed the folder twice (once for links, once for stamps, each building a path a file), and
a commit six times (its check before the branch moves, which needs the folders alone, and its
stamps after its write took the whole listing again). One pass serves the links and the stamps,
and a commit makes one a use (its tip found, its entry written) and one after its write.

Counted through the interpreter's audit events of a real process: no timing.
"""

from __future__ import annotations

import os
import subprocess
import sys

from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .test_crash_recovery import EMPTY, REPO

# Reads an entry, then commits, counting the listings of objects/pack each makes.
_COUNTED = """
import sys
from pathlib import Path
from remem.daemon.home import Home
from remem.daemon.memory import history
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.memory import PutChange, Record

history.PACK_EVERY = 65537  # no merge
store = MemoryStore(Home(Path(sys.argv[1])))
listed = []
sys.addaudithook(
    lambda event, args: listed.append(event)
    if event in ("os.listdir", "os.scandir") and str(args[0]).endswith("objects/pack")
    else None
)
store.history.files_at(sys.argv[4])
print(len(listed), flush=True)
listed.clear()
record = Record(name="gamma", description="About it", type="project", content="Three.\\n")
workspace = WorkspaceId.from_cwd(sys.argv[2])
store.commit_workspace(workspace, sys.argv[3], [PutChange(action="put", record=record)])
print(len(listed), flush=True)
"""


def test_a_read_goes_over_the_packs_once_and_a_commit_once_more_after_its_write(
    store: MemoryStore, workspace: WorkspaceId
) -> None:
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    second = store.commit_workspace(workspace, first.revision, [put("beta")])
    assert second.history is not None
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            _COUNTED,
            str(store.home.root),
            workspace.cwd,
            second.revision,
            second.history,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "REMEM_HOME": str(store.home.root)},
    )
    assert run.returncode == 0, run.stderr
    read, committed = (int(line) for line in run.stdout.split())
    assert read == 1, "a read went over objects/pack more than once"
    # a use to find the branch's tip, one to write the entry, and the stamps after its write:
    # none for the check before its branch moves
    assert committed == 3, f"a commit went over objects/pack {committed} times"
