"""Logs read whole for the index: one (`read_whole`), or a cold listing's many over processes.

A log read whole costs Python work on every line (decoding is in C, the checks and the fold
are not), so one process lists at one core's speed: a heavy user's first listing of gigabytes
would take minutes. `ColdReads` spreads the logs that have no index row yet over worker
processes, when they are enough to repay starting them (decision 0330). Each worker reads its
share with the very code a serial listing runs and stores the rows in the index itself, in
its own transactions, so only the small listing rows travel back. The listing process reads
shares too while the workers start and run.

A worker that dies, or a pool that cannot start, costs time, never a row: the shares left
are read here, and the listing reads whatever a dead worker held, as it reads any log the
index does not know. The index is derived data, stored a transaction per batch of rows.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

from ..faults import faultpoint
from ..protocol.sessions import SessionFormat
from .errors import SessionLogError
from .harness_sources import HARNESS_SOURCES
from .index import LogRow, LogState, SessionIndex, Update
from .models import SessionHeader
from .projection import PROJECTED_TYPES, Projection
from .reader import gc_paused, skim_session

log = logging.getLogger("remem.daemon")
# Rows stored per transaction: holding a whole cold listing's (about 50 KB a log) until the
# end made a daemon's memory peak, and so its idle size, grow with the root.
INDEX_BATCH = 50
# Starting a worker (a fresh interpreter importing the readers) costs about a quarter of a
# second, in which one process reads some 25 MB of logs: fewer bytes are read here alone.
MIN_SPREAD_BYTES = 32 << 20
# A share is about this many bytes of logs: small enough to keep every process busy to the
# end, large enough that handing it over costs nothing next to reading it.
SHARE_BYTES = 4 << 20
# Each process holds its readers (about 40 MB) and a log at a time; past four, a listing's
# memory grows faster than its speed on the machines remem runs on.
MAX_PROCESSES = 4


@dataclass(frozen=True)
class ColdRead:
    """A log with no index row yet: where it is, its format, its revision and size at `stat`."""

    path: str
    format: SessionFormat
    revision: str
    size: int


def read_whole(log: ColdRead) -> Update:
    """The log's index entry from reading it whole; an unreadable log's row names why."""
    path = Path(log.path)
    if log.format != "dsh":
        return HARNESS_SOURCES[log.format].index(path, log.revision)
    try:
        projection = Projection()
        read = skim_session(path, PROJECTED_TYPES, fold=projection.fold)
    except SessionLogError as exc:
        return Update(LogRow(path=log.path, revision=log.revision, error=exc.reason))
    state = LogState.of(read.header, projection, read.resume, read.digest_state)
    return Update(dsh_row(path, read.revision, read.header, projection, read.digest), state, projection.turns)


def dsh_row(path: Path, revision: str, header: SessionHeader, projection: Projection, digest: str) -> LogRow:
    """A DSH log's listing row, from its header and projection."""
    return LogRow(
        path=str(path),
        revision=revision,
        id=header.id,
        cwd=header.cwd,
        created_at=header.createdAt,
        parent=header.parentSession,
        origin=header.origin,
        seed_length=header.seedLength,
        title=projection.title,
        turns=len(projection.turns),
        open_turn=projection.open_turn,
        fork_turn=projection.fork_turn(header.seedLength),
        last_seq=projection.lastSeq,
        digest=digest,
    )


def store_share(index: SessionIndex, share: Iterable[ColdRead]) -> list[LogRow]:
    """Read each log of `share` whole and store its entry, `INDEX_BATCH` at a time: the rows."""
    rows: list[LogRow] = []
    updates: list[Update] = []
    with gc_paused():
        for log in share:
            updates.append(read_whole(log))
            if len(updates) >= INDEX_BATCH:
                index.put(updates)
                rows.extend(u.row for u in updates)
                updates.clear()
        index.put(updates)
    rows.extend(u.row for u in updates)
    return rows


_worker_index: SessionIndex | None = None  # a worker's connection, opened by its first share


