"""Reaching the daemon: connect, or start it (once, under `state/spawn.lock`) and wait for it.

The async `AsyncDaemonClient` is the library API; `call()` is the small synchronous wrapper
the CLI uses. A daemon of another protocol or app version is asked to stop and replaced, and a
daemon that fails to start is reported with the end of its own log.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import time
from typing import Any

from .home import Home
from .locks import file_lock
from .server.protocol import APP_VERSION, MAX_MESSAGE_BYTES, PROTOCOL_VERSION, DaemonInfo, RpcError
from .server.runtime import DaemonPaths

START_TIMEOUT_SECONDS = 15.0


class DaemonUnavailable(Exception):
    """The daemon could not be reached or started; the message says why and what to do."""


class AsyncDaemonClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, info: DaemonInfo) -> None:
        self._reader, self._writer, self.info = reader, writer, info
        self._ids = itertools.count(1)

    @classmethod
    async def open(cls, home: Home, *, start: bool = True) -> AsyncDaemonClient:
        """Connect to this home's daemon, starting (or replacing) it when needed."""
        paths = DaemonPaths(home)
        client = await _connect_checked(paths)
        if client is not None:
            return client
        if not start:
            raise DaemonUnavailable(f"no remem daemon is running for {home.root}")
        await asyncio.to_thread(_start, paths)
        client = await _connect_checked(paths)
        if client is None:
            raise DaemonUnavailable(f"the remem daemon for {home.root} started but does not answer")
        return client

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params or {}}
        self._writer.write(json.dumps(request).encode() + b"\n")
        await self._writer.drain()
        line = await self._reader.readline()
        if not line:
            raise DaemonUnavailable("the daemon closed the connection")
        response = json.loads(line)
        if "error" in response:
            error = response["error"]
            raise RpcError(error["code"], error["message"], error.get("data"))
        result: dict[str, Any] = response["result"]
        return result

    async def close(self) -> None:
        self._writer.close()


async def _connect(info: DaemonInfo) -> AsyncDaemonClient | None:
    try:
        reader, writer = await asyncio.open_unix_connection(info.socket, limit=MAX_MESSAGE_BYTES)
    except OSError:
        return None
    return AsyncDaemonClient(reader, writer, info)


async def _connect_checked(paths: DaemonPaths) -> AsyncDaemonClient | None:
    """A connected client after a version handshake; None when no compatible daemon answers."""
    info = paths.read_status()
    client = await _connect(info) if info is not None else None
    if client is None:
        return None
    hello = await client.call("daemon/hello", {"protocol": PROTOCOL_VERSION, "version": APP_VERSION})
    if (hello["protocol"], hello["version"]) == (PROTOCOL_VERSION, APP_VERSION):
        return client
    await client.call("daemon/shutdown")  # an older (or newer) daemon: replace it
    await client.close()
    await asyncio.to_thread(_wait_until_stopped, paths)
    return None


def _start(paths: DaemonPaths) -> None:
    """Spawn the daemon unless another client did meanwhile, and wait until it listens."""
    with file_lock(paths.spawn_lock):
        if paths.running() and paths.read_status() is not None:
            return  # another client started it while we waited for the spawn lock
        process = None if paths.running() else _spawn(paths)
        _wait_for_status(paths, process)


def _spawn(paths: DaemonPaths) -> subprocess.Popen[bytes]:
    log = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        command = [sys.executable, "-m", "remem.daemon", "--home", str(paths.home.root), "daemon", "run"]
        # A new session: the daemon outlives the CLI or editor that started it.
        return subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
        )
    finally:
        os.close(log)


def _wait_for_status(paths: DaemonPaths, process: subprocess.Popen[bytes] | None) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if paths.read_status() is not None and paths.running():
            return
        if process is not None and process.poll() not in (None, 0):
            raise DaemonUnavailable(f"the remem daemon failed to start; its log says:\n{_log_tail(paths)}")
        time.sleep(0.02)
    seconds = f"{START_TIMEOUT_SECONDS:.0f}"
    raise DaemonUnavailable(
        f"the remem daemon did not start within {seconds} s; its log says:\n{_log_tail(paths)}"
    )


def _wait_until_stopped(paths: DaemonPaths) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while paths.running():
        if time.monotonic() > deadline:
            raise DaemonUnavailable("the old remem daemon did not stop; stop it with `remem daemon stop`")
        time.sleep(0.02)


def _log_tail(paths: DaemonPaths, lines: int = 20) -> str:
    try:
        return "\n".join(paths.log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def call(
    home: Home, method: str, params: dict[str, Any] | None = None, *, start: bool = True
) -> dict[str, Any]:
    """One synchronous request (for the CLI): connect or start, call, close."""

    async def once() -> dict[str, Any]:
        client = await AsyncDaemonClient.open(home, start=start)
        try:
            return await client.call(method, params)
        finally:
            await client.close()

    return asyncio.run(once())
