"""A memory folder replaced by a copy of itself (as a sync tool does) right after a review's
commit was published in it: the store refuses the commit (the path no longer names the folder it
went to), so the receipt does not say that scope was committed, yet the copy at its path holds
the planned state, and the reason says that too, rather than "Global was committed; Global could
not be committed" (decision 0487).

At the named fault point inside the commit, the daemon copies the folder, moves it aside and
puts the copy in its place (`folder_hook`).
"""

from __future__ import annotations

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.fake_openai import FakeOpenAI, tool_call

from .conftest import Source, both_scopes
from .folder_hook import move_at, run

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("point", "replaced", "said"),
    [
        (
            "memory.global.after-exchange",
            "memory",
            "Global could not be committed: {folder}: remem's memory folder was moved, replaced or "
            "removed while Global's commit was being published in it; read Global again",
        ),
        (
            "memory.workspace.before-journal-removal",
            "workspace",
            "Global was committed; the workspace could not be committed: {folder}: this workspace's "
            "memory folder was moved, replaced or removed while the commit was being published in it",
        ),
    ],
    ids=["memory-folder", "workspace-folder"],
)
def test_a_folder_replaced_by_a_copy_holding_the_commit_is_not_said_committed(
    home: Home,
    fake: FakeOpenAI,
    source: Source,
    daemon_env: None,
    monkeypatch: pytest.MonkeyPatch,
    point: str,
    replaced: str,
    said: str,
) -> None:
    store = MemoryStore(home)
    workspace = WorkspaceId.from_cwd(source.cwd)
    folder = store.folder(workspace) if replaced == "workspace" else home.memory
    move_at(monkeypatch, point, folder, "copy")
    fake.reply(tool_call(both_scopes(source)))
    result, finished = run(home, source.id)
    assert result["status"] == "target-conflict", result
    reason = result["reason"]
    assert reason.startswith(said.format(folder=folder)), reason
    assert reason.endswith("; the folder at its path now, put there meanwhile, holds the planned state"), (
        reason
    )
    assert reason.count("was committed") == (replaced == "workspace"), reason
    assert finished == [{"session": source.id, "outcome": "target-conflict"}]
