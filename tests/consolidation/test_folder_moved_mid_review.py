"""A memory folder moved while a review's commit is published in it ends the review
`target-conflict`, saying what moved and what was committed, and every client hears the run end
(decision 0487). It was the store's refusal (`remem/moved-workspace`, `remem/moved-memory`)
raised through the barrier: the daemon's internal error, "a bug in remem", and no
`consolidation/finished`.

The daemon runs with a hook loaded at its start (`sitecustomize`, in the daemon's process only:
the test talks to it over its socket) that renames the folder when the commit reaches the named
fault point, inside the commit, as a person or a sync tool could at that instant.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.client import AsyncDaemonClient
from remem.daemon.consolidation.settle import pending
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.daemon.helpers import remem
from tests.fake_openai import FakeOpenAI, tool_call
from tests.scratch import process_folder

from .conftest import Source, both_scopes

pytestmark = pytest.mark.slow
MOVE_ENV = "REMEM_TEST_MOVE_AT"
HOOK = """
import os

_point, _folder = os.environ["REMEM_TEST_MOVE_AT"].split(os.pathsep)
import remem.daemon.faults as _faults

_reached = _faults.faultpoint
_done = []


def _moving(name):
    _reached(name)
    if name == _point and not _done:
        _done.append(True)
        os.rename(_folder, _folder + ".moved")


_faults.faultpoint = _moving
"""


@pytest.fixture
def daemon_env(home: Home, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Requests through a daemon that loads the hook; it is stopped after the test."""
    hooks = process_folder("remem-move-hook-")
    (hooks / "sitecustomize.py").write_text(HOOK)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(hooks), *filter(None, [os.environ.get("PYTHONPATH")])])
    )
    monkeypatch.delenv(NO_DAEMON_ENV)
    yield
    monkeypatch.delenv(MOVE_ENV, raising=False)
    remem(home, "daemon", "stop")


def _run(home: Home, session: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A `consolidation/run`, and the `consolidation/finished` another client heard."""
    heard: list[tuple[str, dict[str, Any]]] = []

    def finished() -> list[dict[str, Any]]:
        return [p for m, p in heard if m == "consolidation/finished"]

    async def scenario() -> dict[str, Any]:
        listening = await AsyncDaemonClient.open(home, listener=lambda m, p: heard.append((m, p)))
        asking = await AsyncDaemonClient.open(home)
        try:
            result = await asking.call("consolidation/run", {"session": session})
            # Told before the answer: an answer on the listening connection comes after it.
            await listening.call("consolidation/receipts", {"session": session})
            return result
        finally:
            await asking.close()
            await listening.close()

    return asyncio.run(scenario()), finished()


@pytest.mark.parametrize(
    ("point", "moved", "said"),
    [
        (
            "memory.workspace.mid-rename",
            "workspace",
            "Global was committed; the workspace could not be committed: {folder}: this workspace's "
            "memory folder was moved, replaced or removed while the commit was being published in it",
        ),
        (
            "memory.global.after-exchange",
            "memory",
            "Global could not be committed: {folder}: remem's memory folder was moved, replaced or "
            "removed while Global's commit was being published in it",
        ),
    ],
    ids=["workspace-folder", "memory-folder"],
)
def test_a_folder_moved_mid_commit_ends_the_review_target_conflict_and_it_is_heard(
    home: Home,
    fake: FakeOpenAI,
    source: Source,
    daemon_env: None,
    monkeypatch: pytest.MonkeyPatch,
    point: str,
    moved: str,
    said: str,
) -> None:
    store = MemoryStore(home)
    workspace = WorkspaceId.from_cwd(source.cwd)
    folder = store.folder(workspace) if moved == "workspace" else home.memory
    monkeypatch.setenv(MOVE_ENV, os.pathsep.join([point, str(folder)]))
    fake.reply(tool_call(both_scopes(source)))
    result, finished = _run(home, source.id)
    assert result["status"] == "target-conflict", result
    assert result["reason"].startswith(said.format(folder=folder)), result["reason"]
    assert finished == [{"session": source.id, "outcome": "target-conflict"}]
    assert Path(f"{folder}.moved").is_dir(), "the folder was moved mid-commit"

    # The next request meets the review settled: its receipt as answered, no mark left.
    [receipt] = _receipts(home, source.id)
    assert (receipt["status"], receipt["attempts"][-1]["error"]) == ("target-conflict", result["reason"])
    assert not pending(home)
    expected_global = "Prefers terse answers.\n" if moved == "workspace" else ""
    assert store.read_global().content == expected_global, "what the receipt says was committed"
    fake.reply(tool_call(both_scopes(source)))
    retried, _ = _run(home, source.id)
    assert retried["status"] == "committed", retried
    assert store.read_global().content == "Prefers terse answers.\n"
    assert [r.name for r in store.read_workspace(workspace).records] == ["prefer-uv"]


def _receipts(home: Home, session: str) -> list[dict[str, Any]]:
    async def read() -> list[dict[str, Any]]:
        client = await AsyncDaemonClient.open(home)
        try:
            answer = await client.call("consolidation/receipts", {"session": session})
            return list(answer["receipts"])
        finally:
            await client.close()

    return asyncio.run(read())
