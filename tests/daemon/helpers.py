"""Daemon test helpers: the CLI as a subprocess, a crash at a fault point and the points a run
reaches, calls on one connection, the process waiting for a lock (and `wait_until`, from
tests/waiting.py, which the daemon tests import from here)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.client import AsyncDaemonClient
from remem.daemon.faults import EXIT_CODE
from remem.daemon.home import Home
from remem.daemon.protocol.rpc import RpcError
from remem.daemon.server.runtime import DaemonPaths
from tests.waiting import wait_until


def remem(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def crash_at(point: str, home: Home, monkeypatch: pytest.MonkeyPatch, *args: str) -> None:
    """Run `remem ARGS` in a process that dies at `point`, and wait until it is gone: the CLI
    itself with `REMEM_NO_DAEMON` set, else the daemon it starts (which inherits the point)."""
    monkeypatch.setenv("REMEM_FAULTPOINT", point)
    crashed = remem(home, *args)
    monkeypatch.delenv("REMEM_FAULTPOINT")
    if os.environ.get(NO_DAEMON_ENV):
        assert crashed.returncode == EXIT_CODE, crashed.stderr
    else:
        said = crashed.stderr + crashed.stdout  # with --json, the failure is JSON on stdout
        assert crashed.returncode != 0 and "daemon" in said, said
        wait_until(lambda: not DaemonPaths(home).running())


def calls(home: Home, requests: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Run requests in order on one connection; an RpcError stands in place of its result."""

    async def run() -> list[Any]:
        client = await AsyncDaemonClient.open(home)
        results: list[Any] = []
        try:
            for method, params in requests:
                try:
                    results.append(await client.call(method, params))
                except RpcError as exc:
                    results.append(exc)
        finally:
            await client.close()
        return results

    return asyncio.run(run())


def alive(pid: int) -> bool:
    """Whether a process `pid` exists (a daemon this test did not spawn is reaped by init)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class Reached:
    """Armed in place of a fault point's name: equal to none, it records every one reached."""

    def __init__(self) -> None:
        self.points: Counter[str] = Counter()

    def __eq__(self, name: object) -> bool:
        self.points[str(name)] += 1
        return False

    def crashes(self) -> set[str]:
        """Every `REMEM_FAULTPOINT` value that kills the run somewhere: each hit of each point."""
        return {p if n == 1 else f"{p}@{n}" for p, hits in self.points.items() for n in range(1, hits + 1)}

    __hash__ = None  # type: ignore[assignment]


def waiting_for(lock: Path) -> int | None:
    """The process that waits for the flock on `lock` someone else holds (Linux's /proc/locks)."""
    inode = f":{os.stat(lock).st_ino}"
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if fields[1:3] == ["->", "FLOCK"] and fields[6].endswith(inode):
            return int(fields[5])
    return None


# The daemon's start waits on no other process's lock: it tries each scope's once. A test that
# stops a daemon in the middle of its start makes that start wait, in the daemon's process
# alone, for Global's lock the test holds, as its reconcile of Global once did.
_START_WAITS_HOOK = """
import fcntl
from remem.daemon.server import memory_methods

_reconcile = memory_methods.MemoryMethods._reconcile


def _waiting_reconcile(self, scope):
    if scope is None:
        with open(self.store.home.locks / "global.lock", "a+b") as held:
            fcntl.flock(held, fcntl.LOCK_SH)
            fcntl.flock(held, fcntl.LOCK_UN)
    return _reconcile(self, scope)


memory_methods.MemoryMethods._reconcile = _waiting_reconcile
"""


def start_waits_for_global(monkeypatch: pytest.MonkeyPatch) -> None:
    """Daemons this test starts wait in their start for Global's lock while the test holds it."""
    from tests.scratch import hooked_pythonpath

    monkeypatch.setenv("PYTHONPATH", hooked_pythonpath(_START_WAITS_HOOK, "remem-start-waits-"))
