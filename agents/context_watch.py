"""Whether the context an MCP session holds is still current, told without asking the daemon.

The text `memory_context` returns comes from two folders: Global's and the workspace's. Both
are watched here with the daemon's own change feed, armed before the daemon is asked: the
kernel queues an event inside the very system call that changes a file there, so while the
queue stays empty after an answer came, every file is as it was when that answer was made,
and the session may give the text it holds again without a round trip to the daemon. Anything
reported — a change, an overflow, a folder that cannot be watched, another question asked
meanwhile, the home's path leading to another folder (a re-pointed link, a backup restored in
its place: no event in the folders watched) — sends the next call to the daemon.
`daemon.watch: polling` (network file systems,
where other machines' writes raise no event) turns it off, as it does in the daemon.
"""

from __future__ import annotations

import itertools

from remem.daemon.memory.change_feed import ChangeFeed
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

_GLOBAL_KEY = "\0global"  # not a workspace key, which never holds a NUL


class ContextWatch:
    """Not thread-safe: one session's event loop uses it."""

    def __init__(self, store: MemoryStore | None) -> None:
        """`store` None: never proves anything (every call asks the daemon)."""
        self._store = store
        self._feed = ChangeFeed(enabled=store is not None)
        self._questions = itertools.count(1)
        self._asked = 0  # the latest question
        self._proven: str | None = None  # the workspace whose held answer the feed covers
        self._home: str | None = None  # the home folder (`Home.identity`) that answer is of

    def before_asking(self, workspace: WorkspaceId) -> int | None:
        """Watch both folders from now on, before the daemon is asked; a ticket for `answered`,
        None when they cannot be watched."""
        self._proven = None
        self._asked = next(self._questions)
        if self._store is None:
            return None
        self._feed.changed()  # what changed before the question is in its answer
        # The home's paths, never its layout: watching makes nothing, and a home that cannot be
        # laid out is the daemon's to refuse (it may still serve one it laid out before).
        home = self._store.where
        self._home = home.identity()
        # Watched again after that: a folder replaced since is followed, and an event from here
        # on (even the replacement of a folder in the meantime) stays queued for `unchanged`.
        watched = self._feed.watch(_GLOBAL_KEY, home.global_file.parent) and self._feed.watch(
            workspace.key, self._store.folder(workspace)
        )
        return self._asked if watched else None

    def answered(self, ticket: int | None, workspace: WorkspaceId) -> None:
        """The answer to the question `ticket` is now the one held; it stays current while the
        feed is quiet, unless another question was asked after it (its answer may be older)."""
        self._proven = workspace.key if ticket is not None and ticket == self._asked else None

    def unchanged(self, workspace: WorkspaceId) -> bool:
        """Nothing in either folder changed since the held answer was asked for."""
        if self._proven != workspace.key:
            return False
        assert self._store is not None  # nothing is proven without one
        if self._feed.changed() == set() and self._store.where.identity() == self._home:
            return True
        self._proven = None
        return False

    def forget(self) -> None:
        """Prove nothing held from now on: the next answer is asked for."""
        self._proven = None

    def close(self) -> None:
        self._feed.close()
