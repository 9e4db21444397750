"""A merge of the small packs that libgit2 fails for the OS's reason is no damage of the history.

libgit2 says most of the OS's failures as a plain GitError ending with the OS's words (`failed to
create temporary file '...': Too many open files`), and a pack it could not open as an object not
found. Every GitError of a merge was taken as an object that does not read: a process out of file
descriptors was told its history is damaged and to move it aside, where a later merge takes the
packs. Here the error is real: a process that read its log (libgit2 holds each pack open since)
has room for its commit, but not for the merged pack's temp file. A bug of remem's in a merge was
that same passing warning, with no traceback, at every merge while the small packs piled up.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from remem.daemon.memory import history as history_module
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .history_packs import NEVER, indexes
from .test_crash_recovery import EMPTY

SMALL_PACKS = 4
# Open files left beyond those of the started process: from none (the commit itself fails) to
# more than a merge needs, so one of them runs out as libgit2 writes the merged pack, whatever
# this machine's libgit2 and Python hold open.
SPARE_FILES = range(10)

# A process of its own, on a copy of the home: the log read first (its packs held open), then one
# commit under the open-file limit, whose entry is followed by a merge.
AFTER_A_LOG = """
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
store.history.log(workspace.key)
limits = resource.getrlimit(resource.RLIMIT_NOFILE)
opened = len(os.listdir("/proc/self/fd")) - 1  # less the listing's own
resource.setrlimit(resource.RLIMIT_NOFILE, (opened + int(sys.argv[3]), limits[1]))
try:
    done = store.commit_workspace(workspace, revision, CHANGES.validate_json(sys.argv[4]))
except OSError:
    print(json.dumps(None))  # no room for the commit itself
else:
    print(json.dumps(done.history))
"""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts its open files in /proc")
def test_a_merge_libgit2_cannot_open_a_file_for_is_no_damage(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(history_module, "PACK_EVERY", NEVER)
    revision = EMPTY
    for n in range(SMALL_PACKS):
        revision = store.commit_workspace(workspace, revision, [put("alpha", f"{n}.\n")]).revision
    change = json.dumps([put("alpha", "Merging.\n").model_dump()])

    merges_failed_in_libgit2 = 0
    for spare in SPARE_FILES:
        home = tmp_path / f"spare-{spare}"
        shutil.copytree(store.home.root, home, symlinks=True)
        done = subprocess.run(
            [sys.executable, "-c", AFTER_A_LOG, str(home), workspace.cwd, str(spare), change],
            capture_output=True,
            text=True,
            env={**os.environ, "REMEM_HOME": str(home)},
            check=False,
        )
        assert done.returncode == 0, done.stderr
        said = done.stderr
        assert "is damaged" not in said and "move history aside" not in said, (spare, said)
        if "could not merge the small packs" in said:
            assert "Too many open files" in said, (spare, said)
            assert "the entry is written, and a later one merges them" in said, (spare, said)
            assert json.loads(done.stdout) is not None, (spare, said)  # the entry is written
            merges_failed_in_libgit2 += "(GitError: " in said
    assert merges_failed_in_libgit2, "no limit ran out inside libgit2's merge: the test proves nothing"


def _packbuilder_without_its_setting(repo: pygit2.Repository) -> pygit2.PackBuilder:
    """A pygit2 whose PackBuilder remem does not fit: a lookup of a setting it lacks. pygit2 says
    an object not found as a KeyError too (NotFoundError from 1.21, a bare KeyError before), so
    only its calls that look objects up may read one so."""
    raise KeyError("threads")


@pytest.mark.parametrize(
    ("builder", "error"),
    [(lambda: None, TypeError), (_packbuilder_without_its_setting, KeyError)],
    ids=["other-arguments", "key-error"],
)
def test_a_bug_in_a_merge_is_logged_with_its_traceback_and_the_entry_is_written(
    store: MemoryStore,
    workspace: WorkspaceId,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    builder: Callable[..., object],
    error: type[Exception],
) -> None:
    """A pygit2 whose PackBuilder remem does not fit: an error of remem's in every merge, told
    neither as a passing trouble nor as the history's damage."""
    caplog.set_level(logging.WARNING)
    monkeypatch.setattr(history_module, "PACK_EVERY", NEVER)
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    monkeypatch.setattr(history_module, "PACK_EVERY", 1)
    monkeypatch.setattr(pygit2, "PackBuilder", builder)
    done = store.commit_workspace(workspace, first.revision, [put("beta")])

    assert done.history is not None
    assert [entry.id for entry in store.history.log(workspace.key)] == [done.history, first.history]
    [said] = caplog.records
    assert said.levelno == logging.ERROR and said.exc_info is not None and said.exc_info[0] is error
    assert "is damaged" not in said.getMessage(), said.getMessage()
    assert "a bug of remem" in said.getMessage() and "the entry is written" in said.getMessage()
    assert len(indexes(store)) == 2  # left for a remem without the bug
