"""How the MCP server reaches memory: the daemon (started on demand), or its handlers in-process.

Both are transports of the same `DaemonApi`, taking and giving the protocol's models and
raising the same `RpcError`s, so the server never knows which it has. `--no-daemon` runs the
daemon's own composition of handlers, under the same cross-process locks; its audit intents
are settled by whoever next holds a scope's agent lock, as in the daemon.
"""

from __future__ import annotations

from typing import Protocol

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.protocol.api import AsyncTransport
from remem.daemon.server.composition import Host, InProcess


class MemoryLink(AsyncTransport, Protocol):
    async def close(self) -> None: ...


class InProcessLink(InProcess):
    """The daemon's handlers, run in this process."""

    def __init__(self, home: Home, *, watch: bool = True) -> None:
        """`watch=False` (the `daemon.watch: polling` setting) proves snapshots by stat alone."""
        super().__init__(home, Host(watch=watch))


def open_link(home: Home, use_daemon: bool, *, watch: bool = True) -> MemoryLink:
    """The daemon's client connects on the first call, so the server answers `initialize` at once;
    `watch` is for the handlers run in this process (the daemon has its own setting)."""
    if use_daemon:
        return AsyncDaemonClient(home, start=True, listener=None)
    return InProcessLink(home, watch=watch)
