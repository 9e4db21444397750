"""A daemon of another remem version, as a test's stand-in: it holds the daemon's lock, writes
its status file, answers hello with another version and stops when asked (decision 0423)."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

from remem.daemon import client as daemon_client
from remem.daemon.home import Home
from remem.daemon.locks import LockHandle, try_file_lock
from remem.daemon.protocol.rpc import PROTOCOL_VERSION, DaemonInfo
from remem.daemon.server.runtime import DaemonPaths

OTHER = "0.0.0-other"


class OtherVersion:
    """A daemon of remem `OTHER` serving `home`, in this process; `asked` the methods it got."""

    def __init__(self, home: Home) -> None:
        self.paths = DaemonPaths(home)
        self.asked: list[str] = []
        self._server: asyncio.Server | None = None
        self._held: LockHandle | None = None

    async def start(self) -> OtherVersion:
        self._held = try_file_lock(self.paths.lock)
        assert self._held is not None, "no daemon runs"
        self.paths.socket.unlink(missing_ok=True)
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.paths.socket))
        info = DaemonInfo(
            pid=os.getpid(), socket=str(self.paths.socket), protocol=PROTOCOL_VERSION, version=OTHER,
            startedAt="2026-01-01T00:00:00Z",
        )  # fmt: skip
        self.paths.status.write_text(info.model_dump_json())
        return self

    def stop(self) -> None:
        """As a daemon stops: its status file first, then its socket and its lock."""
        self.paths.status.unlink(missing_ok=True)
        if self._server is not None:
            self._server.close()
            self._server = None
        self.paths.socket.unlink(missing_ok=True)
        if self._held is not None:
            self._held.release()
            self._held = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            message = json.loads(line)
            self.asked.append(message["method"])
            result: dict[str, Any] = {}
            if message["method"] == "daemon/hello":
                result = {"pid": os.getpid(), "protocol": PROTOCOL_VERSION, "version": OTHER}
            writer.write(
                json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode() + b"\n"
            )
            await writer.drain()
            if message["method"] == "daemon/shutdown":
                self.stop()
                break
        writer.close()


def no_daemon_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """Clients start no daemon of their own: a test watches whom they replace, not a start."""

    def no_start(paths: DaemonPaths, spawn: bool, deadline: float) -> None:
        raise daemon_client.DaemonUnavailable("no daemon is started in this test")

    monkeypatch.setattr(daemon_client, "_start", no_start)
