"""How the MCP server reaches memory: the daemon (started on demand), or its handlers in-process.

Both are transports of the same `DaemonApi`, taking and giving the protocol's models and
raising the same `RpcError`s, so the server never knows which it has. `--no-daemon` runs the
daemon's own composition of handlers, under the same cross-process locks; its audit intents
are settled by whoever next holds a scope's agent lock, as in the daemon. Like the daemon, which
leaves when its home becomes another folder (decision 0383), the in-process handlers serve one
home folder: when the home's path leads to another one (a re-pointed link, a backup restored in
its place), they are composed afresh, their caches with them.
"""

from __future__ import annotations

import logging
from typing import Protocol

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.protocol.api import AsyncTransport
from remem.daemon.protocol.rpc import Method, Params, Result
from remem.daemon.server.composition import Host, InProcess

log = logging.getLogger("remem.agents")


class MemoryLink(AsyncTransport, Protocol):
    async def close(self) -> None: ...


class InProcessLink:
    """The daemon's handlers, run in this process, for the home folder its path leads to."""

    def __init__(self, home: Home, *, watch: bool = True) -> None:
        """`watch=False` (the `daemon.watch: polling` setting) proves snapshots by stat alone."""
        self._home, self._watch = home, watch
        self._identity = home.identity()
        # Composed at the first call, as the daemon is started then: a home in the way (a file
        # at REMEM_HOME) is each call's HomeUnusable, told to the agent, until the user fixes it.
        self._handlers: InProcess | None = None

    async def request(self, method: Method[Params, Result], params: Params) -> Result:
        identity = self._home.identity()  # one stat: what the snapshot caches cannot see
        # None recorded: there was no home, so the handlers read none before the one made since.
        if self._handlers is not None and self._identity not in (None, identity):
            log.warning("%s is another folder now: its memory is read afresh", self._home.root)
            stale, self._handlers = self._handlers, None
            await stale.close()  # a call still running on it proves by looking at the files
        if self._handlers is None:
            self._handlers = InProcess(self._home, Host(watch=self._watch))
        self._identity = identity
        return await self._handlers.request(method, params)

    async def close(self) -> None:
        if self._handlers is not None:
            await self._handlers.close()


def open_link(home: Home, use_daemon: bool, *, watch: bool = True) -> MemoryLink:
    """The daemon's client connects on the first call, so the server answers `initialize` at once;
    `watch` is for the handlers run in this process (the daemon has its own setting)."""
    if use_daemon:
        # Only its first connection replaces a daemon of another version (decision 0423): an
        # MCP server a harness started before an upgrade must not take the daemon back.
        return AsyncDaemonClient(home, start=True, listener=None, replace_once=True)
    return InProcessLink(home, watch=watch)
