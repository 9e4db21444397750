"""`DaemonApi` over each transport: the socket (async and sync) and the daemon's handlers in this
process give the same models for the same request, and the same `RpcError` for a refused one."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from remem.daemon.client import AsyncDaemonClient, DaemonUnavailable, SocketTransport
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.api import AsyncTransport, DaemonApi, InProcessTransport
from remem.daemon.protocol.memory import GlobalSnapshot, PutChange, Record, WorkspaceSnapshot
from remem.daemon.protocol.rpc import (
    HISTORY_REFUSED,
    Empty,
    HistoryEntryParams,
    RpcError,
    WorkspaceParams,
)
from remem.daemon.server.memory_methods import MemoryMethods
from remem.daemon.server.runtime import DaemonPaths

pytestmark = pytest.mark.slow
# A workspace, Global memory, and the (code, message) of a refused history lookup.
Answers = tuple[WorkspaceSnapshot, GlobalSnapshot, tuple[int, str]]
RECORD = Record(name="prefer-uv", description="Use uv", type="feedback", content="Faster.\n")


def test_the_socket_and_the_handlers_answer_alike(home: Home, tmp_path: Path) -> None:
    cwd = str(tmp_path / "project")
    store = MemoryStore(home)
    workspace = WorkspaceId.from_cwd(cwd)
    empty = store.read_workspace(workspace).revision
    store.commit_workspace(workspace, empty, [PutChange(action="put", record=RECORD)])
    question = WorkspaceParams(cwd=cwd)

    async def ask(api: DaemonApi[AsyncTransport]) -> Answers:
        with pytest.raises(RpcError) as refused:
            await api.memory_show_at(HistoryEntryParams(entry="0" * 40))
        refusal = (refused.value.code, refused.value.message)
        return await api.read_workspace(question), await api.read_global(Empty()), refusal

    async def both() -> list[Answers]:
        client = await AsyncDaemonClient.open(home)
        try:
            return [
                await ask(DaemonApi(client)),
                await ask(DaemonApi(InProcessTransport(MemoryMethods(home).handlers()))),
            ]
        finally:
            await client.close()

    over_socket, in_process = asyncio.run(both())
    assert over_socket == in_process
    snapshot, _, (code, _) = over_socket
    assert [r.name for r in snapshot.records] == [RECORD.name]
    assert code == HISTORY_REFUSED


def test_the_synchronous_socket_transport_reaches_the_running_daemon(home: Home) -> None:
    with pytest.raises(DaemonUnavailable, match="no remem daemon is running"):
        DaemonApi(SocketTransport(home, start=False)).status(Empty())
    status = DaemonApi(SocketTransport(home)).status(Empty())  # starts it
    info = DaemonPaths(home).read_status()
    assert info is not None and status.pid == info.pid and status.home == str(home.root)
