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

A Codex rollout's pair holds the tally of its lines instead (decision 0350), which the index
never stores: a turn's start time each for a fork, and at most `MAX_TALLIED_PROBLEMS` problems.
A Claude Code transcript's holds its graph (decision 0351): only while the file is being
written (the catalog keeps none of an idle one), and `MAX_GRAPHS` at most.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import NamedTuple

from .harness_sources import Tallied
from .index import LogRow, LogState

MAX_CONTINUATIONS = 64  # logs whose state is kept: the ones being written to, and then some
# Claude Code transcripts whose graph is kept: it holds about 1.6 bytes per byte of the file.
MAX_GRAPHS = 2


class Kept(NamedTuple):
    """A log's row, and the state to go on from, both of `row.revision`."""

    row: LogRow
    state: LogState | Tallied


class Continuations:
    """The last `capacity` logs' continuations, least recently kept dropped first."""

    def __init__(self, capacity: int = MAX_CONTINUATIONS) -> None:
        self.capacity = capacity
        self._kept: OrderedDict[str, Kept] = OrderedDict()
        self._lock = threading.Lock()  # a kept catalog may list from more than one thread

    def take(self, path: str) -> Kept | None:
        """The continuation of `path`, handed over: continuing folds new events into its
        projection, so a continuation that fails half-way must not stay behind."""
        with self._lock:
            return self._kept.pop(path, None)

    def keep(self, row: LogRow, state: LogState | Tallied) -> None:
        with self._lock:
            self._kept[row.path] = Kept(row, state)
            self._kept.move_to_end(row.path)
            while len(self._kept) > self.capacity:
                self._kept.popitem(last=False)
            if _graph(state):  # only a graph kept now can make them too many
                graphs = [path for path, kept in self._kept.items() if _graph(kept.state)]
                for path in graphs[: max(0, len(graphs) - MAX_GRAPHS)]:
                    del self._kept[path]

    def forget(self, paths: Iterable[str]) -> None:
        with self._lock:
            for path in paths:
                self._kept.pop(path, None)

    def __len__(self) -> int:
        return len(self._kept)


def _graph(state: LogState | Tallied) -> bool:
    return isinstance(state, Tallied) and state.graph
