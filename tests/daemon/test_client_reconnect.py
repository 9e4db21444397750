"""A long-lived client (the language server) across daemon deaths and stops.

Each test pins one cause of an earlier flaky reconnect: the first call after a daemon died
failed instead of reaching a new daemon; after a restart the client named the dead daemon
(its left-behind status file); a killed daemon stayed a zombie of the client that spawned it;
and a daemon told to stop kept running while a client stayed connected (Python >= 3.12).
"""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from tests.waiting import SECONDS, until, wait_until

from .helpers import alive

pytestmark = pytest.mark.slow


def kill_and_wait(paths: DaemonPaths, pid: int) -> None:
    """SIGKILL the daemon and block (the client's reader never runs) until its lock is free."""
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not paths.running())


def test_the_first_call_after_a_daemon_died_reaches_a_new_one(home: Home) -> None:
    paths = DaemonPaths(home)

    async def scenario() -> list[tuple[int, int, int]]:
        client = await AsyncDaemonClient.open(home)
        seen = []
        for _ in range(3):
            killed = client.info.pid
            kill_and_wait(paths, killed)
            answered = (await client.call("daemon/status"))["pid"]
            seen.append((killed, answered, client.info.pid))
        await client.close()
        return seen

    for killed, answered, named in asyncio.run(scenario()):
        assert answered != killed and named == answered


def test_a_status_file_that_names_another_process_is_not_trusted(home: Home) -> None:
    """What a client finds after a crash: the dead daemon's status file, while a new daemon
    already answers on the same socket path but has not written its own yet."""
    paths = DaemonPaths(home)

    async def scenario() -> tuple[int, int]:
        first = await AsyncDaemonClient.open(home)
        real = paths.read_status()
        assert real is not None
        paths.status.write_text(real.model_copy(update={"pid": os.getpid()}).model_dump_json())
        opening = asyncio.ensure_future(AsyncDaemonClient.open(home))
        await asyncio.sleep(0.5)  # room for a client that trusts the file to connect (the bug)
        paths.status.write_text(real.model_dump_json())  # as the new daemon does once it is ready
        second = await opening
        named = second.info.pid
        for client in (first, second):
            await client.close()
        return named, real.pid

    named, daemon = asyncio.run(scenario())
    assert named == daemon


def test_a_killed_daemon_is_reaped_by_the_client_that_spawned_it(home: Home) -> None:
    async def scenario() -> int:
        client = await AsyncDaemonClient.open(home)
        pid = client.info.pid
        await client.close()
        return pid

    pid = asyncio.run(scenario())  # this process spawned it, and outlives it
    kill_and_wait(DaemonPaths(home), pid)
    wait_until(lambda: not alive(pid))  # a zombie would still be there


def test_a_daemon_told_to_stop_exits_while_a_client_stays_connected(home: Home) -> None:
    paths = DaemonPaths(home)

    async def scenario() -> bool:
        editor = await AsyncDaemonClient.open(home)  # never hangs up by itself
        other = await AsyncDaemonClient.open(home, start=False)
        await other.call("daemon/shutdown")
        await until(lambda: not paths.running(), what="the daemon to exit")
        stopped = not paths.running()
        await asyncio.wait_for(editor.lost(), SECONDS)  # and the connected client hears it
        for client in (editor, other):
            await client.close()
        return stopped

    assert asyncio.run(scenario())
