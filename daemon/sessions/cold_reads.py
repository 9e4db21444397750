"""Logs read whole for the index: one (`read_whole`), or a cold listing's many over processes.

A log read whole costs Python work on every line (decoding is in C, the checks and the fold
are not), so one process lists at one core's speed: a heavy user's first listing of gigabytes
would take minutes. `ColdReads` spreads the logs that have no index row yet over worker
processes, when they are enough to repay starting them (decision 0330). The shares wait in
one queue, which the workers and the listing's own process take from alike: nothing waits
with a worker still starting, and a listing the workers cannot help is read here, as fast
as alone. A worker reads a share with the very code a serial listing runs and stores the
rows in the index itself, in its own transactions, so only the small listing rows travel
back.

A worker that dies, or none that can start, costs time, never a row: the shares left are
read here, and the listing reads whatever a dead worker held, as it reads any log the index
does not know. The index is derived data, stored a transaction per batch of rows.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import signal
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
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
# A worker (a fresh interpreter importing the readers) takes about a fifth of a second to
# start, in which this process reads some 20 MB of logs: less is not worth a worker's start,
# though it would cost the listing no time (this process reads what no worker has taken).
MIN_SPREAD_BYTES = 16 << 20
# What a log costs to open, check and store besides its lines, in bytes of lines read in
# that time: 2 000 logs of 17 KB took as long as 60 MB of logs of 100 KB.
LOG_COST_BYTES = 16 << 10
# A share is at most this many bytes of logs: large enough that handing it over costs nothing
# next to reading it (the last shares are smaller: `_shares`).
SHARE_BYTES = 4 << 20
# How long the listing waits for a worker's answer before it looks whether any is still alive.
ANSWER_WAIT_SECONDS = 0.05
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


def _work(index_path: Path, tasks: Queue[list[ColdRead] | None], results: Queue[list[LogRow]]) -> None:
    """A worker process: store the shares it takes from `tasks` in the index at `index_path`,
    answering each with its rows, until it takes the end. It dies with a bug, which the
    listing's own reads then meet again, and raise."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the listing's to handle
    index = SessionIndex(index_path)
    while (share := tasks.get()) is not None:
        faultpoint("sessions.cold-reads.before-share")
        rows = store_share(index, share)
        faultpoint("sessions.cold-reads.after-share")  # stored, unanswered: the listing reads it
        results.put(rows)


def default_processes() -> int:
    """The cores this process may run on, up to `MAX_PROCESSES`."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cores, MAX_PROCESSES))


@dataclass(frozen=True)
class ColdReads:
    """How a listing reads the logs the index does not know: over `processes` processes (this
    one included) once they cost `min_bytes` (`LOG_COST_BYTES` a log on top of its size), else
    here alone; in shares costing at most `share_bytes`."""

    processes: int = default_processes()
    min_bytes: int = MIN_SPREAD_BYTES
    share_bytes: int = SHARE_BYTES

    def store(
        self, index: SessionIndex, logs: list[ColdRead], told: Callable[[int], None]
    ) -> dict[str, LogRow]:
        """The rows of `logs` stored in `index`, when they are worth spreading; `told(n)` hears
        of each `n` logs read. The caller reads each log left out itself: all of them when
        they are not worth it, and those a worker held when it died."""
        total = sum(_cost(log) for log in logs)
        if self.processes < 2 or total < self.min_bytes:
            return {}
        shares = _shares(logs, total, self.share_bytes, self.processes)
        spread = _Spread(index, told)
        spread.run(shares, self.processes - 1)
        log.info(
            "cold listing: %d logs indexed, %d of them by worker processes",
            len(spread.rows),
            spread.by_workers,
        )
        return spread.rows


SPREAD = ColdReads()  # over this machine's cores


def _shares(logs: list[ColdRead], total: int, most: int, processes: int) -> list[list[ColdRead]]:
    """`logs` in shares that shrink as the rest does (at most `most` bytes, at least a log): the
    last to be taken are small, so no process waits long for another to finish."""
    shares: list[list[ColdRead]] = []
    share: list[ColdRead] = []
    size, left = 0, total
    for cold in logs:
        share.append(cold)
        size += _cost(cold)
        if size >= min(most, left // (2 * processes)):
            shares.append(share)
            left -= size
            share, size = [], 0
    if share:
        shares.append(share)
    return shares


def _cost(log: ColdRead) -> int:
    return log.size + LOG_COST_BYTES


class _Spread:
    """A cold listing's shares, taken from one queue by the workers and by this process alike:
    none waits with a worker that has not started, and this process never waits for one while
    a share is left."""

    def __init__(self, index: SessionIndex, told: Callable[[int], None]) -> None:
        self.index = index
        self.told = told
        self.rows: dict[str, LogRow] = {}
        self.by_workers = 0
        self.done = 0  # shares stored, here or by a worker

    def run(self, shares: list[list[ColdRead]], workers: int) -> None:
        context = multiprocessing.get_context("spawn")  # never `fork`: the daemon runs threads
        tasks: Queue[list[ColdRead] | None] = context.Queue()
        results: Queue[list[LogRow]] = context.Queue()
        for share in shares:
            tasks.put(share)
        for _ in range(workers + 1):  # an end for each worker, and one for this process
            tasks.put(None)
        started: list[BaseProcess] = []
        try:
            for _ in range(workers):
                process = context.Process(target=_work, args=(self.index.path, tasks, results), daemon=True)
                process.start()
                started.append(process)
        except OSError as exc:  # no process can start here (a sandbox): the rest is read here
            log.warning("cold listing: no worker process can start (%s); reading in this one", exc)
        try:
            self._share_out(tasks, results)
            self._wait(len(shares), results, started)
        finally:
            for worker in started:
                worker.terminate()  # only one still starting, or dead, is left
                worker.join()
            for channel in (tasks, results):
                channel.close()
                channel.cancel_join_thread()

    def _share_out(self, tasks: Queue[list[ColdRead] | None], results: Queue[list[LogRow]]) -> None:
        """Read shares here until none is left, taking in the workers' answers between them."""
        while (share := tasks.get()) is not None:
            self._took(store_share(self.index, share))
            self._answers(results)

    def _wait(self, shares: int, results: Queue[list[LogRow]], started: list[BaseProcess]) -> None:
        """Take the workers' answers until every share is stored, or no worker is left alive."""
        while self.done < shares:
            if not self._answers(results, ANSWER_WAIT_SECONDS) and not any(w.is_alive() for w in started):
                self._answers(results)  # what a worker sent just before it ended
                break
        if self.done < shares:
            log.warning("cold listing: a worker process died; its logs are read in this one")

    def _answers(self, results: Queue[list[LogRow]], wait: float = 0) -> bool:
        """Take the answers that have come, waiting up to `wait` seconds for the first: any?"""
        took = False
        try:
            rows = results.get(timeout=wait) if wait else results.get_nowait()
            while True:
                self.by_workers += len(rows)
                self._took(rows)
                took = True
                rows = results.get_nowait()
        except queue.Empty:
            return took

    def _took(self, stored: list[LogRow]) -> None:
        self.done += 1
        self.rows.update((row.path, row) for row in stored)
        self.told(len(stored))
