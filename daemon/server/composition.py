"""The one composition of the daemon's handlers, for every process that serves them.

The daemon process, a CLI command run without it (`--no-daemon`) and the MCP server run
in-process all build `Services`: the same handler objects for every method, wired the same
way. What differs is only what the host gives them (`Host`): where notifications go, how
memory snapshots are proved current, extra session roots named on a command line, and the
daemon's listing memo. What a crash left half done (agent updates, reviews cut between their
Global and workspace commits) is settled before anything is read, in every host, and every
request first looks for a review between its two commits (one directory listing, almost always
empty): a live one is waited for, one whose process died is finished, so no reader sees half
of a committed plan, whichever process was committing it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..agent_updates.audit import AuditTrail
from ..consolidation.settle import marks, pending
from ..home import Home, HomeUnusable
from ..protocol.api import InProcessTransport
from ..protocol.rpc import Method, Params, Result
from ..sessions.memo import ListingMemo
from ..settings import Settings
from .agent_methods import AgentMethods
from .consolidation_methods import ConsolidationMethods
from .jsonrpc import Handler
from .memory_methods import MemoryMethods, Publish, unheard
from .session_methods import SessionMethods
from .view_methods import ViewMethods


@dataclass(frozen=True)
class Host:
    """What the serving process gives the handlers.

    `watch` serves memory from a snapshot cache proved current by a change feed (True) or by
    stat (False), or reads the files at each call (None: one short command). `extra_roots`
    exist only for a CLI command, whose user names them; the daemon reads configured roots only.
    `settings` are the daemon's running settings (the last valid ones while `settings.yml` is
    invalid), which sessions are listed by, with the file's problems (their answers carry
    them); None: `settings.yml` as read at each call, refused while invalid.
    """

    publish: Publish = unheard
    watch: bool | None = None
    extra_roots: Sequence[Path] = ()
    memo: ListingMemo | None = None
    settings: Callable[[], tuple[Settings, list[str]]] | None = None


class Services:
    def __init__(self, home: Home, host: Host) -> None:
        self.home = home
        # An agent's update whose history entry was never written is still the agent's: its
        # audit trail names it (decision 0408).
        self.memory = MemoryMethods(home, host.publish, watch=host.watch, attribute=AuditTrail(home).author)
        self.sessions = SessionMethods(home, host.extra_roots, host.publish, host.memo, host.settings)
        self.consolidation = ConsolidationMethods(home, self.memory, host.publish)
        self.agents = AgentMethods(self.memory)
        self.views = ViewMethods(home, self.sessions, self.consolidation)

    def handlers(self) -> dict[str, Handler]:
        """Every domain method's handler by its name (the daemon adds its own `daemon/*`)."""
        parts = (self.memory, self.sessions, self.consolidation, self.agents, self.views)
        table: dict[str, Handler] = {}
        for part in parts:
            served = part.handlers()
            assert table.keys().isdisjoint(served), "a method is served by one part"
            reads_memory = part is not self.sessions
            table |= {method: self._settled_first(h, reads_memory) for method, h in served.items()}
        return table

    def _settled_first(self, handler: Handler, reads_memory: bool) -> Handler:
        async def handle(params: Any) -> BaseModel:
            if self._pending(reads_memory):
                await self.consolidation.settle()
            return await handler(params)

        return handle

    def _pending(self, reads_memory: bool) -> bool:
        """Whether a crash left a review committing. Where its marks cannot be read (the review
        receipts' folder closed to this user), what reads memory is refused, as it might read
        half a review; what reads only sessions goes on, and says the folder itself
        (decision 0529)."""
        try:
            return bool(pending(self.home))
        except HomeUnusable:
            if reads_memory or not any(_closed(f) for f in (self.home.reviews, marks(self.home))):
                raise  # a file or link there, or `memory` itself closed: the home in the way
            return False

    async def settle(self) -> None:
        """Finish what a crash left half done, before anything is read; where memory is watched
        (the daemon, an MCP server run without it), record what the history missed while no
        process watched: a state found later would be told as a hand edit made under watch."""
        await self.agents.settle()
        # Marks this user may not read are said by each request they stop, not here too.
        if self._pending(reads_memory=False):
            await self.consolidation.settle()
        if self.memory.cache is not None:
            await self.memory.reconcile_history()

    def stopping(self) -> None:
        """The daemon is stopping: work under way that only reads ends early (safe from any thread)."""
        self.sessions.stop()

    def close(self) -> None:
        self.agents.close()


class InProcess:
    """The composed handlers as a transport of `DaemonApi`, run in the caller's process.

    The first call settles what a crash left; every handler itself settles a review found between
    its commits (`Services.handlers`)."""

    def __init__(self, home: Home, host: Host) -> None:
        self.services = Services(home, host)
        self._transport = InProcessTransport(self.services.handlers())
        self._settled = False

    async def request(self, method: Method[Params, Result], params: Params) -> Result:
        if not self._settled:
            await self.services.settle()
            self._settled = True
        return await self._transport.request(method, params)

    async def close(self) -> None:
        self.services.close()


def _closed(folder: Path) -> bool:
    """Whether `folder` is a folder this user may reach but not list: the one refusal a session
    listing goes on past (decision 0529). A file or a link there, or a folder on the way to it
    closed, is the home in the way."""
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return False
    except OSError:
        return False
    try:
        os.listdir(folder)
    except PermissionError:
        return True
    except OSError:
        return False
    return False
