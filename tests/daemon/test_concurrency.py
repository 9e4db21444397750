"""A slow request stalls no one: not the other clients, not the same client's other requests."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.locks import file_lock
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.server.memory_methods import THREADS_PER_SCOPE
from remem.daemon.server.process import WORKER_THREADS
from remem.daemon.server.runtime import DaemonPaths
from tests.waiting import until

pytestmark = pytest.mark.slow
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
HANG_SECONDS = 30
RECORD = {"name": "a-fact", "description": "A fact", "type": "project", "content": "Body.\n"}


def test_requests_stuck_behind_a_lock_stall_no_one_else(home: Home, tmp_path: Path) -> None:
    stuck = WorkspaceId.from_cwd(tmp_path / "stuck")
    free = WorkspaceId.from_cwd(tmp_path / "free")
    commit = {"cwd": stuck.cwd, "expectedRevision": EMPTY, "changes": [{"action": "put", "record": RECORD}]}

    async def scenario() -> None:
        writer, bystander, *readers = [await AsyncDaemonClient.open(home) for _ in range(5)]
        # Another process (a `--no-daemon` CLI, say) holds the workspace for as long as it likes.
        # Its folder made: a read of a scope never made answers it empty, no lock waited on (0499).
        (home.ensure_layout().workspaces / stuck.key).mkdir()
        with file_lock(home.locks / f"ws-{stuck.key}.lock"):
            slow = [asyncio.create_task(writer.call("memory/commitWorkspace", commit)) for _ in range(10)]
            # More stuck readers than the daemon has worker threads, each client below its
            # in-flight limit, so that each could still be answered on other matters.
            slow += [
                asyncio.create_task(reader.call("memory/readWorkspace", {"cwd": stuck.cwd}))
                for reader in readers
                for _ in range(15)
            ]
            await asyncio.sleep(0.5)  # not a timing assertion: a head start for the slow ones
            others = asyncio.gather(
                bystander.call("daemon/status"),
                bystander.call("memory/readGlobal"),
                bystander.call("memory/readWorkspace", {"cwd": free.cwd}),
                writer.call("memory/readWorkspace", {"cwd": free.cwd}),  # the writer's own
                readers[0].call("daemon/status"),
            )
            # A deadline for a hang, not a speed target: a stalled daemon fails instead of hanging.
            answers = await asyncio.wait_for(others, HANG_SECONDS)
            assert not any(task.done() for task in slow), "the lock is still held"
        assert answers[0]["clients"] == 5 and answers[2]["records"] == []
        results = await asyncio.gather(*slow)
        statuses = sorted(r["status"] for r in results[:10])
        assert statuses == ["committed"] + ["conflict"] * 9, "one commit won, nine saw its revision"
        assert all(r["key"] == stuck.key for r in results[10:])
        for client in (writer, bystander, *readers):
            await client.close()

    asyncio.run(scenario())


def test_agent_requests_and_reverts_stuck_behind_a_lock_keep_to_their_scopes_threads(
    home: Home, tmp_path: Path
) -> None:
    """An agent's reads ran in any worker thread, and a revert in Global's: enough of them stuck
    behind one workspace's lock took every thread (an unrelated workspace went unanswered), or
    Global's (its history went unanswered)."""
    stuck = WorkspaceId.from_cwd(tmp_path / "stuck")
    free = WorkspaceId.from_cwd(tmp_path / "free")
    commit = {"cwd": stuck.cwd, "expectedRevision": EMPTY, "changes": [{"action": "put", "record": RECORD}]}
    asks = [
        ("agents/index", {"cwd": stuck.cwd}),
        ("agents/context", {"cwd": stuck.cwd}),
        ("agents/record", {"cwd": stuck.cwd, "name": RECORD["name"]}),
    ]

    async def scenario() -> None:
        writer, bystander, *agents = [await AsyncDaemonClient.open(home) for _ in range(5)]
        entry = (await writer.call("memory/commitWorkspace", commit))["history"]
        assert entry is not None
        with file_lock(home.ensure_layout().locks / f"ws-{stuck.key}.lock"):
            slow = [asyncio.create_task(writer.call("memory/revert", {"entry": entry})) for _ in range(10)]
            slow += [
                asyncio.create_task(agent.call(*asks[n % len(asks)])) for agent in agents for n in range(15)
            ]
            await asyncio.sleep(0.5)  # not a timing assertion: a head start for the slow ones
            others = asyncio.gather(
                bystander.call("memory/readWorkspace", {"cwd": free.cwd}),
                bystander.call("agents/index", {"cwd": free.cwd}),
                bystander.call("memory/log", {}),
                bystander.call("memory/diff", {"entry": entry}),
            )
            answers = await asyncio.wait_for(others, HANG_SECONDS)  # a deadline for a hang
            assert not any(task.done() for task in slow), "the lock is still held"
        assert answers[0]["records"] == [] and answers[3]["stat"]["added"] == [RECORD["name"]]
        results = await asyncio.gather(*slow)
        assert sorted(r["status"] for r in results[:10]) == ["no-change"] * 10
        for client in (writer, bystander, *agents):
            await client.close()

    asyncio.run(scenario())


