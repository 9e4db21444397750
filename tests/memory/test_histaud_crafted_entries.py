"""An entry whose scope names no memory of this home is no remem entry, and nothing acts on it.

The scope an entry names (`global`, or `ws-<key>`) is read from its commit message, and a revert
writes to the workspace folder of that key: a commit put in the history by anything but remem
(a hand-made one, a history copied from elsewhere) naming `ws-../../outside` sent a revert's
records out of the home's memory folder, and stopped only where its lock file could not be made
(an internal error, exit 4). `show --at` printed the path as a workspace's name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .test_crash_recovery import EMPTY


def crafted(store: MemoryStore, workspace: WorkspaceId, scope: str) -> str:
    """A commit holding the workspace's newest entry's files, its message naming `scope`."""
    repo = pygit2.Repository(str(store.home.root / "history"))
    head = repo.references[f"refs/heads/ws-{workspace.key}"].peel(pygit2.Commit)
    title, blank, meta, *_ = head.message.split("\n")
    message = "\n".join([title, blank, json.dumps({**json.loads(meta), "scope": scope}), ""])
    signature = pygit2.Signature("remem", "remem@localhost")
    return str(repo.create_commit(None, signature, signature, message, head.tree.id, []))


def remem(store: MemoryStore, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(store.home.root), "--no-daemon", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "REMEM_HOME": str(store.home.root)},
        check=False,
    )


@pytest.mark.parametrize("scope", ["ws-../../../outside", "ws-", "ws-a/b", "workspace"])
def test_an_entry_naming_no_scope_of_this_home_is_refused_by_show_diff_and_revert(
    scope: str, store: MemoryStore, workspace: WorkspaceId, tmp_path: Path
) -> None:
    store.commit_workspace(workspace, EMPTY, [put("alpha")])
    entry = crafted(store, workspace, scope)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "history" not in p.parts)

    for command in (
        ["revert", entry],
        ["revert", "--before", entry],
        ["show", "--at", entry],
        ["diff", entry],
    ):
        done = remem(store, "memory", *command, "--json")
        assert done.returncode == 1, (command, done.returncode, done.stdout, done.stderr)
        error = json.loads(done.stdout)["error"]
        assert error == {"code": "HISTORY_REFUSED", "message": f"`{entry}` is not a remem history entry"}

    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "history" not in p.parts)
    assert after == before, "nothing was written"