def _work(index_path: Path, share: list[ColdRead]) -> list[LogRow]:
    """A worker process's part: store a share in the index at `index_path`."""
    global _worker_index
    if _worker_index is None:
        _worker_index = SessionIndex(index_path)
    faultpoint("sessions.cold-reads.before-share")
    rows = store_share(_worker_index, share)
    faultpoint("sessions.cold-reads.after-share")  # stored, not yet answered: read again here
    return rows


def default_processes() -> int:
    """The cores this process may run on, up to `MAX_PROCESSES`."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cores, MAX_PROCESSES))


@dataclass(frozen=True)
class ColdReads:
    """How a listing reads the logs the index does not know: over `processes` processes (this
    one included) once they hold `min_bytes`, else here alone; `share_bytes` at a time."""

    processes: int = default_processes()
    min_bytes: int = MIN_SPREAD_BYTES
    share_bytes: int = SHARE_BYTES

    def store(
        self, index: SessionIndex, logs: list[ColdRead], told: Callable[[int], None]
    ) -> dict[str, LogRow]:
        """The rows of `logs` stored in `index`, when they are worth spreading; `told(n)` hears
        of each `n` logs read. The caller reads each log left out itself: all of them when
        they are not worth it, and those a worker held when it died."""
        if self.processes < 2 or sum(log.size for log in logs) < self.min_bytes:
            return {}
        spread = _Spread(index, deque(_shares(logs, self.share_bytes)), told)
        workers = self.processes - 1
        try:
            pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
        except OSError as exc:  # no process can start here (a sandbox): every share is read here
            log.warning("cold listing: no worker process can start (%s); reading in this one", exc)
            spread.run(None, 0)
        else:
            try:
                spread.run(pool, 2 * workers)
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
        log.info(
            "cold listing: %d logs indexed, %d of them by worker processes",
            len(spread.rows),
            spread.by_workers,
        )
        return spread.rows


SPREAD = ColdReads()  # over this machine's cores


def _shares(logs: list[ColdRead], share_bytes: int) -> Iterable[list[ColdRead]]:
    share: list[ColdRead] = []
    size = 0
    for log in logs:
        share.append(log)
        size += log.size
        if size >= share_bytes:
            yield share
            share, size = [], 0
    if share:
        yield share


class _Spread:
    """A cold listing's shares on their way through the workers and this process."""

    def __init__(
        self, index: SessionIndex, shares: deque[list[ColdRead]], told: Callable[[int], None]
    ) -> None:
        self.index = index
        self.shares = shares
        self.told = told
        self.rows: dict[str, LogRow] = {}
        self.by_workers = 0
        self.running: set[Future[list[LogRow]]] = set()

    def run(self, pool: ProcessPoolExecutor | None, queued: int) -> None:
        """Keep `queued` shares with the workers and read the others here, until all are stored."""
        while self.shares or self.running:
            while pool is not None and self.shares and len(self.running) < queued:
                pool = self._hand(pool)
            if self.shares:
                self._took(store_share(self.index, self.shares.popleft()))
                finished = [f for f in self.running if f.done()]
            else:
                finished = list(wait(self.running, return_when=FIRST_COMPLETED).done)
            for future in finished:
                self.running.discard(future)
                try:
                    stored = future.result()
                except BrokenProcessPool:  # a worker died: the shares left are read here
                    pool = _lost(pool)
                else:
                    self.by_workers += len(stored)
                    self._took(stored)

    def _hand(self, pool: ProcessPoolExecutor) -> ProcessPoolExecutor | None:
        """Hand the next share to the workers; None once they cannot take it."""
        share = self.shares.popleft()
        try:
            self.running.add(pool.submit(_work, self.index.path, share))
        except (BrokenProcessPool, OSError):
            self.shares.appendleft(share)
            return _lost(pool)
        return pool

    def _took(self, stored: list[LogRow]) -> None:
        self.rows.update((row.path, row) for row in stored)
        self.told(len(stored))


def _lost(pool: ProcessPoolExecutor | None) -> ProcessPoolExecutor | None:
    """No pool any more: said once, when the first worker is found dead."""
    if pool is not None:
        log.warning("cold listing: a worker process died; its logs are read in this one")
    return None
