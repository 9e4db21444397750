"""Daemon test helpers: the CLI as a subprocess, and polling for a condition."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from typing import Any

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.server.protocol import RpcError


def remem(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def wait_until(condition: object, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


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
