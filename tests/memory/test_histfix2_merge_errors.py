"""A merge of the small packs that fails for any reason leaves the entry it followed written.

The merge runs once the entry's branch has moved. Only a write the disk refused and an object
that did not read were taken as the merge's own failure; any other error (no file descriptor
left, an I/O error, a loose-object folder a `git gc` removed meanwhile) was taken as the entry's:
the command answered `history: null`, the history's trouble said it "could not record what
changed", and the state found next was no longer vouched for, though the entry was there. Here
the error is real: a process whose open-file limit leaves room for the commit but not for
reading each of forty small packs in a merge.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.memory import history as history_module
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .history_packs import NEVER, indexes
from .test_crash_recovery import EMPTY

SMALL_PACKS = 40
SPARE_FILES = 8  # open files beyond those of the started process: an entry's write needs a few

# A process of its own (the test's holds the packs it read open): the entry whose merge runs out
# of open files, then one written with the limit lifted, whose merge takes every small pack.
UNDER_A_FILE_LIMIT = """
import json, os, resource, sys
from pathlib import Path
from remem.daemon.home import Home
from remem.daemon.memory import history
from remem.daemon.memory.batch import CHANGES
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
history.PACK_EVERY = 1  # every entry is followed by a merge
store, workspace = MemoryStore(Home(Path(sys.argv[1]))), WorkspaceId.from_cwd(sys.argv[2])
revision = store.read_workspace(workspace).revision
limits = resource.getrlimit(resource.RLIMIT_NOFILE)
opened = len(os.listdir("/proc/self/fd"))
resource.setrlimit(resource.RLIMIT_NOFILE, (opened + int(sys.argv[3]), limits[1]))
done = store.commit_workspace(workspace, revision, CHANGES.validate_json(sys.argv[4]))
resource.setrlimit(resource.RLIMIT_NOFILE, limits)
result = {"history": done.history, "trouble": store.history.trouble(workspace.key)}
result["logged"] = [entry.id for entry in store.history.log(workspace.key)[:1]]
result["later"] = store.commit_workspace(workspace, done.revision, CHANGES.validate_json(sys.argv[5])).history
print(json.dumps(result))
"""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts its open files in /proc")
def test_a_merge_out_of_open_files_is_a_warning_and_the_entry_is_written(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_module, "PACK_EVERY", NEVER)
    revision = EMPTY
    for n in range(SMALL_PACKS):
        revision = store.commit_workspace(workspace, revision, [put("alpha", f"{n}.\n")]).revision
    assert len(indexes(store)) == SMALL_PACKS

    changes = [json.dumps([put("alpha", body).model_dump()]) for body in ("Merging.\n", "Later.\n")]
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            UNDER_A_FILE_LIMIT,
            str(store.home.root),
            workspace.cwd,
            str(SPARE_FILES),
            *changes,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "REMEM_HOME": str(store.home.root)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert "could not write" not in done.stderr, done.stderr
    assert "could not merge the small packs" in done.stderr and "Too many open files" in done.stderr
    assert "the entry is written, and a later one merges them" in done.stderr, done.stderr
    assert result["history"] is not None and result["logged"] == [result["history"]], result
    assert result["trouble"] is None, result
    assert result["later"] is not None and len(indexes(store)) == 1, result  # the next merge took them all
