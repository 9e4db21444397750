"""The continuation state of the logs a process listed last, kept in memory between listings.

Continuing a grown log needs its index row and `LogState` as of the revision it was last
projected at. The index holds that pair for every log, but loading it back (a SQLite read and
the decoding of a header, a projection and a digest state) cost as much as reading what was
appended. A catalog that lists again (the daemon's, through its memo; any catalog that is
kept) holds the pair of the logs it projected last here instead.

A pair is what this process itself projected from the file at `row.revision`, so it is what
the index would give back for that revision, whoever wrote the index since. The catalog still
continues from it only while the index's row is of that revision (decision 0260): the turns a
continuation stores go on top of the index's. Each state holds one turn and at most one
digest block (8 KiB), so `MAX_CONTINUATIONS` pairs stay under a megabyte.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

from .index import Continuation, LogRow, LogState

MAX_CONTINUATIONS = 64  # logs whose state is kept: the ones being written to, and then some


class Continuations:
    """The last `capacity` logs' continuations, least recently kept dropped first."""

    def __init__(self, capacity: int = MAX_CONTINUATIONS) -> None:
        self.capacity = capacity
        self._kept: OrderedDict[str, Continuation] = OrderedDict()
        self._lock = threading.Lock()  # a kept catalog may list from more than one thread

    def take(self, path: str) -> Continuation | None:
        """The continuation of `path`, handed over: continuing folds new events into its
        projection, so a continuation that fails half-way must not stay behind."""
        with self._lock:
            return self._kept.pop(path, None)

    def keep(self, row: LogRow, state: LogState) -> None:
        with self._lock:
            self._kept[row.path] = Continuation(row, state)
            self._kept.move_to_end(row.path)
            while len(self._kept) > self.capacity:
                self._kept.popitem(last=False)

    def forget(self, paths: Iterable[str]) -> None:
        with self._lock:
            for path in paths:
                self._kept.pop(path, None)

    def __len__(self) -> int:
        return len(self._kept)
