"""How the MCP server reaches memory: the daemon (started on demand), or its handlers in-process.

Both are transports of the same `DaemonApi`, taking and giving the protocol's models and
raising the same `RpcError`s, so the server never knows which it has. `--no-daemon` runs the
very handlers the daemon serves, under the same cross-process locks; its audit intents are
settled by whoever next holds a scope's agent lock, as in the daemon.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.consolidation.settle import pending, settle_committing
from remem.daemon.home import Home
from remem.daemon.protocol.api import AsyncTransport, InProcessTransport
from remem.daemon.protocol.rpc import Method, Params, Result
from remem.daemon.server.agent_methods import AgentMethods
from remem.daemon.server.memory_methods import MemoryMethods


class MemoryLink(AsyncTransport, Protocol):
    async def close(self) -> None: ...


class InProcessLink:
    """The daemon's agent and memory handlers, run in this process."""

    def __init__(self, home: Home, *, watch: bool = True) -> None:
        """`watch=False` (the `daemon.watch: polling` setting) proves snapshots by stat alone."""
        self._home = home
        memory = MemoryMethods(home, watch=watch)
        self.agents = AgentMethods(memory)
        self._handlers = InProcessTransport({**memory.handlers(), **self.agents.handlers()})
        self._settled = False

    async def request(self, method: Method[Params, Result], params: Params) -> Result:
        if not self._settled:
            await self.agents.settle()
            self._settled = True
        # Each call: a review another process was committing may have died since (one listing).
        if pending(self._home):
            await asyncio.to_thread(settle_committing, self._home)
        return await self._handlers.request(method, params)

    async def close(self) -> None:
        """Nothing stays open between calls."""


def open_link(home: Home, use_daemon: bool, *, watch: bool = True) -> MemoryLink:
    """The daemon's client connects on the first call, so the server answers `initialize` at once;
    `watch` is for the handlers run in this process (the daemon has its own setting)."""
    if use_daemon:
        return AsyncDaemonClient(home, start=True, listener=None)
    return InProcessLink(home, watch=watch)
