"""A memory folder replaced by a copy of itself (as a sync tool does) right after a review's
commit was published in it: the store refuses the commit (the path no longer names the folder it
went to), so the receipt does not say that scope was committed, yet the copy at its path holds
the planned state, and the reason says that too, rather than "Global was committed; Global could
not be committed" (decision 0487).

The daemon loads a hook at its start (`sitecustomize`, in its process only) that, at the named
fault point inside the commit, copies the folder, moves it aside and puts the copy in its place.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.daemon.helpers import remem
from tests.fake_openai import FakeOpenAI, tool_call
from tests.scratch import process_folder

from .conftest import Source, both_scopes
from .test_folder_moved_mid_review import MOVE_ENV, _run

pytestmark = pytest.mark.slow
HOOK = """
import os, shutil

_point, _folder = os.environ["REMEM_TEST_MOVE_AT"].split(os.pathsep)
import remem.daemon.faults as _faults

_reached = _faults.faultpoint
_done = []


def _replacing(name):
    _reached(name)
    if name == _point and not _done:
        _done.append(True)
        shutil.copytree(_folder, _folder + ".copy", symlinks=True)
        os.rename(_folder, _folder + ".moved")
        os.rename(_folder + ".copy", _folder)


_faults.faultpoint = _replacing
"""


@pytest.fixture
def daemon_env(home: Home, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    hooks = process_folder("remem-replace-hook-")
    (hooks / "sitecustomize.py").write_text(HOOK)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(hooks), *filter(None, [os.environ.get("PYTHONPATH")])])
    )
    monkeypatch.delenv(NO_DAEMON_ENV)
    yield
    monkeypatch.delenv(MOVE_ENV, raising=False)
    remem(home, "daemon", "stop")


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
    monkeypatch.setenv(MOVE_ENV, os.pathsep.join([point, str(folder)]))
    fake.reply(tool_call(both_scopes(source)))
    result, finished = _run(home, source.id)
    assert result["status"] == "target-conflict", result
    reason = result["reason"]
    assert reason.startswith(said.format(folder=folder)), reason
    assert reason.endswith("; the folder at its path now, put there meanwhile, holds the planned state"), (
        reason
    )
    assert reason.count("was committed") == (replaced == "workspace"), reason
    assert finished == [{"session": source.id, "outcome": "target-conflict"}]
