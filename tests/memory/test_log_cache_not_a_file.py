"""A history log cache that is no regular file (a FIFO, a socket, a symbolic link) is no cache.

The cache is derived data: the log reads such a file as no cache, never opening it in a way that
waits (a FIFO read the plain way held the history's lock for good, so `memory log` hung and every
later history read and Global replace with it) nor following a link, and its write renames a whole
new file over it: the entry is replaced, never written through.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.log_cache import FOLDER
from remem.daemon.memory.store import MemoryStore
from remem.daemon.server.runtime import DaemonPaths
from tests.fifo import released

from .test_history import cached, commits, run, walked

TIMEOUT = 30  # seconds: the suite's bound, should a reader still wait on a FIFO
WHAT = {
    "fifo": "a FIFO, not a regular file",
    "socket": "a socket, not a regular file",
    "link": "a symbolic link, never followed",
}


@pytest.mark.timeout(TIMEOUT)
@pytest.mark.parametrize("shape", sorted(WHAT))
def test_a_log_cache_that_is_no_file_is_read_as_none_and_replaced(
    home: Home, workspace: WorkspaceId, tmp_path: Path, shape: str
) -> None:
    store = MemoryStore(home)
    commits(store, workspace, ["alpha", "beta"])
    branch = f"ws-{workspace.key}"
    path = home.root / "history" / FOLDER / branch
    outside = tmp_path / "outside"
    if shape == "link":  # a valid cache of this very history, moved out of the home
        store.history.log(workspace.key)
        shutil.move(path, outside)
        path.symlink_to(outside)
    else:
        path.parent.mkdir()
        os.mknod(path, 0o600 | (stat.S_IFIFO if shape == "fifo" else stat.S_IFSOCK))
    kept = outside.read_bytes() if shape == "link" else None
    commits(store, workspace, ["gamma"])

    with released(path) as fifo:
        code, out, err = run(home, "memory", "log", "--cwd", workspace.cwd, "--limit", "0", "--json")
        fresh = MemoryStore(home).history.log(workspace.key)  # as the next process would
    assert not fifo.waited, "it opened the FIFO and waited on it for a writer"

    assert code == 0, err
    ids = walked(home, workspace.key)
    assert [e["id"] for e in json.loads(out)["entries"]] == ids
    assert [e.id for e in fresh] == ids
    # Given `--json`, stderr stays empty: the warning is in the home's log (decision 0509).
    logged = DaemonPaths(home).log.read_text()
    assert err == "" and f"the log cache of {branch} is {WHAT[shape]}; it is replaced" in logged
    assert stat.S_ISREG(os.lstat(path).st_mode), "replaced by a regular file, as a damaged cache is"
    again = cached(home).load(branch)
    assert again.clean and [line.id for line in reversed(again.lines)] == ids
    if shape == "link":
        assert outside.read_bytes() == kept, "nothing written through the link"
