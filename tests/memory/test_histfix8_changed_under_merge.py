"""A merge of the small packs that the history changed under is no damage; a later one merges.

Every object a merge adds was read whole first (what did not read was left out, named as
damage), so an object not found as the merge writes its pack is one the history lost meanwhile:
a user's `git gc` pruned it, or the history was moved aside. Such a merge said the history was
damaged and to move it aside. It says the history changed under the merge, in the daemon's log
only (a line of information: nothing is to be done), and the next merge takes the small packs.

The change comes as the merge starts writing: the process's pygit2 pack builder, the one seam
between remem and libgit2's writer, runs the user's `git gc` (or moves the history aside) first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pygit2
import pytest

from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .history_packs import indexes
from .test_histfix4_damaged_loose_object import planted_loose_object

# Two commits, logged as the daemon logs; the first's merge meets the history changed under it.
_CHANGED_UNDER_A_MERGE = """
import logging, os, subprocess, sys
from pathlib import Path
import pygit2
from remem.daemon.credentials import log_to_stderr
from remem.daemon.home import Home
from remem.daemon.memory import history
from remem.daemon.memory.batch import CHANGES
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

log_to_stderr(logging.INFO, "%(levelname)s %(message)s")
history.PACK_EVERY = 1
home, change, changes = Path(sys.argv[1]), sys.argv[4], sys.argv[5:]
store = MemoryStore(Home(home))
workspace, revision = WorkspaceId.from_cwd(sys.argv[2]), sys.argv[3]
git_dir = home / "history"
Builder = pygit2.PackBuilder


class Meanwhile(Builder):
    def __init__(self, repo):
        if change == "git gc":
            subprocess.run(["git", "--git-dir", str(git_dir), "gc", "--prune=now", "--quiet"], check=True)
        else:
            os.rename(git_dir, home / "history.aside")
        super().__init__(repo)


for builder, batch in zip((Meanwhile, Builder), changes):
    pygit2.PackBuilder = builder
    done = store.commit_workspace(workspace, revision, CHANGES.validate_json(batch))
    revision = done.revision
    print(done.model_dump_json(), flush=True)
"""


@pytest.mark.parametrize("change", ["git gc", "moved aside"])
def test_a_merge_the_history_changed_under_is_said_so_and_a_later_one_merges(
    change: str, store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a loose object no entry names: a `git gc --prune=now` removes it
    revision, loose = planted_loose_object(store, workspace, monkeypatch)
    changes = [json.dumps([put("alpha", body).model_dump()]) for body in ("Four.\n", "Five.\n")]
    args = [str(store.home.root), workspace.cwd, revision, change, *changes]
    merging = subprocess.run(
        [sys.executable, "-c", _CHANGED_UNDER_A_MERGE, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "REMEM_HOME": str(store.home.root)},
        check=False,
    )
    assert merging.returncode == 0, merging.stderr
    answers = [json.loads(line) for line in merging.stdout.splitlines()]
    assert len(answers) == 2 and all(done["history"] for done in answers), merging.stderr
    assert "is damaged" not in merging.stderr and "move history aside" not in merging.stderr, merging.stderr
    said = [line for line in merging.stderr.splitlines() if "changed under the merge" in line]
    assert len(said) == 1 and said[0].startswith("INFO "), merging.stderr
    assert not loose.exists()
    if change == "git gc":  # the next merge took every pack: the entries read whole
        assert len(indexes(store)) == 1, merging.stderr
        repo = pygit2.Repository(str(store.home.root / "history"))
        assert len(list(repo.walk(repo.references[f"refs/heads/ws-{workspace.key}"].target))) == 5