def test_the_status_file_is_kept_while_every_worker_thread_waits_on_a_lock(
    home: Home, tmp_path: Path
) -> None:
    """The daemon puts back its status file (clients find it by it) from the worker threads,
    which requests stuck behind other processes' locks in enough scopes can all hold."""
    stuck = [
        WorkspaceId.from_cwd(tmp_path / f"stuck-{n}") for n in range(WORKER_THREADS // THREADS_PER_SCOPE)
    ]
    status = DaemonPaths(home).status

    async def scenario() -> None:
        clients = [await AsyncDaemonClient.open(home) for _ in range(len(stuck))]
        with contextlib.ExitStack() as held:
            for workspace in stuck:  # other processes hold these workspaces for as long as they like
                (home.ensure_layout().workspaces / workspace.key).mkdir()  # made: read under its lock
                held.enter_context(file_lock(home.locks / f"ws-{workspace.key}.lock"))
            slow = [
                asyncio.create_task(client.call("memory/readWorkspace", {"cwd": workspace.cwd}))
                for client, workspace in zip(clients, stuck, strict=True)
                for _ in range(THREADS_PER_SCOPE)
            ]
            await asyncio.sleep(0.5)  # not a timing assertion: a head start for the slow ones
            written = status.read_bytes()
            status.unlink()
            await until(status.exists, HANG_SECONDS, what="the status file put back")
            assert status.read_bytes() == written and not any(task.done() for task in slow)
        await asyncio.gather(*slow)
        for client in clients:
            await client.close()

    asyncio.run(scenario())


def test_context_requests_stuck_behind_globals_lock_keep_to_globals_threads(
    home: Home, tmp_path: Path
) -> None:
    """An agent's context reads Global memory too: with Global's lock held by another process,
    context requests of enough workspaces (each within its own budget) took every thread."""
    workspaces = [
        WorkspaceId.from_cwd(tmp_path / f"w-{n}") for n in range(WORKER_THREADS // THREADS_PER_SCOPE + 2)
    ]
    free = WorkspaceId.from_cwd(tmp_path / "free")

    async def scenario() -> None:
        clients = [await AsyncDaemonClient.open(home) for _ in range(len(workspaces) + 1)]
        *askers, bystander = clients
        with file_lock(home.ensure_layout().locks / "global.lock"):
            slow = [
                asyncio.create_task(client.call(method, {"cwd": workspace.cwd}))
                for client, workspace in zip(askers, workspaces, strict=True)
                for method in ("agents/context", "memory/context")
                for _ in range(THREADS_PER_SCOPE // 2)
            ]
            await asyncio.sleep(0.5)  # not a timing assertion: a head start for the slow ones
            answer = await asyncio.wait_for(
                bystander.call("memory/readWorkspace", {"cwd": free.cwd}), HANG_SECONDS
            )  # a deadline for a hang
            assert not any(task.done() for task in slow), "the lock is still held"
        assert answer["records"] == []
        await asyncio.gather(*slow)
        for client in clients:
            await client.close()

    asyncio.run(scenario())
